"""Property: on random meshes and layouts, the collectives stg-match-collectives emits
leave every rank exactly the consumer's block of the global tensor, where the global
tensor is what the producer's locals make up (splits concatenated, partial sums
summed). Data are integer-valued, so sums are exact in any order."""

from __future__ import annotations

from math import prod

import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from stagec.runtime.interpreter.values import SimulatedMesh

from tests.unit.match.match_testing import (
    expected_local,
    global_of,
    matched,
    op_names,
    producer_locals,
    reshard_program,
    run_locals,
    summed_over_partial,
    tensor_type,
)

AXES = ("dp", "tp", "sp")


@st.composite
def layout(draw, axes, rank: int, partial_allowed) -> tuple[list[list[str]], list[str]]:
    """Each axis: unused, splitting some dim at some position, or (where allowed) partial."""
    splits: list[list[str]] = [[] for _ in range(rank)]
    partial = []
    for axis in draw(st.permutations(axes)):
        choices = ["unused", "split"] + (["partial"] if axis in partial_allowed else [])
        kind = draw(st.sampled_from(choices))
        if kind == "split":
            dim = draw(st.integers(0, rank - 1))
            splits[dim].insert(draw(st.integers(0, len(splits[dim]))), axis)
        elif kind == "partial":
            partial.append(axis)
    return splits, partial


def type_text(shape, splits, partial) -> str:
    dims = ", ".join("/".join([str(n), *axes]) for n, axes in zip(shape, splits, strict=True))
    return f"[{dims}]" + (f" @{'*'.join(partial)}" if partial else "") + ", f64"


@st.composite
def reshard_case(draw):
    axes = AXES[: draw(st.integers(2, 3))]
    sizes = {a: draw(st.integers(1, 3)) for a in axes}
    rank = draw(st.integers(2, 3))
    # Every dim divides by every product of axis sizes: all layouts are legal.
    shape = [prod(sizes.values()) * draw(st.integers(1, 2)) for _ in range(rank)]
    src_splits, src_partial = draw(layout(axes, rank, partial_allowed=axes))
    dst_splits, dst_partial = draw(layout(axes, rank, partial_allowed=src_partial))
    # Equal layouts (no collectives at all) are pinned by the lit tests; keep the
    # examples for changes.
    assume((src_splits, sorted(src_partial)) != (dst_splits, sorted(dst_partial)))
    return sizes, shape, type_text(shape, src_splits, src_partial), type_text(shape, dst_splits, dst_partial)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=reshard_case(), seed=st.integers(0, 2**16))
def test_matched_collectives_give_every_rank_the_consumers_block(case, seed):
    sizes, shape, src_text, dst_text = case
    program = matched(reshard_program(sizes, src_text, dst_text))
    assert "stg.reshard" not in op_names(program)

    mesh = SimulatedMesh(list(sizes), list(sizes.values()))
    src, dst = tensor_type(src_text), tensor_type(dst_text)
    locals_ = producer_locals(mesh, src, shape, seed, integers=True)
    whole = global_of(mesh, src, locals_)
    got = run_locals(program, locals_)
    for rank in range(mesh.num_ranks):
        # Over partial axes the consumer keeps, the rank's group sums to its block.
        local = summed_over_partial(mesh, dst, got, rank)
        assert torch.equal(local, expected_local(mesh, dst, whole, rank)), (
            f"rank {rank}: {src.layout_str()} -> {dst.layout_str()} on {sizes} by {op_names(program)}"
        )
