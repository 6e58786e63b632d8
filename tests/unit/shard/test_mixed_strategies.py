"""Mixed strategies, tensor- and graph-level together: stg-shard, the matched
collectives and stg-pipeline on one tiny training step (4 micro-batches, AdamW,
float64), run stage by stage on simulated ranks, equal the whole unsharded step - the
loss, every updated parameter and every optimizer state, to 1e-5 relative."""

from __future__ import annotations

import pytest
import torch

from tests.unit.pipeline.pipeline_testing import copy, initial_store, run_stages, run_whole, train_step
from tests.unit.shard.shard_testing import CONFIGS, transformed

MIXES = [
    ("llama", "stg-shard{dp=2 tp=2 sp=true},stg-match-collectives,stg-pipeline{pp=2}"),
    ("gpt", "stg-shard{fsdp=2 tp=2 sp=true},stg-match-collectives,stg-pipeline{pp=2 schedule=gpipe}"),
    ("mixtral-nodrop", "stg-shard{ep=2 tp=2},stg-match-collectives,stg-pipeline{pp=2}"),
    ("llama", "stg-shard{cp=2 dp=2},stg-match-collectives,stg-pipeline{pp=2 schedule=1f1b}"),
]


@pytest.mark.parametrize(("model", "pipeline"), MIXES, ids=[f"{m}:{p.split(',')[0]}+pp" for m, p in MIXES])
def test_mixed_strategy_equals_unsharded(model, pipeline):
    module = train_step(CONFIGS[model])
    store = initial_store(CONFIGS[model])
    whole, staged = copy(store), copy(store)
    loss = run_whole(module, whole)
    distributed = transformed(module, f"builtin.module({pipeline})")
    assert {"stg.send", "stg.recv"} <= {op.name for op in distributed.walk()}
    assert not any(op.name == "stg.reshard" for op in distributed.walk())
    torch.testing.assert_close(run_stages(distributed, staged), loss, rtol=1e-5, atol=0)
    for name in whole.params:
        torch.testing.assert_close(staged.params[name], whole.params[name], rtol=1e-5, atol=1e-12, msg=name)
    assert staged.states.keys() == whole.states.keys()
    for key in whole.states:
        torch.testing.assert_close(staged.states[key], whole.states[key], rtol=1e-5, atol=1e-12, msg=str(key))
