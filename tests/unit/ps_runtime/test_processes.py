"""Di-PS on real processes over loopback: a master (gRPC), two slaves (ZeroMQ) and two
clusters training a tiny Llama for a few rounds (issue 19, items 2-3 and 5)."""

from dataclasses import replace

import pytest

from stagec.runtime.ps.slave import retained_snapshots

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
    dep = tiny_deployment(tmp_path, "async", rounds=2)
    # the plan's `ps.snapshot every 3 keep 1`: of versions 1-4 the slaves keep 3 and 4
    sup = supervisors(replace(dep, plan=replace(dep.plan, snapshot_every=3, snapshots_kept=1)))
    assert sup.wait(TIMEOUT)
    state = check_run(sup)
    assert all(len(e["pushes"]) == 1 for e in state["log"])
    # 4096 tokens, 1024 per push: exactly 4 versions
    assert state["version"] == 4
    for slave in ("slave0", "slave1"):
        assert sorted(p.name for p in (tmp_path / slave).glob("v*.npz")) == ["v000003.npz", "v000004.npz"]


@pytest.mark.parametrize("versions, every, keep, override, kept", [
    ([1, 2, 3, 4, 5], 1, 2, None, {4, 5}),
    ([1, 2, 3, 4, 5], 2, 1, None, {4, 5}),
    ([1, 2, 3, 4, 5], 2, 5, None, {2, 4, 5}),
    ([1, 2, 3, 4, 5, 6], 3, 1, None, {6}),  # the newest is also the periodic one
    ([1, 2, 3, 4, 5], 0, 2, None, {5}),  # every 0: none but the one a restart needs
    ([1, 2, 3, 4, 5], 1, 2, 4, {2, 3, 4, 5}),
    ([], 1, 2, None, set()),
])
def test_a_slave_keeps_the_plans_snapshots_and_the_newest(versions, every, keep, override, kept):
    assert retained_snapshots(versions, every, keep, override) == kept
