"""The matcher's choices under the ring cost model (passes/collectives/cost.py), each
against costs derived here by hand: per rank, in bytes of the op's local input,
all_gather (n-1), reduce_scatter and all_to_all (n-1)/n, all_reduce 2(n-1)/n,
local_slice 0."""

from __future__ import annotations

from fractions import Fraction

import pytest

from stagec.dialects.stg.comm import (
    AllGatherOp,
    AllReduceOp,
    AllToAllOp,
    LocalSliceOp,
    ReduceScatterOp,
)
from stagec.passes.collectives import (
    UNBOUND_SYMBOL,
    UNSIZED_AXIS,
    MatchError,
    match_reshard,
    reshard_cost,
    ring_factor,
)

from tests.unit.match.match_testing import tensor_type

PRODUCER = tensor_type("[B/dp, S, H] @tp, bf16")
DIMS = dict(B=16, S=16, H=16)
WHOLE = 16 * 16 * 16 * 2  # bytes of the global bf16 tensor


def ops(steps):
    return [(s.op, s.axes) for s in steps]


def test_ring_factors():
    assert ring_factor(AllGatherOp, 4) == 3
    assert ring_factor(ReduceScatterOp, 4) == Fraction(3, 4)
    assert ring_factor(AllToAllOp, 4) == Fraction(3, 4)
    assert ring_factor(AllReduceOp, 4) == Fraction(3, 2)
    assert ring_factor(LocalSliceOp, 4) == 0


def test_reduce_scatter_beats_all_reduce_then_local_slice():
    """Table IV row 1: the reduce_scatter sends half of what all_reduce would."""
    mesh = {"dp": 2, "tp": 4}
    dst = tensor_type("[B/dp, S, H/tp], bf16")
    steps = match_reshard(PRODUCER, dst, mesh, DIMS)
    assert ops(steps) == [(ReduceScatterOp, ("tp",))]
    local = WHOLE / 2
    assert reshard_cost(PRODUCER, dst, mesh, DIMS) == 3 / 4 * local
    all_reduce_then_slice = 2 * 3 / 4 * local + 0
    assert reshard_cost(PRODUCER, dst, mesh, DIMS) < all_reduce_then_slice


def test_row6_all_reduce_before_all_gather():
    """Table IV row 6: reducing the dp shard first, then gathering, sends less than
    gathering first and reducing the whole tensor."""
    mesh = {"dp": 2, "tp": 4}
    dst = tensor_type("[B, S, H], bf16")
    steps = match_reshard(PRODUCER, dst, mesh, DIMS)
    assert ops(steps) == [(AllReduceOp, ("tp",)), (AllGatherOp, ("dp",))]
    shard = WHOLE / 2
    reduce_first = 2 * 3 / 4 * shard + 1 * shard
    gather_first = 1 * shard + 2 * 3 / 4 * WHOLE
    assert [s.cost for s in steps] == [2 * 3 / 4 * shard, 1 * shard]
    assert reshard_cost(PRODUCER, dst, mesh, DIMS) == reduce_first < gather_first
    # reduce_scatter of tp onto B, then one all_gather over [dp, tp], costs the same
    # in as many ops: the fixed order (all_reduce first) decides.
    scatter_then_gather = 3 / 4 * shard + 7 * (WHOLE / 8)
    assert scatter_then_gather == reduce_first


def test_fewer_ops_break_a_cost_tie():
    """Table IV row 4: all_reduce = reduce_scatter + all_gather on a ring; one op wins."""
    mesh = {"dp": 2, "tp": 4}
    dst = tensor_type("[B/dp, S, H], bf16")
    shard = WHOLE / 2
    assert 3 / 4 * shard + 3 * (shard / 4) == 2 * 3 / 4 * shard
    assert ops(match_reshard(PRODUCER, dst, mesh, DIMS)) == [(AllReduceOp, ("tp",))]


def test_two_axes_move_in_one_all_to_all():
    """(n-1)/n of the local tensor over dp*tp ranks, less than axis by axis."""
    mesh = {"dp": 2, "tp": 2}
    src, dst = tensor_type("[B/dp/tp, S], f32"), tensor_type("[B, S/dp/tp], f32")
    local = 16 * 16 * 4 / 4
    assert ops(match_reshard(src, dst, mesh, DIMS)) == [(AllToAllOp, ("dp", "tp"))]
    assert reshard_cost(src, dst, mesh, DIMS) == 3 / 4 * local < (1 / 2 + 1 / 2) * local


def test_slicing_comes_first():
    """A free local slice before the all_gather shrinks what it moves."""
    mesh = {"sp": 4, "tp": 2}
    src, dst = tensor_type("[B/sp, H], f32"), tensor_type("[B, H/tp], f32")
    steps = match_reshard(src, dst, mesh)
    assert ops(steps) == [(LocalSliceOp, ("tp",)), (AllGatherOp, ("sp",))]
    assert steps[0].cost == 0


