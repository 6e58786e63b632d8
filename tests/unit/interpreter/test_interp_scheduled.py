"""The scheduled form computes what the step it came from computes: a sharded (or
pipelined) tiny training step, run on simulated ranks once as stg-match-collectives /
stg-pipeline left it and once after the scheduling passes (`schedule(module)`: fused
GEMMs and FSDP units as stg.group, every collective async on its stream with a
stg.wait before its first use, gradient buckets), gives bit-identical parameters and
optimizer states: scheduling changes when ops are issued, never the arithmetic of one
of them nor the order of a sum. The loss is equal to rounding: over a split vocab,
stg-vocab-parallel-cross-entropy computes it as Megatron does (log of the sum of
exp(logit - max), plus the max, minus the label's logit), not by logsumexp. Each case also checks the scheduled step against the
unsharded one to the tolerance of the sharding tests (tests/unit/shard), so that the
equality is not one between two wrong steps."""

from __future__ import annotations

import pytest
import torch
from stagec.dialects.stg.comm import CollectiveOp, LocalSliceOp
from stagec.dialects.stg.memory import WaitOp
from stagec.dialects.stg.schedule import SCHEDULED, GroupOp
from stagec.passes.schedule.pipeline import schedule

from tests.unit.pipeline import pipeline_testing
from tests.unit.shard.shard_testing import (
    assert_same_step,
    run,
    state,
    train_step,
    transformed,
)

B = S = 4
M = 2


def assert_identical(expected, actual) -> None:
    """Every parameter and optimizer state equal to the last bit, the loss to rounding
    (module doc)."""
    (loss_a, a), (loss_b, b) = expected, actual
    torch.testing.assert_close(loss_b, loss_a, rtol=1e-14, atol=0)
    assert a.params.keys() == b.params.keys() and a.states.keys() == b.states.keys()
    for name in a.params:
        assert torch.equal(b.params[name], a.params[name]), name
    for key in a.states:
        assert torch.equal(b.states[key], a.states[key]), key


def groups(module) -> tuple[int, int]:
    """(compute groups, collective groups) in `module`."""
    found = [op for op in module.walk() if isinstance(op, GroupOp)]
    coalesced = sum(1 for g in found if g.collective_kind() is not None)
    return len(found) - coalesced, coalesced


def assert_scheduled(module) -> None:
    """What makes the comparison a test of the scheduled form: every function marked,
    every collective outside a group async on a stream and waited for."""
    funcs = [op for op in module.ops if op.name == "func.func"]
    assert funcs and all(SCHEDULED in f.attributes for f in funcs)
    # (a stg.local_slice moves nothing: it stays synchronous)
    collectives = [op for op in module.walk() if isinstance(op, CollectiveOp) and not isinstance(op, LocalSliceOp)
                   and not isinstance(op.parent_op(), GroupOp)]
    assert collectives and all(op.is_async is not None and op.properties.get("stream") for op in collectives)
    assert any(isinstance(op, WaitOp) for op in module.walk())


# (model, stg-shard options, at least this many compute groups, collective groups)
CASES = {
    # Megatron TP + SP under DP: Q/K/V and gate/up fused, the gathers async
    "llama-dp+tp+sp": ("llama", "dp=2 tp=2 sp=true", 1, 0),
    # tensor parallel alone, with GEMM fusion (the fused projections and their
    # summed input gradients)
    "llama-tp": ("llama", "tp=2", 1, 0),
    # GPT-2's c_attn is one GEMM already: nothing to fuse, the all-reduces async
    "gpt-tp": ("gpt", "tp=2", 0, 0),
    # FSDP: each layer's parameter gathers and gradient scatters are units (groups)
    "llama-fsdp": ("llama", "fsdp=2", 1, 1),
    # ZeRO-1: states sharded over dp, gradients reduce-scattered, parameters gathered
    "llama-zero1": ("llama", "dp=2 zero=1", 1, 0),
    # expert parallel on the tiny MoE: the dispatch and combine all-to-alls async
    "mixtral-ep": ("mixtral-nodrop", "ep=2", 1, 0),
}


