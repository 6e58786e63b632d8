"""Di-PS placement (runtime/ps/placement.py): the PS cluster by argmax_i B_i^T p (di-ps.md
§3.1), layers over slaves by LPT, and the Fig. 5 push schedule with its step bound,
checked by hand on a 3-cluster 4-slave example and on the 9-cluster 16-slave production
plan (examples/ps/production9.yaml), and as properties on random configurations."""

from __future__ import annotations

import math
import os

from hypothesis import given, settings
from hypothesis import strategies as st

from stagec.runtime.ps.config import load_config, plan_from_config
from stagec.runtime.ps.placement import (
    assign_layers,
    build_plan,
    choose_ps_cluster,
    ps_cluster_scores,
    push_schedule,
    push_steps_bound,
    slave_loads,
)
from stagec.runtime.ps.plan import Cluster, Layer, Transfer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))

# Three clusters X, Y, Z; Z has throughput 100 with an extra delay of 100% of a step, so
# its effective throughput is 100 / (1 + 1) = 50: p = [100, 200, 50].
CLUSTERS = (Cluster("X", 100.0), Cluster("Y", 200.0), Cluster("Z", 100.0, extra_delay=1.0))
# Not symmetric, so that the i-th column (the paper's B_i) and the i-th row disagree.
B = ((10.0, 40.0, 10.0),
     (10.0, 20.0, 10.0),
     (10.0, 10.0, 20.0))
LAYERS = tuple(Layer(f"l{i}", n) for i, n in enumerate((7, 5, 4, 3, 3, 2)))


def test_ps_cluster_is_argmax_of_columns_times_p():
    # B_i^T p, column i of B times p = [100, 200, 50]:
    #   i = 0: 10*100 + 10*200 + 10*50 = 1000 + 2000 +  500 = 3500
    #   i = 1: 40*100 + 20*200 + 10*50 = 4000 + 4000 +  500 = 8500
    #   i = 2: 10*100 + 10*200 + 20*50 = 1000 + 2000 + 1000 = 4000
    # argmax: cluster 1 (Y). Rows would pick X (row 0: 1000 + 8000 + 500 = 9500).
    p = [100.0, 200.0, 50.0]
    assert ps_cluster_scores(B, p) == [3500.0, 8500.0, 4000.0]
    assert choose_ps_cluster(B, p) == 1
    plan = build_plan(CLUSTERS, B, 4, LAYERS, inner_steps=1, grace_window_s=0.0)
    assert plan.ps_cluster == 1


def test_ps_cluster_ties_go_to_the_lowest_index():
    assert choose_ps_cluster([[1.0, 1.0], [1.0, 1.0]], [5.0, 5.0]) == 0


def test_lpt_balances_bytes():
    # Largest first, each to the least-loaded slave (lowest index among equals):
    #   l0 (7) -> s0  loads 7 0 0 0
    #   l1 (5) -> s1  loads 7 5 0 0
    #   l2 (4) -> s2  loads 7 5 4 0
    #   l3 (3) -> s3  loads 7 5 4 3
    #   l4 (3) -> s3  loads 7 5 4 6   (s3 has 3, the least)
    #   l5 (2) -> s2  loads 7 5 6 6   (s2 has 4, the least)
    owners = assign_layers([7, 5, 4, 3, 3, 2], 4)
    assert owners == (0, 1, 2, 3, 3, 2)
    assert slave_loads([7, 5, 4, 3, 3, 2], owners, 4) == [7, 5, 6, 6]


def test_lpt_keeps_graham_bound_where_greedy_in_order_does_not():
    # [3, 3, 2, 2, 2] on 2 slaves: the best split is 6 | 6. In-order greedy gives
    # 3+2+2 | 3+2 = 7 | 5; LPT also reaches 3+2+2 = 7 | 5 here: Graham's bound
    # (4/3 - 1/6) * 6 = 7 allows it, and 7 is what LPT gives.
    owners = assign_layers([3, 3, 2, 2, 2], 2)
    assert sorted(slave_loads([3, 3, 2, 2, 2], owners, 2)) == [5, 7]
    # A case LPT gets exactly right and in-order greedy does not: [1, 1, 2] on 2 slaves,
    # in order 1 | 1 then 2 -> 3 | 1; LPT 2 | 1+1 -> 2 | 2.
    assert sorted(slave_loads([1, 1, 2], assign_layers([1, 1, 2], 2), 2)) == [2, 2]


def test_push_schedule_by_hand():
    # Owners (0, 1, 2, 3, 3, 2): m_s = 1, 1, 2, 2, so m = 2 and
    # T = max(L = 6, k * m = 3 * 2) = 6. Cyclic order by slave: l0 l1 l2 l5 l3 l4.
    # Cluster c at step t sends slot (t - 2c) mod 6.
    owners = (0, 1, 2, 3, 3, 2)
    assert push_steps_bound(3, owners) == 6
    expected = [
        [(0, 0, 0), (1, 3, 3), (2, 2, 2)],
        [(0, 1, 1), (1, 4, 3), (2, 5, 2)],
        [(0, 2, 2), (1, 0, 0), (2, 3, 3)],
        [(0, 5, 2), (1, 1, 1), (2, 4, 3)],
        [(0, 3, 3), (1, 2, 2), (2, 0, 0)],
        [(0, 4, 3), (1, 5, 2), (2, 1, 1)],
    ]
    schedule = push_schedule(3, owners)
    assert [[(x.cluster, x.layer, x.slave) for x in step] for step in schedule] == expected


