"""The MPI communicator on 4 real ranks (mpiexec from the mpich wheel), and the abort.

Each rank checks every result against numpy itself (mpi_ranks.py); here we check that
all 4 ranks got through, and that a rank that fails stops the job: every rank exits,
mpiexec exits non-zero within seconds, and one message names the failing rank.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

RANKS = Path(__file__).with_name("mpi_ranks.py")


def mpiexec() -> str:
    # The wheel's launcher sits beside the venv's python.
    beside = Path(sys.executable).with_name("mpiexec")
    found = str(beside) if beside.exists() else shutil.which("mpiexec")
    if found is None:
        pytest.fail("mpiexec not found: the mpich wheel is a dependency of stagec")
    return found


def launch(*args: str, ranks: int = 4, timeout: float = 60) -> tuple[subprocess.CompletedProcess, float]:
    env = dict(os.environ)
    # More ranks than cores: MPICH's shared-memory collectives spin and take tens of
    # seconds (ARCHITECTURE.md, facts measured on this machine kind).
    env["MPIR_CVAR_DEVICE_COLLECTIVES"] = "none"
    start = time.monotonic()
    done = subprocess.run(
        [mpiexec(), "-n", str(ranks), sys.executable, str(RANKS), *args],
        capture_output=True, text=True, timeout=timeout, env=env,
    )
    return done, time.monotonic() - start


def test_every_collective_matches_numpy_on_4_ranks():
    done, _ = launch("collectives")
    assert done.returncode == 0, done.stdout + done.stderr
    # the ranks' lines reach mpiexec's stdout through separate pipes: two may interleave
    assert sorted(re.findall(r"rank \d+ ok", done.stdout)) == [f"rank {r} ok" for r in range(4)], done.stdout


def test_a_failing_rank_stops_every_rank_with_its_name():
    done, seconds = launch("raise", "2", timeout=60)
    assert done.returncode != 0
    # Ranks 0, 1 and 3 were blocked in an all-gather that rank 2 never joined: only the
    # abort ends them, and no rank reached its "ok" line.
    assert "ok" not in done.stdout
    assert seconds < 20, seconds
    lines = [line for line in done.stderr.splitlines() if line.startswith("stagec: rank")]
    assert lines == [
        "stagec: rank 2 of 4 failed during the test's forward step: "
        "ValueError: planted failure; stopping every rank"
    ], done.stderr


def test_a_killed_rank_stops_every_rank_and_leaves_no_process():
    # The token marks this job's processes, to look for orphans after mpiexec returns.
    token = f"stagec-kill-test-{os.getpid()}-{time.monotonic_ns()}"
    done, seconds = launch("kill", "1", token, timeout=60)
    assert done.returncode != 0
    assert "ok" not in done.stdout
    assert seconds < 20, seconds
    # MPICH's launcher reports the death (by PID, not rank: naming the rank is the
    # launcher's job in `stagec run`).
    assert "BAD TERMINATION" in done.stdout + done.stderr
    left = []
    for proc in Path("/proc").iterdir():
        try:
            if token in (proc / "cmdline").read_text(errors="replace"):
                left.append(proc.name)
        except OSError:
            continue
    assert left == [], f"ranks still running: {left}"
