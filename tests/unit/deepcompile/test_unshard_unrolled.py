"""stg-unshard on the unrolled step `stagec compile` builds by default (stg-fully-shard,
stg-unroll-layers, the scheduling passes, stg-prefetch): every (parameter, layer K)
slice read with an explicit layer is its own candidate (deepcompile.md §4.3). The
unsharded step computes what the unsharded-parameter step computes, with and without
gradient accumulation, and its gathered buffers keep the schedule's properties."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.deepcompile.random_steps import layer, program
from tests.unit.shard.shard_testing import assert_same_step, run, state, train_step, transformed
from xdsl.parser import Parser

from stagec.dialects import make_context
from stagec.dialects.stg.comm import AllGatherOp
from stagec.dialects.stg.memory import ReleaseOp, WaitOp
from stagec.dialects.stg.schedule import GroupOp
from stagec.dialects.stg.structure import PhaseOp, YieldOp
from stagec.passes.deepcompile.sites import gather_sites
from stagec.passes.stg_fully_shard import fully_shard
from stagec.passes.stg_prefetch import StgPrefetch, prefetch
from stagec.passes.stg_schedule import schedule_streams
from stagec.passes.stg_unshard import StgUnshard, unshard
from stagec.runtime.cost.profiling import ProfiledProgram

# stagec compile's step (tools/stagec_compile.py fully_sharded_step): the scheduling
# passes with stg-fully-shard then stg-unroll-layers in place of stg-fsdp-units
UNROLLED = ("builtin.module(stg-shard{fsdp=2}, stg-match-collectives, stg-reuse-exchanges, "
            "stg-vocab-parallel-cross-entropy, stg-fuse-gemms, stg-fully-shard, stg-unroll-layers, "
            "stg-bucket-gradients, stg-schedule, stg-insert-releases)")


def _gathers(module) -> int:
    return sum(isinstance(op, AllGatherOp) for op in module.walk())


def check_kept_buffers(module) -> int:
    """schedule_checks.check_gathered_buffers, following a buffer through the phases
    that yield it (a kept slice leaves the forward for the backward): every gathered
    buffer is used only after its wait, released exactly once, after all of its uses,
    and never used after; returns how many buffers were checked."""
    function = next(op for op in module.walk() if op.name == "func.func")
    order = {id(op): i for i, op in enumerate(function.walk())}
    checked = 0
    for wait in function.walk():
        if not isinstance(wait, WaitOp) or not isinstance(wait.token.owner, (AllGatherOp, GroupOp)):
            continue
        if isinstance(wait.token.owner, GroupOp) and wait.token.owner.collective_kind() is not AllGatherOp:
            continue
        users, work = [], [wait.result]
        while work:
            for use in work.pop().uses:
                if isinstance(use.operation, YieldOp) and isinstance(use.operation.parent_op(), PhaseOp):
                    work.append(use.operation.parent_op().results[use.index])
                else:
                    users.append(use.operation)
        releases = [u for u in users if isinstance(u, ReleaseOp)]
        name = wait.result.name_hint
        assert len(releases) == 1, f"{name}: released {len(releases)} times"
        others = [order[id(u)] for u in users if not isinstance(u, ReleaseOp)]
        assert others, f"{name}: never used"
        assert all(order[id(wait)] < i < order[id(releases[0])] for i in others), \
            f"{name}: a use before its wait or after its release"
        checked += 1
    return checked


def _label(site) -> str:
    layer = site.param.explicit_layer()
    return site.name if layer is None else f"{site.name} layer {layer[0]} of {layer[1]}"


def _home(site) -> str:
    """Where a gather's wait stands: "stg.phase forward", "func.func", ..."""
    parent = site.wait.parent_op()
    return f"{parent.name} {parent.kind.data}" if isinstance(parent, PhaseOp) else parent.name