@pytest.mark.parametrize("case", list(CASES))
def test_scheduled_step_equals_unscheduled(case):
    model, options, compute_groups, collective_groups = CASES[case]
    config, module = train_step(model, M)
    params, inputs = state(config, B, S, M)
    matched = transformed(module, f"builtin.module(stg-shard{{{options}}},stg-match-collectives)")
    scheduled = schedule(matched.clone())
    scheduled.verify()
    assert_scheduled(scheduled)
    made = groups(scheduled)
    assert made[0] >= compute_groups and made[1] >= collective_groups, made
    unscheduled = run(matched, params, inputs, B, S)
    result = run(scheduled, params, inputs, B, S)
    assert_identical(unscheduled, result)
    assert_same_step(run(module, params, inputs, B, S), result)


@pytest.mark.parametrize("recompute", [False, True])
def test_reused_exchanges_leave_the_moe_step_unchanged(recompute):
    """stg-reuse-exchanges on the tiny MoE under ep=2: the backward's all-to-alls of the
    saved (or, with recompute, the recompute phase's) tokens and expert outputs go -
    2 ops of the layer body - and the step computes what it did."""
    from stagec.dialects.stg.comm import AllToAllOp
    from stagec.passes.stg_reuse_exchanges import reuse_exchanges

    config, module = train_step("mixtral-nodrop", M, recompute=recompute)
    params, inputs = state(config, B, S, M)
    matched = transformed(module, "builtin.module(stg-shard{ep=2},stg-match-collectives)")
    reused = matched.clone()
    exchanges = lambda m: sum(isinstance(op, AllToAllOp) for op in m.walk())  # noqa: E731
    assert reuse_exchanges(reused) == 2
    reused.verify()
    assert exchanges(reused) == exchanges(matched) - 2
    assert_identical(run(matched, params, inputs, B, S), run(reused, params, inputs, B, S))


def test_scheduled_pipeline_equals_unscheduled():
    """pp = 2 with 1F1B: the sends and receives async on their peer streams, a send's
    token waited at the end of its block, the stages in their own threads."""
    config = {**pipeline_testing.TINY["llama"], "num_hidden_layers": 4}
    module = pipeline_testing.train_step(config)
    before = pipeline_testing.initial_store(config)
    staged = pipeline_testing.pipelined(module, pp=2, schedule="1f1b")
    scheduled = schedule(staged.clone())
    scheduled.verify()
    assert_scheduled_p2p(scheduled)
    assert groups(scheduled)[0] >= 1
    unscheduled_store, scheduled_store, whole_store = (pipeline_testing.copy(before) for _ in range(3))
    unscheduled = pipeline_testing.run_stages(staged, unscheduled_store)
    result = pipeline_testing.run_stages(scheduled, scheduled_store)
    assert_identical((unscheduled, unscheduled_store), (result, scheduled_store))
    whole = pipeline_testing.run_whole(module, whole_store)
    assert result.item() == pytest.approx(whole.item(), rel=1e-5)
    for name, value in whole_store.params.items():
        torch.testing.assert_close(scheduled_store.params[name], value, rtol=1e-5, atol=1e-12, msg=name)


def assert_scheduled_p2p(module) -> None:
    funcs = [op for op in module.ops if op.name == "func.func"]
    assert all(SCHEDULED in f.attributes for f in funcs)
    p2p = [op for op in module.walk() if op.name in ("stg.send", "stg.recv")]
    assert p2p and all(op.properties.get("async") is not None for op in p2p)
    streams = {op.properties["stream"].data for op in p2p}
    assert {"send:pp=1", "recv:pp=1", "send:pp=0", "recv:pp=0"} <= streams, streams

