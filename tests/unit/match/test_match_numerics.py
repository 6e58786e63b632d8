"""stage.md Table IV on simulated ranks: for every row, the collectives
stg-match-collectives emits give every rank exactly the local the reference
interpreter's stg.reshard (a regroup of the whole tensor) gives it."""

from __future__ import annotations

import pytest
import torch

from stagec.runtime.interpreter.values import SimulatedMesh

from tests.unit.match.match_testing import (
    matched,
    op_names,
    parse,
    producer_locals,
    reshard_program,
    run_locals,
    summed_over_partial,
    tensor_type,
)

PRODUCER = "[B/dp, S, H] @tp, f64"

# Table IV: consumer layout -> the collectives stage.md names for it.
TABLE_IV = {
    "[B/dp, S, H/tp], f64": "ReduceScatter",
    "[B, S/dp, H] @tp, f64": "AllToAll",
    "[B, S, H] @tp, f64": "AllGather",
    "[B/dp, S, H], f64": "AllReduce",
    "[B/tp, S, H/dp], f64": "ReduceScatter + AllToAll",
    "[B, S, H], f64": "AllReduce + AllGather",
}

# What stagec emits on each mesh (docs/collectives.md derives each sequence).
EMITTED = {
    (2, 2): [
        ["stg.reduce_scatter"],
        ["stg.all_to_all"],
        ["stg.all_gather"],
        ["stg.all_reduce"],
        ["stg.all_to_all", "stg.reduce_scatter"],
        ["stg.all_reduce", "stg.all_gather"],
    ],
    # On tp = 3, scattering tp onto S before the all_to_alls sends less (19/18 vs
    # 21/18 of the producer's local tensor; tests/lit/passes/stg-match-collectives/numeric.mlir).
    (2, 3): [
        ["stg.reduce_scatter"],
        ["stg.all_to_all"],
        ["stg.all_gather"],
        ["stg.all_reduce"],
        ["stg.reduce_scatter", "stg.all_to_all", "stg.all_to_all"],
        ["stg.all_reduce", "stg.all_gather"],
    ],
}

SIZES = dict(B=12, S=6, H=12)  # every dim divides by dp * tp on both meshes


@pytest.mark.parametrize("dp, tp", [(2, 2), (2, 3)])
@pytest.mark.parametrize("row", range(6))
def test_table4_row_matches_the_reshard_rank_by_rank(dp, tp, row):
    consumer = list(TABLE_IV)[row]
    text = reshard_program({"dp": dp, "tp": tp}, PRODUCER, consumer, SIZES)
    program = matched(text)
    assert op_names(program) == EMITTED[(dp, tp)][row]

    mesh = SimulatedMesh(["dp", "tp"], [dp, tp])
    src = tensor_type(PRODUCER)
    locals_ = producer_locals(mesh, src, [SIZES["B"], SIZES["S"], SIZES["H"]], seed=row)
    expected = run_locals(parse(text), locals_)
    got = run_locals(program, locals_)
    assert len(got) == dp * tp
    dst = tensor_type(consumer)
    for rank in range(dp * tp):
        if not dst.partial_axes:
            # Exactly: both sum the same tp partial pieces in rank order.
            assert torch.equal(got[rank], expected[rank]), f"rank {rank}"
        else:
            # Rows 2 and 3 keep the partial sums over tp: the collectives leave every
            # rank its own piece, while the reference puts the sum on tp = 0 and zeros
            # elsewhere. Per rank, the pieces of its tp group sum to the same block.
            assert torch.equal(
                summed_over_partial(mesh, dst, got, rank), summed_over_partial(mesh, dst, expected, rank)
            ), f"rank {rank}"


def test_producer_locals_are_not_trivial():
    """The partial pieces differ between tp ranks, so a wrong reduction would show."""
    mesh = SimulatedMesh(["dp", "tp"], [2, 2])
    locals_ = producer_locals(mesh, tensor_type(PRODUCER), [4, 2, 2], seed=0)
    assert not torch.equal(locals_[0], locals_[1])
    assert not torch.equal(locals_[0], locals_[2])


def test_local_slice_keeps_each_ranks_block():
    """stg.local_slice in the interpreter: rank (dp, tp) keeps block tp of its dp block's
    columns, with nothing taken from another rank."""
    text = """
    stg.mesh @m [dp = 2, tp = 2]
    func.func @f(%x: !stg.tensor<[4/dp, 6], f64>) -> !stg.tensor<[4/dp, 6/tp], f64> {
      %r = stg.local_slice %x on @m [tp] : !stg.tensor<[4/dp, 6], f64> -> !stg.tensor<[4/dp, 6/tp], f64>
      func.return %r : !stg.tensor<[4/dp, 6/tp], f64>
    }"""
    mesh = SimulatedMesh(["dp", "tp"], [2, 2])
    locals_ = producer_locals(mesh, tensor_type("[4/dp, 6], f64"), [4, 6], seed=3)
    got = run_locals(parse(text), locals_)
    for rank in range(4):
        tp = rank % 2
        assert torch.equal(got[rank], locals_[rank][:, 3 * tp : 3 * tp + 3])