@pytest.mark.parametrize("micro_batches", [1, 2])
def test_unrolled_unsharded_step_equals_the_reference(micro_batches):
    # float64 tiny Llama on 2 simulated ranks, stagec compile's unrolled step with
    # stg-prefetch, then stg-unshard with room for about half of every slice and global
    # kept: the loss, parameters and Adam states equal the reference step's to 1e-12
    config, module = train_step("llama", micro_batches, recompute=True)
    b = s = 4
    bindings = {"B": b, "S": s, "M": micro_batches}
    params, inputs = state(config, b, s, micro_batches)
    reference = run(module, params, inputs, b, s)
    sharded = transformed(module, UNROLLED)
    prefetch(sharded, StgPrefetch(memory_limit=1 << 40), bindings=bindings)
    probe = sharded.clone()
    every = unshard(probe, StgUnshard(memory_limit=1 << 40), bindings=bindings)
    # every candidate fits: each one leaves one all-gather of its forward and backward
    assert _gathers(probe) == _gathers(sharded) - every.removed_gathers + len(every.kept)
    limit = every.peak_bytes + every.kept_bytes // 2
    before = _gathers(sharded)
    result = unshard(sharded, StgUnshard(memory_limit=limit), bindings=bindings)
    layered = [c for c in result.ranking if " layer " in c.name]
    # tiny Llama: 2 layers, each slice of its 7 layer weights (q, k, v, o, gate, up,
    # down; fused gemms stand as one gather each) is a candidate beside the globals
    assert {c.name.split(" layer ")[1] for c in layered} == {"0 of 2", "1 of 2"}
    assert any(" layer " in k for k in result.kept) and len(result.kept) < len(result.ranking)
    # each kept slice or global is gathered once per step: of its forward and backward
    # gathers (in the micro-batch loop's body with accumulation) one stays, or one
    # gathers before the loop in their place
    assert _gathers(sharded) == before - len(result.kept)
    assert result.removed_gathers == 2 * len(result.kept)
    # without accumulation a kept slice's gather stays where stg-prefetch put it, in
    # the forward; with it, the structured path gathers it before the micro-batch loop
    homes = {_home(site) for site in gather_sites(next(op for op in sharded.walk() if op.name == "func.func"))
             if _label(site) in result.kept and site.param.explicit_layer() is not None}
    assert homes == ({"stg.phase forward"} if micro_batches == 1 else {"func.func"})
    sharded.verify()
    assert check_kept_buffers(sharded) == _gathers(sharded)
    assert ProfiledProgram(sharded, bindings).memory.peak_bytes < limit
    assert_same_step(reference, run(sharded, params, inputs, b, s), rtol=1e-12)


def _unrolled_program(layers) -> str:
    """random_steps.program with every weight read as stg-unroll-layers writes it: the
    weight of layer k, "w3" (or "up3", "down3"), is `"w" layer 3 of N`."""
    n = len(layers)
    text = program(layers)
    text = re.sub(r'stg\.param "(w|up|down)(\d+)" :', lambda m: f'stg.param "{m[1]}" layer {m[2]} of {n} :', text)
    return re.sub(r'of "(w|up|down)(\d+)" :', lambda m: f'of "{m[1]}" layer {m[2]} of {n} :', text)


@settings(max_examples=25, deadline=None)
@given(st.lists(layer, min_size=1, max_size=4), st.floats(0.0, 1.0), st.booleans())
def test_unrolled_unshard_properties(layers, headroom, prefetched):
    # For any M from the scheduled peak to room for every slice, on a step whose
    # weights are read per layer: after (prefetch and) unshard every slice is its own
    # candidate, the memory analysis's peak stays under M, every gathered buffer
    # (followed through the phases that yield it) is used after its wait only,
    # released once after its last use; a kept slice keeps its forward gather in the
    # forward phase and loses its backward one
    module = Parser(make_context(), _unrolled_program(layers)).parse_module()
    fully_shard(module)
    schedule_streams(module)
    peak = ProfiledProgram(module, {}).memory.peak_bytes
    every = sum(2 * 16384 if wide else 8192 for wide, _ in layers)
    limit = int(peak + 1 + headroom * every)
    if prefetched:
        prefetch(module, StgPrefetch(memory_limit=limit))
    before = _gathers(module)
    result = unshard(module, StgUnshard(memory_limit=limit))
    assert len(result.ranking) == sum(2 if wide else 1 for wide, _ in layers)
    assert all(" layer " in c.name for c in result.ranking)
    module.verify()
    assert check_kept_buffers(module) == _gathers(module) == before - len(result.kept)
    assert ProfiledProgram(module, {}).memory.peak_bytes < limit
    function = next(op for op in module.walk() if op.name == "func.func")
    for site in gather_sites(function):
        assert isinstance(site.wait.parent_op(), PhaseOp)
        if _label(site) in result.kept:
            assert _home(site) == "stg.phase forward"


ONCE = """
stg.mesh @m [fsdp = 2]
func.func @step(%x: !stg.tensor<[8, 64], bf16>) {
  stg.phase forward {
    %w = stg.param "w" layer 0 of 1 : !stg.tensor<[64/fsdp, 64], bf16>
    %gw = stg.all_gather %w on @m [fsdp] : !stg.tensor<[64/fsdp, 64], bf16> -> !stg.tensor<[64, 64], bf16>
    %h = stg.einsum "bh,hf->bf" %x, %gw : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
    stg.yield
  }
  func.return
}
"""


def test_a_slice_gathered_once_per_step_is_no_candidate():
    # "w" layer 0 is gathered once, in the forward only: keeping it would remove no
    # gather and only hold its 8192 bytes longer, so it is not ranked and the step
    # is unchanged
    module = Parser(make_context(), ONCE).parse_module()
    fully_shard(module)
    schedule_streams(module)
    text = str(module)
    result = unshard(module, StgUnshard(memory_limit=1 << 40))
    assert result.ranking == [] and result.kept == [] and str(module) == text
