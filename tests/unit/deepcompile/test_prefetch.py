"""stg-prefetch (deepcompile.md §4.2, Algorithm 1): the simulated step gets faster and
its exposed communication falls, the memory limit holds by the memory analysis, and
the prefetched step computes what the unsharded one does."""

from __future__ import annotations

import pytest
from tests.unit.shard.shard_testing import assert_same_step, run, state, train_step, transformed
from xdsl.parser import Parser

from stagec.dialects import make_context
from stagec.dialects.stg.schedule import GroupOp
from stagec.frontends.templates import build_model, load_config
from stagec.passes.stg_autodiff import StgAutodiff
from stagec.passes.stg_prefetch import StgPrefetch, prefetch
from stagec.runtime.cost.hardware_description import load_hardware
from stagec.runtime.cost.profiling import ProfiledProgram, profile_by_cost_model
from stagec.runtime.sim.network import NetworkModel
from stagec.runtime.sim.simulate import simulate_module

FULLY_SHARDED = "builtin.module(stg-shard{fsdp=4}, stg-match-collectives, stg-fully-shard, stg-schedule)"
FIG6 = "tests/lit/passes/stg-prefetch/fig6.mlir"


@pytest.fixture(scope="module")
def llama_1b_fsdp4():
    module = build_model(load_config("llama3.2-1b"), "bf16")
    StgAutodiff(micro_batches=1).apply(make_context(), module)
    return transformed(module, FULLY_SHARDED), {"B": 4, "S": 256}


def test_prefetch_shortens_the_simulated_step(llama_1b_fsdp4):
    # Llama-3.2-1B on 4 H100s (one NVLink node), fsdp=4, batch 4 x 256 tokens. Without
    # prefetch every all-gather is issued where its first user waits for it, so the
    # compute stream waits out each one; prefetched, a layer's gathers start at the top
    # of its body and overlap the compute before their users.
    base, bindings = llama_1b_fsdp4
    network = NetworkModel.from_hardware(load_hardware("h100-sxm"), 4)
    before = simulate_module(base, network, bindings, fork=False)
    limit = before.peak_memory_bytes + 1  # no more memory than the step already needs
    module = base.clone()
    result = prefetch(module, StgPrefetch(memory_limit=limit), bindings=bindings)
    module.verify()
    after = simulate_module(module, network, bindings, fork=False)
    # 9 weights per layer body, forward and backward: 18 gathers that can start earlier
    # within their body, and lm_head's backward gather before the loss gradient
    assert result.moved == 19
    assert after.iteration_ns < 0.95 * before.iteration_ns  # measured: 29.87 -> 27.08 ms
    assert after.actors[0].exposed_communication_ns < 0.9 * before.actors[0].exposed_communication_ns
    assert after.actors[0].communication_ns == before.actors[0].communication_ns  # the same gathers
    assert after.peak_memory_bytes <= limit


def _fig6():
    module = Parser(make_context(), open(FIG6).read()).parse_module()
    return transformed(module, "builtin.module(stg-fully-shard, stg-schedule)")


def test_memory_limit_holds_on_fig6_for_every_limit():
    # Fig. 6's program (tests/lit/passes/stg-prefetch/fig6.mlir derives its sizes): the
    # unprefetched peak is 22528 bytes (an einsum with its gathered weight, input and
    # output); all three 8192-byte buffers at the start would make 22528 + 2 x 8192 =
    # 38912. For every M above the unprefetched peak the prefetched peak stays under M,
    # and M decides how far the gathers go.
    base = _fig6()
    assert ProfiledProgram(base, {}).memory.peak_bytes == 22528
    peaks = {}
    for limit in range(22529, 40001, 256):
        module = base.clone()
        prefetch(module, StgPrefetch(memory_limit=limit))
        peaks[limit] = ProfiledProgram(module, {}).memory.peak_bytes
        assert peaks[limit] < limit
    assert peaks[22529] == 22528 and peaks[max(peaks)] == 38912
    assert len(set(peaks.values())) == 3  # none, one, or two buffers prefetched (22528, 30720, 38912)


def test_fig6_from_a_profile_file_matches_the_cost_model(tmp_path):
    # the same decisions from a version 2 profile file (the cost model's, written and
    # read back) as from the profile the pass makes itself
    base = _fig6()
    path = tmp_path / "fig6.profile.json"
    profile_by_cost_model(base, {}).write(path)
    a, b = base.clone(), base.clone()
    prefetch(a, StgPrefetch(memory_limit=31000))
    b_pass = StgPrefetch(memory_limit=31000, profile=str(path))
    b_pass.apply(make_context(), b)
    assert str(a) == str(b)
    assert sum(isinstance(op, GroupOp) for op in a.walk()) == 1


@pytest.mark.parametrize("micro_batches", [1, 2])
def test_prefetched_step_equals_unsharded(micro_batches):
    config, module = train_step("llama", micro_batches, recompute=True)
    b = s = 4
    params, inputs = state(config, b, s, micro_batches)
    reference = run(module, params, inputs, b, s)
    sharded = transformed(module, "builtin.module(stg-shard{fsdp=2}, stg-match-collectives, stg-fully-shard, "
                                  "stg-schedule)")
    result = prefetch(sharded, StgPrefetch(), bindings={"B": b, "S": s, "M": micro_batches})
    assert result.moved > 0 and result.fused_groups > 0  # tiny gathers: latency-bound, fused
    sharded.verify()
    assert_same_step(reference, run(sharded, params, inputs, b, s), rtol=1e-12)
