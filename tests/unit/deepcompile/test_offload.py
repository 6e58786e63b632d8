"""stg-offload (deepcompile.md §4.4, Algorithm 2): the memory limit holds by the memory
analysis, which frees an offloaded fragment at its wait and takes it back at its
reload; properties over random steps (hypothesis); the offloaded step (alone, and after
prefetch and unshard) computes what the reference step computes; copies run on the
simulator's copy engine and the traces pass `stagec check-trace`."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.deepcompile.random_steps import layer, program
from tests.unit.deepcompile.schedule_checks import check_gathered_buffers
from tests.unit.shard.shard_testing import assert_same_step, run, state, train_step, transformed
from xdsl.parser import Parser

from stagec.dialects import make_context
from stagec.dialects.stg.memory import OffloadOp, ReloadOp, WaitOp
from stagec.dialects.stg.state import AssignOp
from stagec.dialects.stg.structure import PhaseOp
from stagec.passes.stg_fully_shard import fully_shard
from stagec.passes.stg_offload import StgOffload, offload
from stagec.passes.stg_prefetch import StgPrefetch, prefetch
from stagec.passes.stg_schedule import schedule_streams
from stagec.passes.stg_unshard import StgUnshard, unshard
from stagec.runtime.cost.profiling import ProfiledProgram

FULLY_SHARDED = "builtin.module(stg-shard{fsdp=2}, stg-match-collectives, stg-fully-shard, stg-schedule)"
SYNC_POINT = "tests/lit/passes/stg-offload/sync-point.mlir"


def _memory(module, bindings=None):
    return ProfiledProgram(module, bindings or {}).memory


def _states_series(memory) -> np.ndarray:
    return memory.timeline.live[:, memory.timeline.kinds.index("optimizer_states")]


def test_the_memory_analysis_frees_at_the_wait_and_allocates_at_the_reload():
    # the lit test's program (sync-point.mlir) with the cost model's own profile: its
    # optimizer states are three [8/fsdp, 64] f32 tensors, 1024 bytes each per rank
    module = Parser(make_context(), open(SYNC_POINT).read()).parse_module()
    schedule_streams(module)
    before = _memory(module)
    assert before.persistent["optimizer_states"] == 3072
    result = offload(module, StgOffload(memory_limit=before.peak_bytes - 1024))
    after = _memory(module)
    # one 1024-byte fragment covers a 1024-byte excess: peak - 1024
    assert result.offloaded == ["exp_avg of w"] and result.offloaded_bytes == 1024
    assert after.peak_bytes == before.peak_bytes - 1024
    series = _states_series(after)
    names = [e.op for e in after.timeline.entries()]
    wait = next(i for i, e in enumerate(after.timeline.entries()) if e.op == "stg.wait")
    reload = names.index("stg.reload")
    # resident until the copy is waited for, off the device until the reload issues
    assert series[wait - 1] == 3072 and series[wait + 1] == 2048
    assert series[reload - 1] == 2048 and series[reload] == 3072
    assert series.min() == 2048 and series[-1] == 3072


def _limit(memory, fraction: float) -> int:
    """M = the peak less `fraction` of the optimizer states, but no lower than what
    offloading can reach: the memory where the forward starts (every state still on
    the device) and in the optimizer step (every state back)."""
    entries = memory.timeline.entries()
    totals = memory.timeline.totals()
    forward = next(i for i, e in enumerate(entries) if e.phase.startswith("forward"))
    floor = max(int(totals[max(forward - 1, 0)]),
                max((int(t) for e, t in zip(entries, totals) if e.phase.startswith("optimizer")), default=0))
    return max(floor, int(memory.peak_bytes - fraction * memory.persistent["optimizer_states"]))


def _scheduled(layers):
    module = Parser(make_context(), program(layers)).parse_module()
    fully_shard(module)
    schedule_streams(module)
    return module


@settings(max_examples=30, deadline=None)
@given(st.lists(layer, min_size=1, max_size=4), st.floats(0.05, 1.0), st.booleans(),
       st.sampled_from(["selective", "all-sync"]))
def test_offload_properties(layers, fraction, optimized, mode):
    # For M from the peak down by a fraction of the optimizer states: after (prefetch,
    # unshard and) offload the memory analysis's peak is at most M; the fragments the
    # pass offloaded are all off the device at once (after the last wait, before the
    # first reload) and all back at the end; the gathered buffers keep their order.
    module = _scheduled(layers)
    if optimized:
        roomy = _memory(module).peak_bytes + 8192
        prefetch(module, StgPrefetch(memory_limit=roomy))
        unshard(module, StgUnshard(memory_limit=roomy))
    before = _memory(module)
    states = before.persistent["optimizer_states"]
    limit = _limit(before, fraction)
    result = offload(module, StgOffload(memory_limit=limit, mode=mode))
    module.verify()
    after = _memory(module)
    assert after.peak_bytes <= limit
    series = _states_series(after)
    assert series.min() == states - result.offloaded_bytes and series[-1] == states
    if mode == "all-sync":
        assert result.offloaded_bytes == states
    elif result.offloaded:  # only what exceeds M: without the last fragment chosen the peak is over M
        assert before.peak_bytes - (result.offloaded_bytes - result.fragment_bytes[-1]) > limit
    assert sum(isinstance(op, OffloadOp) for op in module.walk()) == len(result.offloaded)
    assert sum(isinstance(op, ReloadOp) for op in module.walk()) == len(result.offloaded)
    check_gathered_buffers(module)
    _check_back_before_the_step(module)


def _check_back_before_the_step(module) -> None:
    """Every reloaded state is waited for and assigned back before the optimizer
    step's first op (other than the reloads), in execution order."""
    function = next(op for op in module.walk() if op.name == "func.func")
    order = list(function.walk())
    backs = [i for i, op in enumerate(order) if isinstance(op, AssignOp) and isinstance(op.value.owner, WaitOp)
             and isinstance(op.value.owner.token.owner, ReloadOp)]
    copies = {i for i, op in enumerate(order) if isinstance(op, ReloadOp) or
              (isinstance(op, WaitOp) and isinstance(op.token.owner, ReloadOp))} | set(backs)
    phase = next((op for op in order if isinstance(op, PhaseOp) and op.kind.data == "optimizer"), None)
    inside = {id(op) for op in phase.walk()} - {id(phase)} if phase is not None else set()
    step = next((i for i, op in enumerate(order) if id(op) in inside and i not in copies), len(order))
    assert len(backs) == sum(isinstance(op, ReloadOp) for op in order)
    assert all(i < step for i in backs), "a reloaded state is assigned after the optimizer step began"


