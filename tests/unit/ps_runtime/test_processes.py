"""Di-PS on real processes over loopback: a master (gRPC), two slaves (ZeroMQ) and two
clusters training a tiny Llama for a few rounds (issue 19, items 2-3 and 5)."""

from .checks import check_run
from .util import tiny_deployment

TIMEOUT = 120


def test_dips_run_equals_a_single_process_recomputation(tmp_path, supervisors):
    sup = supervisors(tiny_deployment(tmp_path, "dips", rounds=3))
    assert sup.wait(TIMEOUT)
    state = check_run(sup)
    # 2 clusters x 3 rounds x (4 steps x 8 x 32 tokens) = 6144 tokens to consume; a
    # round adds 1024 or 2048, so the run ends between 6144 and 6144 + 2048 - 1024.
    assert 6144 <= state["tokens"] <= 7168
    assert all(e["committed"] for e in state["log"])


def test_synchronous_diloco_rounds_hold_every_cluster(tmp_path, supervisors):
    sup = supervisors(tiny_deployment(tmp_path, "sync", rounds=2))
    assert sup.wait(TIMEOUT)
    state = check_run(sup)
    assert [sorted(e["clusters"]) for e in state["log"]] == [[0, 1], [0, 1]]
    assert all(e["scale"] == 1.0 and e["excluded"] == [] for e in state["log"])


def test_asynchronous_diloco_updates_once_per_push(tmp_path, supervisors):
    sup = supervisors(tiny_deployment(tmp_path, "async", rounds=2))
    assert sup.wait(TIMEOUT)
    state = check_run(sup)
    assert all(len(e["pushes"]) == 1 for e in state["log"])
    # 4096 tokens, 1024 per push: exactly 4 versions
    assert state["version"] == 4