def test_more_clusters_than_slaves_is_slave_bound():
    # Fig. 5a: 4 clusters, 2 slaves, 2 layers one per slave: T = max(2, 4 * 1) = 4, and
    # each step's 2 transfers (one per slave) leave 2 clusters idle.
    schedule = push_schedule(4, (0, 1))
    assert len(schedule) == 4
    assert [len(step) for step in schedule] == [2, 2, 2, 2]


def test_production_plan_by_hand():
    """examples/ps/production9.yaml: Table 1's clusters, 16 slaves, the 100B model of §5.4."""
    config = load_config(os.path.join(ROOT, "examples", "ps", "production9.yaml"))
    plan = plan_from_config(config)
    # Off-diagonal B = 10 Gbps = 1.25e9 B/s, diagonal 100 Gbps = 1.25e10 B/s, so
    # B_i^T p = 1.25e9 * (sum p) + (1.25e10 - 1.25e9) * p_i: the largest p wins, E (319467).
    # sum p = 5 * 252600 + 221000 + 219667 + 152933 + 319467 = 2176067;
    # E: 1.25e9 * 2176067 + 1.125e10 * 319467 = 2.72008375e15 + 3.59400375e15 = 6.3140875e15.
    assert [c.name for c in plan.clusters][plan.ps_cluster] == "E"
    scores = ps_cluster_scores(plan.bandwidth, [c.throughput for c in plan.clusters])
    assert math.isclose(scores[8], 6.3140875e15, rel_tol=1e-12)
    # Layers: embed, 96 decoder layers, norm, lm_head = 99. Sizes in f32 (4 B/param):
    # embed = head = 128256 * 8192 * 4 = 4,202,692,608 B; a decoder layer is
    # q 8192*8192 = 67,108,864 + k, v 8192*(8*128) = 8,388,608 each + o 67,108,864
    # + gate/up/down 3*8192*36864 = 905,969,664 + two norms 2*8192 = 16,384
    # = 1,056,980,992 params = 4,227,923,968 B; norm 8192 * 4 = 32,768 B.
    assert len(plan.layers) == 99
    assert plan.layers[0].prefix == "model.embed_tokens" and plan.layers[0].nbytes == 4_202_692_608
    assert plan.layers[1].prefix == "model.layers.0" and plan.layers[1].nbytes == 4_227_923_968
    assert plan.layers[97].prefix == "model.norm" and plan.layers[97].nbytes == 32_768
    assert plan.layers[98].prefix == "lm_head" and plan.layers[98].nbytes == 4_202_692_608
    # LPT: 96 decoder layers go 6 per slave first (largest), then embed and head to the
    # two least loaded (slaves 0 and 1, ties to the lowest index), then norm to slave 2:
    # 7, 7, 7 layers on slaves 0-2 and 6 on the others.
    counts = [plan.slave_of_layer.count(s) for s in range(16)]
    assert counts == [7, 7, 7] + [6] * 13
    # T = max(L = 99, k * m = 9 * 7 = 63) = 99: the clusters' own sending bounds it.
    assert push_steps_bound(9, plan.slave_of_layer) == 99
    assert len(plan.push_schedule) == 99
    _check_schedule(plan.push_schedule, 9, plan.slave_of_layer)


def _check_schedule(schedule, k: int, owners) -> None:
    pairs = [(x.cluster, x.layer) for step in schedule for x in step]
    assert sorted(pairs) == [(c, layer) for c in range(k) for layer in range(len(owners))]
    for step in schedule:
        assert len({x.slave for x in step}) == len(step), step
        assert len({x.cluster for x in step}) == len(step), step
        assert all(x.slave == owners[x.layer] for x in step)


@settings(max_examples=150, deadline=None)
@given(
    k=st.integers(1, 10),
    n=st.integers(1, 17),
    sizes=st.lists(st.integers(1, 10**9), min_size=1, max_size=40),
)
def test_schedule_properties(k, n, sizes):
    """Every (cluster, layer) once, no slave (or cluster) twice in a step, and as many
    steps as the bound max(L, k * max_s m_s) says."""
    owners = assign_layers(sizes, n)
    schedule = push_schedule(k, owners)
    _check_schedule(schedule, k, owners)
    m = max(owners.count(s) for s in range(n))
    assert len(schedule) == push_steps_bound(k, owners) == max(len(sizes), k * m)
    assert all(step for step in schedule)  # no idle step: the bound is tight


@settings(max_examples=100, deadline=None)
@given(k=st.integers(1, 9), owners=st.lists(st.integers(0, 5), min_size=1, max_size=30))
def test_schedule_properties_for_any_owner_map(k, owners):
    """The schedule needs no balance: any layer-to-slave map is scheduled in the bound."""
    schedule = push_schedule(k, owners)
    _check_schedule(schedule, k, owners)
    assert len(schedule) == max(len(owners), k * max(owners.count(s) for s in set(owners)))


def test_transfer_fields_are_the_shared_interface():
    assert push_schedule(1, (0,)) == ((Transfer(cluster=0, layer=0, slave=0),),)
