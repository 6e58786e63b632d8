"""stg-vocab-parallel-cross-entropy: the cross-entropy over a split vocab made
Megatron's - local statistics, three all-reduces (one by max), the combine - computes
the loss, and the step, the fused cross-entropy computed (float64, simulated ranks)."""

from __future__ import annotations

import pytest
from stagec.dialects.stg.comm import AllReduceOp
from stagec.dialects.stg.model_ops import (
    CrossEntropyOp,
    VocabCrossEntropyOp,
    VocabStatOp,
)

from tests.unit.shard.shard_testing import (
    assert_same_step,
    run,
    state,
    train_step,
    transformed,
)

STRATEGIES = {
    "tp2": "stg-shard{tp=2}",
    "dp2 tp2 sp": "stg-shard{dp=2 tp=2 sp=true}",
    "tp4 over 2 kv heads": "stg-shard{tp=4}",
}


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
@pytest.mark.parametrize("model", ["llama", "gpt"])
def test_decomposed_cross_entropy_step_equals_fused(model, strategy):
    config, module = train_step(model, micro_batches=2)
    sharded = f"builtin.module({STRATEGIES[strategy]},stg-match-collectives)"
    fused = transformed(module, sharded)
    megatron = transformed(module, sharded[:-1] + ",stg-vocab-parallel-cross-entropy)")
    ops = list(megatron.walk())
    # the forward's loss per micro-batch: three statistics, three all-reduces, a combine
    assert sum(isinstance(op, VocabStatOp) for op in ops) == 3
    assert sum(isinstance(op, VocabCrossEntropyOp) for op in ops) == 1
    assert sum(isinstance(op, AllReduceOp) and op.maximum is not None for op in ops) == 1
    # the stg.vjp keeps its fused cross-entropy to differentiate
    assert sum(isinstance(op, CrossEntropyOp) for op in ops) == 1
    b, s = 4, 8
    params, inputs = state(config, b, s, micro_batches=2)
    assert_same_step(run(fused, params, inputs, b, s), run(megatron, params, inputs, b, s), rtol=1e-12)
