"""What a rank of `stagec run` tells the launcher: its step reports on stdout, and its
pid, current activity and when it last wrote in a status file the launcher reads when
the rank dies without a word (killed outright). A rank that fails with an exception
records it there too before it aborts, so the failure is named even when mpiexec's
relay of its stderr is cut short by the abort.

The same abort can cut the relay of the other ranks' stdout: rank 0's report of a step
it completed may never reach the launcher when another rank fails just after. Where
the run directory is on rank 0's machine, rank 0 also appends each report to
`<rundir>/reports.jsonl`, which the launcher reads once the job has ended
(`read_reports`).

The status file: 'pid\nstamp\nactivity', stamp the system's monotonic clock (one
clock for every process of the machine: the launcher orders the deaths of ranks
found dead together by it); a failed rank's activity is 'FAILED <error>\n<activity>'."""

from __future__ import annotations

import json
import mmap
import os
import sys
import time
from typing import NamedTuple

STATUS_BYTES = 1024
PREFIX = "STAGEC "
FAILED = "FAILED "


class Status:
    """`<rundir>/rank<R>.status`: 'pid\\nactivity', rewritten in place (a memory map)."""

    def __init__(self, rundir: str, rank: int):
        path = os.path.join(rundir, f"rank{rank}.status")
        with open(path, "wb") as f:
            f.write(b"\0" * STATUS_BYTES)
        self._file = open(path, "r+b")
        self._map = mmap.mmap(self._file.fileno(), STATUS_BYTES)
        self._head = f"{os.getpid()}\n".encode()

    def write(self, activity: str) -> None:
        self.activity = activity
        data = (self._head + f"{time.monotonic():.6f}\n{activity}".encode(errors="replace"))[: STATUS_BYTES - 1]
        self._map[: len(data) + 1] = data + b"\0"

    def fail(self, error: str) -> None:
        """Record the exception the rank is about to abort with (module doc)."""
        self.write(f"{FAILED}{error}\n{getattr(self, 'activity', '')}")


class RankStatus(NamedTuple):
    pid: int | None
    stamp: float  # when the rank last wrote (time.monotonic); inf if never
    activity: str
    error: str | None  # the exception of a rank that failed


def read_status(rundir: str, rank: int) -> RankStatus:
    """What a rank last wrote; (None, inf, '', None) if it never started."""
    try:
        with open(os.path.join(rundir, f"rank{rank}.status"), "rb") as f:
            text = f.read().split(b"\0", 1)[0].decode(errors="replace")
    except OSError:
        return RankStatus(None, float("inf"), "", None)
    pid, _, rest = text.partition("\n")
    stamp, _, activity = rest.partition("\n")
    error = None
    if activity.startswith(FAILED):
        error, _, activity = activity[len(FAILED):].partition("\n")
    try:
        when = float(stamp)
    except ValueError:
        when = float("inf")
    return RankStatus(int(pid) if pid.isdigit() else None, when, activity, error)


REPORTS = "reports.jsonl"


def report(rundir: str | None = None, **fields) -> None:
    line = json.dumps(fields) + "\n"
    if rundir is not None and os.path.isdir(rundir):  # not there when rank 0 runs on another host
        with open(os.path.join(rundir, REPORTS), "a") as f:
            f.write(line)
    sys.stdout.write(PREFIX + line)
    sys.stdout.flush()


def read_reports(rundir: str) -> list[dict]:
    """The reports rank 0 appended to its file (none where it could not), in order; a
    line cut short by a kill is left out."""
    try:
        with open(os.path.join(rundir, REPORTS)) as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    reports = []
    for line in lines:
        try:
            reports.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return reports
