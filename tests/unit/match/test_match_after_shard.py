"""stg-shard then stg-match-collectives keeps the numbers: a tiny Llama and GPT training
step, sharded and with every stg.reshard replaced by collectives, gives the unsharded
step's loss, parameters and optimizer states on simulated ranks."""

from __future__ import annotations

import pytest

from tests.unit.shard.shard_testing import assert_same_step, run, state, train_step, transformed

B = S = 4
M = 2
COLLECTIVES = {"stg.all_gather", "stg.reduce_scatter", "stg.all_reduce", "stg.all_to_all", "stg.local_slice"}


@pytest.mark.parametrize(
    ("model", "options"),
    [("llama", "dp=2 tp=2 sp=true"), ("gpt", "tp=2 sp=true")],
)
def test_matched_step_equals_unsharded(model, options):
    config, module = train_step(model, M)
    params, inputs = state(config, B, S, M)
    reference = run(module, params, inputs, B, S)
    sharded = transformed(module, f"builtin.module(stg-shard{{{options}}})")
    matched = transformed(sharded, "builtin.module(stg-match-collectives)")
    names = [op.name for op in matched.walk()]
    assert "stg.reshard" not in names
    assert COLLECTIVES & set(names)
    assert_same_step(reference, run(matched, params, inputs, B, S))
