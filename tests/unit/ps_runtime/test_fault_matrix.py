"""The fault matrix (issue 19, "Done when"): >= 100 trials, each a real run with one
fault — SIGKILL, or SIGSTOP and later SIGCONT, of a cluster, a slave or the master — at a
random point: after a random delay, mid-push (a slave receiving) or mid-round (the
master between the window's close and the commit). Every trial must finish with every
committed version applied exactly once (`checks.check_run`). Scale: run with
`pytest -m scale tests/unit/ps_runtime/test_fault_matrix.py` (about 15 s a trial here)."""

import random
import signal
import time

import pytest

from .checks import check_run
from .test_faults import wait_for
from .util import tiny_deployment

TRIALS = 100
ROLES = [("cluster", 0), ("cluster", 1), ("slave", 0), ("slave", 1), ("master", 0)]
POINTS = ["delay", "mid-push", "mid-round"]


def trial(seed: int) -> tuple:
    rng = random.Random(seed)
    return rng.choice(ROLES), rng.choice(["SIGKILL", "SIGSTOP"]), rng.choice(POINTS), rng.uniform(0.1, 1.5)


@pytest.mark.scale
@pytest.mark.parametrize("seed", range(TRIALS))
def test_fault_matrix(tmp_path, supervisors, seed):
    (role, index), sig, point, seconds = trial(seed)
    sup = supervisors(tiny_deployment(tmp_path, rounds=5))
    wait_for(sup, lambda s: s["version"] >= 1)
    if point == "delay":
        time.sleep(seconds)
    elif point == "mid-push":
        wait_for(sup, lambda s: bool(s["receiving"]) or s["finished"])
    else:
        wait_for(sup, lambda s: s["round"] is not None or s["finished"])
    if sig == "SIGKILL":
        sup.signal(role, index, signal.SIGKILL)
    else:
        sup.signal(role, index, signal.SIGSTOP)
        time.sleep(seconds)
        sup.signal(role, index, signal.SIGCONT)
    assert sup.wait(120), f"trial {seed}: {role}{index} {sig} at {point} did not finish"
    check_run(sup)
