"""The launcher of `stagec run`: starts every rank under mpiexec, follows their steps,
and turns any rank's failure into one message and a stop of every rank.

`launch(module_text, bindings, job, ranks)` writes the scheduled module and the job
file into a run directory, starts

    mpiexec -n RANKS [-f HOSTFILE] python -m stagec.runtime.exec.worker DIR/job.json

in a session of its own, and calls `on_step(StepReport)` for each line rank 0
reports. It returns the reports, or raises `RunFailed` with one line:

    rank 1 of 4 was killed by signal 9 during step 3: 'stg.all_gather' in @train_step

Failures (issue 18 item 5): a rank that raises prints its own line and aborts the
world communicator (csrc.abort_on_failure); a rank that is killed outright cannot, so
mpiexec reports it by pid, and the launcher maps the pid to the rank and reads what
the rank was doing from the status file it kept (worker.py). The launcher also
watches the ranks itself: once one has died, every process of the job is killed if
mpiexec has not ended it within `grace` seconds; and when the launcher returns, for
any reason (Ctrl-C included), nothing of the job is left running.

The ranks' own output (tracebacks, MPICH's report) is kept in DIR/ranks.log, which a
failure's message names; the directory is removed after a successful run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from stagec.runtime.exec.status import PREFIX, read_reports, read_status
from stagec.runtime.workers import process_alive

GRACE_SECONDS = 2.0


@dataclass(frozen=True)
class StepReport:
    step: int
    loss: float
    seconds: float
    executed: Mapping[str, int] = field(default_factory=dict)  # rank 0's ops of the step (execution.py)


def _step_report(fields: Mapping) -> StepReport:
    return StepReport(int(fields["step"]), float(fields["loss"]), float(fields["seconds"]),
                      {k: int(v) for k, v in fields.get("executed", {}).items()})


class RunFailed(Exception):
    """The job stopped before its last step: one line naming the rank and what it was
    doing; `log` is the ranks' output."""

    def __init__(self, message: str, log: str | None = None):
        super().__init__(message)
        self.log = log


def mpiexec() -> str:
    """The mpich wheel's launcher (installed beside the interpreter), else the PATH's."""
    beside = Path(sys.executable).with_name("mpiexec")
    found = str(beside) if beside.exists() else shutil.which("mpiexec")
    if found is None:
        raise RunFailed("mpiexec not found: install the mpich wheel (a dependency of stagec)")
    return found


def _environment(ranks: int) -> dict[str, str]:
    env = dict(os.environ)
    if ranks > (os.cpu_count() or 1):
        # more ranks than cores: MPICH's shared-memory collectives spin (ARCHITECTURE.md)
        env.setdefault("MPIR_CVAR_DEVICE_COLLECTIVES", "none")
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


class _Job:
    def __init__(self, rundir: str, ranks: int, process: subprocess.Popen):
        self.rundir, self.ranks, self.process = rundir, ranks, process
        self.log = open(os.path.join(rundir, "ranks.log"), "a", buffering=1)
        self.reports: list[dict] = []
        self.first_dead: int | None = None  # the pid of the rank seen dead first
        self.lock = threading.Condition()
        self.readers = [threading.Thread(target=self._read, args=(process.stdout,), daemon=True),
                        threading.Thread(target=self._read, args=(process.stderr,), daemon=True)]
        for reader in self.readers:
            reader.start()

    def _read(self, stream) -> None:
        for line in stream:
            if line.startswith(PREFIX):
                try:
                    fields = json.loads(line[len(PREFIX):])
                except json.JSONDecodeError:
                    fields = None
                if fields is not None:
                    with self.lock:
                        self.reports.append(fields)
                        self.lock.notify_all()
                    continue
            self.log.write(line)

    def pids(self) -> dict[int, int]:
        """{pid: rank} of the ranks that have started."""
        found = {}
        for rank in range(self.ranks):
            pid = read_status(self.rundir, rank).pid
            if pid is not None:
                found[pid] = rank
        return found

    def kill_everything(self) -> None:
        """Every process of the job: mpiexec's session, and each rank by its pid."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for pid in self.pids():
            if process_alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def launch(module_text: str, bindings: Mapping[str, int], job: Mapping, ranks: int, *,
           hostfile: str | None = None, on_step: Callable[[StepReport], None] | None = None,
           grace: float = GRACE_SECONDS, keep: bool = False) -> list[StepReport]:
    """Runs the job on `ranks` ranks (module doc); returns rank 0's step reports."""
    rundir = tempfile.mkdtemp(prefix="stagec-run-")
    ir = os.path.join(rundir, "program.mlir")
    with open(ir, "w") as f:
        f.write(module_text)
    spec = {**job, "ir": ir, "bindings": dict(bindings), "rundir": rundir}
    job_path = os.path.join(rundir, "job.json")
    with open(job_path, "w") as f:
        json.dump(spec, f)
    # On one machine the launcher watches the ranks itself, so mpiexec must not stop
    # the others the moment one dies: the first death then stays the only one, and
    # names the rank that failed (mpiexec's own report names whichever pid it sees first).
    watch = hostfile is None
    command = [mpiexec(), "-n", str(ranks)] + (["-f", hostfile] if hostfile else ["-disable-auto-cleanup"]) + \
        [sys.executable, "-m", "stagec.runtime.exec.worker", job_path]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=_environment(ranks), start_new_session=True)
    state = _Job(rundir, ranks, process)
    steps: list[StepReport] = []
    failed = False
    try:
        died_at: float | None = None
        seen = 0
        while True:
            with state.lock:
                state.lock.wait(timeout=0.02)
                new, seen = state.reports[seen:], len(state.reports)
            for fields in new:
                if "step" in fields:
                    report = _step_report(fields)
                    steps.append(report)
                    if on_step is not None:
                        on_step(report)
            if process.poll() is not None:
                break
            if watch and state.first_dead is None:
                pids = state.pids()
                dead = [pid for pid in pids if not process_alive(pid)]
                if dead:
                    died_at = time.monotonic()
                    state.first_dead = _first(dead, pids, state.rundir)
            if died_at is not None and time.monotonic() - died_at > grace:
                state.kill_everything()  # the others wait for the dead rank in a collective: stop them
        for reader in state.readers:
            reader.join(timeout=5)
        with state.lock:
            relayed = state.reports[:]
        lost = lost_reports(relayed, rundir)
        for fields in relayed[seen:] + lost:
            if "step" in fields:
                report = _step_report(fields)
                steps.append(report)
                if on_step is not None:
                    on_step(report)
        finished = any(f.get("done") for f in relayed + lost)
        if process.returncode != 0 or not finished:
            failed = True
            raise RunFailed(_diagnose(state, process.returncode), os.path.join(rundir, "ranks.log"))
        return steps
    except BaseException:
        failed = True
        raise
    finally:
        state.kill_everything()
        state.log.close()
        if not failed and not keep:
            shutil.rmtree(rundir, ignore_errors=True)


