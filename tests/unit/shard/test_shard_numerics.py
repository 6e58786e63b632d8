"""stg-shard keeps the numbers: a tiny Llama, GPT and MoE training step (2 micro-batches,
AdamW, float64) run unsharded and sharded on simulated ranks (the interpreter carries
out every stg.reshard on the ranks' tensors) give the same loss, parameters and
optimizer states to 1e-5 relative - in practice to rounding.

The MoE configs raise capacity_factor to E/top_k so that no token is dropped: with a
split batch each rank fills its own share of the capacity (GShard's per-group
capacity), so drops would legitimately differ from the unsharded program."""

from __future__ import annotations

import pytest
from tests.unit.shard.shard_testing import assert_same_step, run, state, train_step, transformed
B = S = 4
M = 2

STRATEGIES = {
    "dp": "dp=2",
    "fsdp": "fsdp=2",
    "tp": "tp=2",
    "tp+sp": "tp=2 sp=true",
    "cp": "cp=2",
    "dp+tp+sp": "dp=2 tp=2 sp=true",
    "fsdp+tp+cp": "fsdp=2 tp=2 sp=true cp=2",
    "dp+fsdp": "dp=2 fsdp=2",
    # ZeRO-1 and -2: the update on each rank's shard of the states
    "dp+zero1": "dp=2 zero=1",
    "dp+zero2": "dp=2 zero=2",
    "dp+cp+tp+sp+zero1": "dp=2 cp=2 tp=2 sp=true zero=1",
}
MOE_STRATEGIES = {
    "ep": "ep=2",
    "ep+tp": "ep=2 tp=2",
    "dp+ep+tp+sp": "dp=2 ep=2 tp=2 sp=true",
    # outside the experts over ep and dp, the experts' states over dp only
    "dp+ep+zero1": "dp=2 ep=2 zero=1",
}
# tp beyond the key/value heads: the tiny Llama's 2 kv heads over tp_kv = 2, tp_q = 2,
# and the tied one's single kv head (MQA) on all 4 ranks (tp_q = 4)
KV_REPLICA_STRATEGIES = {
    "tp4": "tp=4",
    "tp4+sp": "tp=4 sp=true",
    "dp+tp4+sp": "dp=2 tp=4 sp=true",
}
CASES = [(m, s) for m in ("llama", "gpt", "mixtral-nodrop") for s in STRATEGIES] + [
    (m, s) for m in ("mixtral-nodrop", "deepseek-moe-nodrop") for s in MOE_STRATEGIES
] + [(m, s) for m in ("llama", "llama-tied") for s in KV_REPLICA_STRATEGIES]


@pytest.mark.parametrize(("model", "strategy"), CASES, ids=[f"{m}-{s}" for m, s in CASES])
def test_sharded_step_equals_unsharded(model, strategy):
    options = {**STRATEGIES, **MOE_STRATEGIES, **KV_REPLICA_STRATEGIES}[strategy]
    config, module = train_step(model, M)
    params, inputs = state(config, B, S, M)
    reference = run(module, params, inputs, B, S)
    sharded = transformed(module, f"builtin.module(stg-shard{{{options}}})")
    assert any(op.name == "stg.reshard" for op in sharded.walk())
    assert_same_step(reference, run(sharded, params, inputs, B, S))