def test_symbolic_sizes_use_the_stand_ins():
    """Table IV row 3 on `stg.mesh @m [dp, tp]` with B, S, H unbound: dp counts as
    UNSIZED_AXIS ranks, each dim as UNBOUND_SYMBOL."""
    dst = tensor_type("[B, S, H] @tp, bf16")
    whole = UNBOUND_SYMBOL**3 * 2
    expected = (UNSIZED_AXIS - 1) * whole / UNSIZED_AXIS
    assert reshard_cost(PRODUCER, dst, {"dp": None, "tp": None}) == expected
    assert reshard_cost(PRODUCER, dst, {}) == expected
    # An axis with a number uses it.
    assert reshard_cost(PRODUCER, dst, {"dp": 2, "tp": None}) == 1 * whole / 2


def test_the_global_size_is_a_common_factor():
    """Doubling a dim doubles every candidate's cost: dims never change the choice,
    only the bytes reported."""
    for consumer in ["[B/dp, S, H/tp], bf16", "[B, S, H], bf16", "[B/tp, S, H/dp], bf16"]:
        dst = tensor_type(consumer)
        small = match_reshard(PRODUCER, dst, {"dp": 2, "tp": 2}, {"B": 8})
        large = match_reshard(PRODUCER, dst, {"dp": 2, "tp": 2}, {"B": 16})
        assert ops(small) == ops(large)
        assert [2 * s.cost for s in small] == [s.cost for s in large]


@pytest.mark.parametrize(
    "bindings, expected",
    [
        # S unknown: S/tp need not divide, so tp does not pass through S.
        ({}, [(AllToAllOp, ("dp",)), (ReduceScatterOp, ("tp",))]),
        # S = 6: it divides, and scattering tp onto S first is cheaper (19/18 < 21/18).
        ({"S": 6}, [(ReduceScatterOp, ("tp",)), (AllToAllOp, ("dp",)), (AllToAllOp, ("tp",))]),
        # S = 4 does not divide by tp = 3.
        ({"S": 4}, [(AllToAllOp, ("dp",)), (ReduceScatterOp, ("tp",))]),
    ],
)
def test_intermediate_splits_need_proof_that_they_divide(bindings, expected):
    dst = tensor_type("[B/tp, S, H/dp], bf16")
    steps = match_reshard(PRODUCER, dst, {"dp": 2, "tp": 3}, bindings)
    assert ops(steps) == expected
    costs = {2: Fraction(1, 2) + Fraction(2, 3), 3: Fraction(2, 3) + Fraction(1, 6) + Fraction(2, 9)}
    local = UNBOUND_SYMBOL**2 * bindings.get("S", UNBOUND_SYMBOL) * 2 / 2
    assert reshard_cost(PRODUCER, dst, {"dp": 2, "tp": 3}, bindings) == pytest.approx(
        float(costs[len(expected)]) * local
    )


def test_steps_chain_from_producer_to_consumer():
    dst = tensor_type("[B/tp, S, H/dp], bf16")
    steps = match_reshard(PRODUCER, dst, {"dp": 2, "tp": 2})
    assert steps[0].input == PRODUCER and steps[-1].result == dst
    assert all(a.result == b.input for a, b in zip(steps, steps[1:]))
    assert [str(s) for s in steps] == [
        "all_to_all [dp]: [B/dp, S, H] @tp -> [B, S, H/dp] @tp",
        "reduce_scatter [tp]: [B, S, H/dp] @tp -> [B/tp, S, H/dp]",
    ]


def test_equal_layouts_need_nothing():
    assert match_reshard(PRODUCER, PRODUCER, {"dp": 2, "tp": 2}) == []
    assert reshard_cost(PRODUCER, PRODUCER, {"dp": 2, "tp": 2}) == 0


def test_axis_order_follows_the_mesh():
    src, dst = tensor_type("[B, H] @dp*tp, f32"), tensor_type("[B, H], f32")
    assert ops(match_reshard(src, dst, {"dp": 2, "tp": 2})) == [(AllReduceOp, ("dp", "tp"))]
    assert ops(match_reshard(src, dst, {"tp": 2, "dp": 2})) == [(AllReduceOp, ("tp", "dp"))]


def test_consumer_partial_sum_is_an_error():
    with pytest.raises(MatchError, match=r"the consumer is a partial sum over \[tp\], which the producer is not"):
        match_reshard(tensor_type("[B, H] @dp, f32"), tensor_type("[B, H] @tp, f32"), {"dp": 2, "tp": 2})


def test_different_tensors_are_an_error():
    with pytest.raises(MatchError, match="are not the same global tensor"):
        match_reshard(tensor_type("[B, H], f32"), tensor_type("[B, S], f32"), {})


def test_step_costs_are_the_ring_model():
    """The search's exact integer costs agree with cost.step_cost, step by step."""
    from stagec.passes.collectives.cost import Sizes, global_bytes, step_cost

    mesh, bindings = {"dp": 2, "tp": 3}, {"S": 6}
    sizes = Sizes(mesh, bindings)
    whole = global_bytes(PRODUCER, sizes)
    steps = match_reshard(PRODUCER, tensor_type("[B/tp, S, H/dp], bf16"), mesh, bindings)
    assert len(steps) == 3
    for step in steps:
        assert step.cost == float(step_cost(step.op, step.axes, step.input.splits, whole, sizes))