def lost_reports(relayed: list[dict], rundir: str) -> list[dict]:
    """Rank 0's reports that mpiexec's relay lost when a rank's abort cut it short: the
    relayed ones are a prefix of those in rank 0's file (`status.report`), so the lost
    ones are the rest of the file."""
    return read_reports(rundir)[len(relayed):]


_RAISED = re.compile(r"^stagec: rank (\d+) of (\d+) failed during (.*?); stopping every rank$", re.M)
_BAD = re.compile(r"PID (\d+) RUNNING AT .*?\n\s*=\s*(?:EXIT CODE|KILLED BY SIGNAL): (\d+)", re.S)


# What a rank waits in when a peer's death takes it down too (MPICH ends the ranks
# blocked on a dead peer within milliseconds, often before the launcher looks).
_WAITING = re.compile(r"'stg\.(wait|group|all_gather|all_reduce|all_reduce_stages|all_to_all|reduce_scatter|"
                      r"broadcast|reshard|send|recv)'|summing the loss|completing sends|saving the checkpoint")


def _first(dead: list[int], pids: dict[int, int], rundir: str) -> int:
    """Of the ranks found dead at once, the one that failed: one that recorded an
    exception; then a rank that died outside a communication wait before one that died
    in it (likely of the other's death); then the one whose status stopped first (a
    rank still computing writes at every op until it is stopped); else the lowest."""
    def order(pid: int) -> tuple:
        status = read_status(rundir, pids[pid])
        return status.error is None, bool(_WAITING.search(status.activity)), status.stamp, pids[pid]

    return min(dead, key=order)


def _how(log: str, pid: int) -> str:
    """', killed by signal 9' or ', exit code 3' where mpiexec's report says."""
    for match in _BAD.finditer(log):
        if int(match.group(1)) == pid:
            code = int(match.group(2))
            return f", killed by signal {code}" if code in (9, 15) else f", exit code {code}"
    return ""


def _diagnose(state: _Job, code: int) -> str:
    """One line: the rank that failed first and what it was doing."""
    with open(os.path.join(state.rundir, "ranks.log"), errors="replace") as f:
        log = f.read()
    where = f" (every rank stopped; the ranks' output: {os.path.join(state.rundir, 'ranks.log')})"
    if match := _RAISED.search(log):
        rank, size, what = match.groups()
        return f"rank {rank} of {size} failed during {what}{where}"
    pids = state.pids()
    for pid, rank in sorted(pids.items(), key=lambda item: read_status(state.rundir, item[1]).stamp):
        status = read_status(state.rundir, rank)
        if status.error is not None:  # its line to stderr was lost with the abort
            return f"rank {rank} of {state.ranks} failed during {status.activity}: {status.error}{where}"
    if state.first_dead is not None:
        pid = state.first_dead
        activity = read_status(state.rundir, pids[pid]).activity
        return f"rank {pids[pid]} of {state.ranks} (pid {pid}) died during {activity or 'its start'}{_how(log, pid)}{where}"
    dead = [pid for pid in pids if not process_alive(pid)]
    for match in _BAD.finditer(log):
        pid = int(match.group(1))
        if pid in pids:
            activity = read_status(state.rundir, pids[pid]).activity
            return (f"rank {pids[pid]} of {state.ranks} (pid {pid}) died (exit code {match.group(2)}) "
                    f"during {activity or 'its start'}{where}")
    for pid in dead:
        # mpiexec reported no pid (or was stopped by the watchdog): the first rank whose process is gone
        activity = read_status(state.rundir, pids[pid]).activity
        if not activity.endswith("done"):
            return f"rank {pids[pid]} of {state.ranks} (pid {pid}) died during {activity or 'its start'}{where}"
    if not pids:
        return f"mpiexec exited with status {code} before any rank started{where}"
    return f"mpiexec exited with status {code}{where}"
