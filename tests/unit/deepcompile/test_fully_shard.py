"""stg-fully-shard (deepcompile.md §4.1, Fig. 4) on tiny templates: one all-gather per
parameter per graph, a release after its last use, and the same training step as the
unsharded program (float64, the interpreter running every rank)."""

from __future__ import annotations

import pytest
from tests.unit.shard.shard_testing import assert_same_step, run, state, train_step, transformed

from stagec.dialects.stg.comm import AllGatherOp
from stagec.dialects.stg.memory import ReleaseOp

B = S = 4
PIPELINE = "builtin.module(stg-shard{fsdp=2}, stg-match-collectives, stg-fully-shard)"


def _gathers(module) -> int:
    return sum(isinstance(op, AllGatherOp) for op in module.walk())


@pytest.mark.parametrize(("model", "micro_batches", "recompute"),
                         [("llama", 1, True), ("llama-tied", 2, False), ("mixtral-nodrop", 4, True)])
def test_fully_sharded_step_equals_unsharded(model, micro_batches, recompute):
    config, module = train_step(model, micro_batches, recompute=recompute)
    params, inputs = state(config, B, S, micro_batches)
    reference = run(module, params, inputs, B, S)
    sharded = transformed(module, PIPELINE)
    assert any(isinstance(op, ReleaseOp) for op in sharded.walk())
    assert_same_step(reference, run(sharded, params, inputs, B, S), rtol=1e-12)


def test_recompute_gathers_each_layer_weight_once_in_the_backward():
    # tiny llama, 2 layers: 9 weights per layer body + embed, norm, lm_head.
    # stg-shard alone gathers forward 9 (body) + 3 = 12, backward 9 (recompute)
    # + 9 (backward) + 3 (lm_head, norm, embed) = 21: 33 all-gather ops.
    # Fully sharded, the backward body gathers each weight once: 12 + 9 + 3 = 24.
    _, module = train_step("llama", 1, recompute=True)
    sharded = transformed(module, "builtin.module(stg-shard{fsdp=2}, stg-match-collectives)")
    assert _gathers(sharded) == 33
    fully = transformed(sharded, "builtin.module(stg-fully-shard)")
    assert _gathers(fully) == 24
    # one release per all-gather (every buffer dies inside the step)
    assert sum(isinstance(op, ReleaseOp) for op in fully.walk()) == 24
    again = transformed(fully, "builtin.module(stg-fully-shard)")
    assert str(again) == str(fully)


def test_tied_embedding_is_gathered_once_in_the_forward():
    # llama-tied: embed_tokens feeds the embedding and the output projection. The
    # forward gathers it once (12 - 1 = 11 gathers: no lm_head weight, 9 per body,
    # norm, embed) and releases it after the logits.
    _, module = train_step("llama-tied", 1)
    fully = transformed(module, PIPELINE)
    forward = next(op for op in fully.walk() if op.name == "stg.phase" and op.kind.data.value == "forward")
    names = [op.input.owner.tensor_name.data for op in forward.walk() if isinstance(op, AllGatherOp)]
    assert names.count("model.embed_tokens.weight") == 1
    ops = list(forward.body.block.ops)
    release = next(op for op in ops if isinstance(op, ReleaseOp) and op.operands[0].owner.name == "stg.all_gather"
                   and op.operands[0].owner.input.owner.tensor_name.data == "model.embed_tokens.weight")
    logits = next(op for op in ops if op.name == "stg.einsum" and "v" in op.properties["equation"].data.split("->")[1])
    assert ops.index(release) == ops.index(logits) + 1
