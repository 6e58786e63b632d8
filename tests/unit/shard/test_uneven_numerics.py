"""Uneven FSDP / ZeRO shards keep the numbers: a tiny Llama (H = 16, V = 32, L = 2,
KV*D = 8) sharded with fsdp = 3 - a degree dividing neither the hidden size, the
vocabulary nor the layer count, so the norms, embeddings and attention projections
are padded (docs/sharding.md, "Uneven shards") - and ZeRO-1/2 over dp = 3, run on
simulated ranks (the interpreter pads each shard with zeros and drops the padding when
a padded dim is gathered), give the unsharded step's loss, parameters and AdamW states
in float64 to 1e-12 relative."""

from __future__ import annotations

import pytest
from tests.unit.shard.shard_testing import assert_same_step, run, state, train_step, transformed

B, S, M = 3, 4, 2
CASES = {
    "fsdp3": "fsdp=3",
    "fsdp3+tp2": "fsdp=3 tp=2",
    "dp3+zero1": "dp=3 zero=1",
    "dp3+zero2": "dp=3 zero=2",
}


@pytest.mark.parametrize("strategy", CASES)
def test_padded_step_equals_unsharded(strategy):
    config, module = train_step("llama", M)
    params, inputs = state(config, B, S, M)
    reference = run(module, params, inputs, B, S)
    sharded = transformed(module, f"builtin.module(stg-shard{{{CASES[strategy]}}})")
    padded = {
        op.tensor_name.data
        for op in sharded.walk()
        if op.name == "stg.param" and any(d.padded_extent for d in op.result.type.dims.data)
    }
    # the norms' [L, H] = [2, 16] at least are padded whichever the strategy (3 divides neither)
    assert "model.layers.input_layernorm.weight" in padded or strategy.startswith("dp3")
    assert_same_step(reference, run(sharded, params, inputs, B, S), rtol=1e-12)
