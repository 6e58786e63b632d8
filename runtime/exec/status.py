"""What a rank of `stagec run` tells the launcher: its step reports on stdout, and its
pid and current activity in a status file the launcher reads when the rank dies
without a word (killed outright)."""

from __future__ import annotations

import json
import mmap
import os
import sys

STATUS_BYTES = 512
PREFIX = "STAGEC "


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
        data = (self._head + activity.encode(errors="replace"))[: STATUS_BYTES - 1]
        self._map[: len(data) + 1] = data + b"\0"


def read_status(rundir: str, rank: int) -> tuple[int | None, str]:
    """(pid, activity) a rank last wrote; (None, '') if it never started."""
    try:
        with open(os.path.join(rundir, f"rank{rank}.status"), "rb") as f:
            text = f.read().split(b"\0", 1)[0].decode(errors="replace")
    except OSError:
        return None, ""
    pid, _, activity = text.partition("\n")
    return (int(pid) if pid.isdigit() else None), activity


def report(**fields) -> None:
    sys.stdout.write(PREFIX + json.dumps(fields) + "\n")
    sys.stdout.flush()