def _offload_limit(module, bindings) -> int:
    return _limit(_memory(module, bindings), 0.5)


@pytest.mark.parametrize("name,micro_batches", [("llama", 1), ("llama", 4), ("mixtral-nodrop", 1),
                                                pytest.param("mixtral-nodrop", 4, marks=pytest.mark.scale)])
def test_offloaded_step_equals_the_reference(name, micro_batches):
    # float64 tiny models on 2 simulated ranks, half the optimizer states' bytes over
    # the limit: offloaded alone, and after prefetch and unshard (both with room for
    # more buffers, then offload under the new peak), the step computes the loss,
    # parameters and Adam states of the reference step to 1e-12
    config, module = train_step(name, micro_batches, recompute=True)
    b = s = 4
    bindings = {"B": b, "S": s, "M": micro_batches}
    params, inputs = state(config, b, s, micro_batches)
    reference = run(module, params, inputs, b, s)
    sharded = transformed(module, FULLY_SHARDED)

    alone = sharded.clone()
    limit = _offload_limit(alone, bindings)
    result = offload(alone, StgOffload(memory_limit=limit), bindings=bindings)
    assert result.offloaded
    alone.verify()
    assert _memory(alone, bindings).peak_bytes <= limit
    assert_same_step(reference, run(alone, params, inputs, b, s), rtol=1e-12)

    combined = sharded.clone()
    roomy = _memory(combined, bindings).peak_bytes * 2
    prefetch(combined, StgPrefetch(memory_limit=roomy), bindings=bindings)
    assert unshard(combined, StgUnshard(memory_limit=roomy), bindings=bindings).kept
    limit = _offload_limit(combined, bindings)
    assert offload(combined, StgOffload(memory_limit=limit), bindings=bindings).offloaded
    combined.verify()
    assert _memory(combined, bindings).peak_bytes <= limit
    _check_back_before_the_step(combined)
    assert_same_step(reference, run(combined, params, inputs, b, s), rtol=1e-12)


