"""The fast subset of the fault matrix (issue 19, item 3; di-ps.md §4 "Two-level
resilience"): real signals to real processes. Every run must finish with each
committed version applied exactly once (`checks.check_run`). The >= 100-trial matrix is
test_fault_matrix.py (scale)."""

import re
import signal
import time

from stagec.runtime.ps.deployment import Faults

from .checks import check_run
from .util import tiny_deployment

TIMEOUT = 120
# a fault is injected after version 1 is seen; with enough rounds left the run cannot
# finish before the signal lands (the status file is written at most every 0.1 s and a
# round takes 0.3 s here: CI once saw all of 4 rounds end in that gap)
ROUNDS = 20


def wait_for(sup, predicate, timeout=60.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        sup.poll()
        status = sup.status()
        if status and predicate(status):
            return status
        time.sleep(0.01)
    raise AssertionError(f"condition not reached; status {sup.status()}")


def committed_before_join(master_log: str, cluster: int, nth: int) -> int:
    """The version the master had committed when `cluster` joined for the `nth` time."""
    version, joins = 0, 0
    for line in master_log.splitlines():
        if m := re.search(r"version (\d+) committed", line):
            version = int(m.group(1))
        elif line.endswith(f"cluster {cluster} joined"):
            joins += 1
            if joins == nth:
                return version
    raise AssertionError(f"cluster {cluster} joined fewer than {nth} times")


def log_text(sup, role):
    return sup.dep.path("logs", f"{role}.log").read_text()


def test_a_killed_cluster_rejoins_with_the_latest_parameters_and_a_silent_one_is_dropped(tmp_path, supervisors):
    sup = supervisors(tiny_deployment(tmp_path, rounds=ROUNDS))
    wait_for(sup, lambda s: s["version"] >= 1 and s["clusters"] == [0, 1])
    # hold cluster 0 (it misses its beats and is dropped) while cluster 1 is killed,
    # restarted by the supervisor and rejoins. A round whose pushes had arrived before the
    # faults may still commit while no cluster is live (the window closes at once when no
    # one can join it); nothing else can, so the version cluster 1 pulls on rejoining must
    # be the last one committed before it joined
    sup.signal("cluster", 0, signal.SIGSTOP)
    sup.signal("cluster", 1, signal.SIGKILL)
    status = wait_for(sup, lambda s: s["clusters"] == [])
    rejoined = wait_for(sup, lambda s: 1 in s["clusters"])
    assert rejoined["version"] >= status["version"] >= 1
    sup.signal("cluster", 0, signal.SIGCONT)
    assert sup.wait(TIMEOUT)
    check_run(sup)
    assert sup.restarts[("cluster", 1)] == 1
    # the log of each start of cluster 1: each start's first pull is at least the latest
    # version when it joined (cluster 0 may commit another before the first start's pull;
    # on a loaded machine the kill can come before that pull: none), and the restarted
    # one's is exactly that (nobody else can push)
    starts = re.split(r"^.*cluster 1 up \(pid \d+\)$", log_text(sup, "cluster1"), flags=re.M)[1:]
    assert len(starts) == 2
    pulls = [[int(line.rsplit(" ", 1)[1]) for line in start.splitlines() if "pulled version" in line]
             for start in starts]
    text = log_text(sup, "master")
    assert all(v >= committed_before_join(text, 1, 1) for v in pulls[0][:1])
    assert pulls[1][0] == committed_before_join(text, 1, 2) >= status["version"]
    assert "cluster 0 missed 3 heartbeats: dropped" in text and "cluster 1 missed 3 heartbeats: dropped" in text
    assert text.count("cluster 0 joined") == 2 and text.count("cluster 1 joined") == 2


def test_a_slave_killed_mid_push_restarts_from_its_snapshot(tmp_path, supervisors):
    # slave 1 SIGKILLs itself with a push received and unacknowledged, after version 1 (a
    # planted fault: the test's own SIGSTOP-then-SIGKILL on seeing a push in flight came,
    # on a loaded machine, after the run had ended, or after the master had restarted
    # the stopped slave for its missed heartbeats)
    sup = supervisors(tiny_deployment(tmp_path, rounds=ROUNDS, faults=Faults(kill_slave_mid_push=1)))
    assert sup.wait(TIMEOUT)
    assert "injected fault: slave 1 killed mid-push at version" in log_text(sup, "slave1")
    check_run(sup)
    assert sup.restarts[("slave", 1)] >= 1
    assert "recovered version" in log_text(sup, "slave1")  # its snapshot of version 1 or later


def test_a_stopped_master_is_waited_for_without_dropping_anyone(tmp_path, supervisors):
    sup = supervisors(tiny_deployment(tmp_path, rounds=ROUNDS))
    wait_for(sup, lambda s: s["version"] >= 1)
    sup.signal("master", 0, signal.SIGSTOP)
    time.sleep(1.5)  # 7 heartbeat intervals
    sup.signal("master", 0, signal.SIGCONT)
    assert sup.wait(TIMEOUT)
    state = check_run(sup)
    text = log_text(sup, "master")
    assert state["epoch"] == 0 and "master was stalled" in text and "missed" not in text


def test_a_killed_master_restarts_and_the_run_goes_on(tmp_path, supervisors):
    sup = supervisors(tiny_deployment(tmp_path, rounds=ROUNDS))
    wait_for(sup, lambda s: s["version"] >= 1)
    sup.signal("master", 0, signal.SIGKILL)
    assert sup.wait(TIMEOUT)
    state = check_run(sup)
    assert state["epoch"] == 1 and sup.restarts[("master", 0)] == 1


def test_a_failed_outer_step_is_skipped_by_every_participant(tmp_path, supervisors):
    # slave 0 votes no the first time it prepares version 2: the round aborts, version 1
    # stays, and the replay (which skips aborted rounds) still equals the slaves' state,
    # so not one parameter moved in the aborted round.
    sup = supervisors(tiny_deployment(tmp_path, rounds=3, faults=Faults(fail_prepare_versions=(2,))))
    assert sup.wait(TIMEOUT)
    state = check_run(sup)
    aborted = [e for e in state["log"] if e.get("aborted")]
    assert len(aborted) == 1 and aborted[0]["version"] == 1
    assert "could not prepare version 2" in aborted[0]["why"]
    skipped = sum(log_text(sup, f"cluster{c}").count("skips this outer step") for c in range(2))
    assert skipped == len(aborted[0]["pushes"])
