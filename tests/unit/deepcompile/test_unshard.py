"""stg-unshard (deepcompile.md §4.3): the selection by T_c(B)/B under the memory limit,
its properties over random steps (hypothesis), and the unsharded step computing what
the unsharded-parameter step computes, with and without gradient accumulation."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.deepcompile.random_steps import layer, program
from tests.unit.deepcompile.schedule_checks import check_gathered_buffers
from tests.unit.shard.shard_testing import assert_same_step, run, state, train_step, transformed
from xdsl.parser import Parser

from stagec.dialects import make_context
from stagec.dialects.stg.comm import AllGatherOp
from stagec.passes.stg_fully_shard import fully_shard
from stagec.passes.stg_prefetch import StgPrefetch, prefetch
from stagec.passes.stg_schedule import schedule_streams
from stagec.passes.stg_unshard import StgUnshard, unshard
from stagec.runtime.cost.profiling import ProfiledProgram

FULLY_SHARDED = "builtin.module(stg-shard{fsdp=2}, stg-match-collectives, stg-fully-shard, stg-schedule)"


def _scheduled(layers):
    module = Parser(make_context(), program(layers)).parse_module()
    fully_shard(module)
    schedule_streams(module)
    return module


def _gathers(module) -> int:
    return sum(isinstance(op, AllGatherOp) for op in module.walk())


def test_selection_follows_t_c_per_byte_and_the_room_left():
    # Two layers: a wide pair (up [64, 128], down [128, 64]: B = 16384 bytes bf16 each)
    # and a square w1 ([64, 64]: B = 8192). On h100-sxm for 2 ranks T_c(V) = 2.5 us +
    # (V/2) / 360e9 s (docs/cost-model.md): latency-bound, so T_c(B)/B is highest for
    # the smallest buffer: w1 first, then up0 and down0 (equal; by name). With room
    # for 8192 + 16384 bytes (M = peak + 24577) w1 and down0 are kept, up0 is not.
    module = _scheduled([(True, 0), (False, 0)])
    peak = ProfiledProgram(module, {}).memory.peak_bytes
    result = unshard(module, StgUnshard(memory_limit=peak + 8192 + 16384 + 1))
    assert [c.name for c in result.ranking] == ["w1", "down0", "up0"]
    assert [c.bytes for c in result.ranking] == [8192, 16384, 16384]
    assert result.kept == ["w1", "down0"] and result.kept_bytes == 24576
    assert result.removed_gathers == 4  # forward and backward gathers of w1 and down0
    assert _gathers(module) == 2 + 2  # one gather each for the kept, two for up0
    assert ProfiledProgram(module, {}).memory.peak_bytes <= peak + 24576


@settings(max_examples=30, deadline=None)
@given(st.lists(layer, min_size=1, max_size=4), st.floats(0.0, 1.0), st.booleans())
def test_unshard_properties(layers, headroom, prefetched):
    # For any M from the scheduled peak to room for every buffer: after (prefetch and)
    # unshard the memory analysis's peak stays under M; every gathered buffer is used
    # after its wait only, released once, after its last use, never used after.
    module = _scheduled(layers)
    peak = ProfiledProgram(module, {}).memory.peak_bytes
    every = sum(2 * 16384 if wide else 8192 for wide, _ in layers)
    limit = int(peak + 1 + headroom * every)
    if prefetched:
        prefetch(module, StgPrefetch(memory_limit=limit))
    before = _gathers(module)
    result = unshard(module, StgUnshard(memory_limit=limit))
    module.verify()  # every use of a gathered value is dominated by its wait
    assert check_gathered_buffers(module) == _gathers(module)
    assert ProfiledProgram(module, {}).memory.peak_bytes < limit
    # each kept parameter had a forward and a backward gather and keeps one
    assert _gathers(module) == before - len(result.kept)


def _kept_limit(module, bindings) -> int:
    """M with room for about half of what every parameter kept would take."""
    probe = module.clone()
    result = unshard(probe, StgUnshard(memory_limit=1 << 40), bindings=bindings)
    return result.peak_bytes + result.kept_bytes // 2


@pytest.mark.parametrize("name,micro_batches", [("llama", 1), ("llama", 4), ("mixtral-nodrop", 1),
                                                pytest.param("mixtral-nodrop", 4, marks=pytest.mark.scale)])
def test_unsharded_step_equals_the_reference(name, micro_batches):
    # float64 tiny models on 2 simulated ranks: the fsdp step with parameters kept
    # gathered (some of them: M leaves room for about half) computes the loss, the
    # parameters and the Adam states of the reference step to 1e-12
    config, module = train_step(name, micro_batches, recompute=True)
    b = s = 4
    bindings = {"B": b, "S": s, "M": micro_batches}
    params, inputs = state(config, b, s, micro_batches)
    reference = run(module, params, inputs, b, s)
    sharded = transformed(module, FULLY_SHARDED)
    limit = _kept_limit(sharded, bindings)
    result = unshard(sharded, StgUnshard(memory_limit=limit), bindings=bindings)
    assert result.kept and len(result.kept) < len(result.ranking)
    sharded.verify()
    assert ProfiledProgram(sharded, bindings).memory.peak_bytes < limit
    assert_same_step(reference, run(sharded, params, inputs, b, s), rtol=1e-12)