def test_copies_run_on_the_copy_engine_and_the_traces_check(tmp_path):
    # tiny Llama, fsdp=2, selective offload: every offload and reload is a node on the
    # simulator's copy engine (its busy time is theirs: the cost model's host-link time
    # per copy), not on the compute stream; the emitted traces pass check-trace
    from stagec.runtime.chakra.check import check_trace
    from stagec.runtime.chakra.emit import build_programs, emit_traces
    from stagec.runtime.cost.hardware_description import load_hardware
    from stagec.runtime.cost.model import CostModel
    from stagec.runtime.sim.network import NetworkModel
    from stagec.runtime.sim.simulate import simulate_module

    _, module = train_step("llama", 1, recompute=True)
    bindings = {"B": 4, "S": 4}
    sharded = transformed(module, FULLY_SHARDED)
    limit = _offload_limit(sharded, bindings)
    result = offload(sharded, StgOffload(memory_limit=limit), bindings=bindings)
    cost = CostModel("h100-sxm")
    env = ProfiledProgram(sharded, bindings).env
    copies = [op for op in sharded.walk() if isinstance(op, (OffloadOp, ReloadOp))]
    assert len(copies) == 2 * len(result.offloaded)
    expected_ns = sum(round(cost.op_cost(op, env).micros * 1000) for op in copies)
    report = simulate_module(sharded, NetworkModel.from_hardware(load_hardware("h100-sxm"), 2), bindings, fork=False)
    actor = report.actors[0]
    assert abs(actor.copy_ns - expected_ns) <= len(copies)  # each node rounded to 1 ns
    # the simulator's memory is the memory analysis's, offloaded bytes freed at their
    # waits and allocated again at their reloads: under the limit the pass was given
    assert report.peak_memory_bytes == _memory(sharded, bindings).peak_bytes <= limit
    programs, _ = build_programs(sharded, bindings)
    program = programs[0]
    assert program.counts().get("copy") == len(copies)
    # each copy is waited for: the compute node after its stg.wait depends on it, so
    # a freed buffer is gone and a reloaded state is back only once the copy is done
    copy_nodes = {n for n, st in enumerate(program.node_static) if program.statics[st].category == "copy"}
    blocked = {d for n, st in enumerate(program.node_static) if program.statics[st].category != "copy"
               for d in program.node_ctrl[n] + program.node_data[n]}
    assert copy_nodes and copy_nodes <= blocked
    # an offload feeds no compute node with data: only the wait's barrier orders it
    offloads = {n for n in copy_nodes if "offload" in program.statics[program.node_static[n]].label}
    in_ctrl = {d for n, st in enumerate(program.node_static) if program.statics[st].category != "copy"
               for d in program.node_ctrl[n]}
    assert len(offloads) == len(result.offloaded) and offloads <= in_ctrl
    emit_traces(sharded, str(tmp_path), bindings)
    check = check_trace(str(tmp_path))
    assert check.defects == [] and sorted(check.ranks) == [0, 1]


def test_prefetched_unsharded_offloaded_traces_check(tmp_path):
    # tiny Llama, fsdp=2, two micro-batches, after all three passes (the unsharded
    # layer stacks' prologue loops, the fused prefetch groups, the copies): the traces
    # pass check-trace, and hold one all-gather per kept parameter per layer for the
    # step where each micro-batch gathered them in its forward and backward
    from stagec.runtime.chakra.check import check_trace
    from stagec.runtime.chakra.emit import emit_traces

    _, module = train_step("llama", 2, recompute=True)
    bindings = {"B": 4, "S": 4, "M": 2}
    sharded = transformed(module, FULLY_SHARDED)
    roomy = _memory(sharded, bindings).peak_bytes * 2
    prefetch(sharded, StgPrefetch(memory_limit=roomy), bindings=bindings)
    kept = unshard(sharded, StgUnshard(memory_limit=roomy), bindings=bindings)
    offload(sharded, StgOffload(memory_limit=_offload_limit(sharded, bindings)), bindings=bindings)
    emit_traces(sharded, str(tmp_path), bindings)
    check = check_trace(str(tmp_path))
    assert check.defects == []
    # every parameter is kept (room for all): the tiny Llama's 12 parameters, 9 of them
    # per layer of 2 layers, are gathered 3 + 9 x 2 = 21 times a step (tests/unit/
    # templates/tiny_configs.py: L = 2), not per micro-batch and graph
    assert len(kept.kept) == 12
    assert check.ranks[0]["ALL_GATHER"]["count"] == 3 + 9 * 2
