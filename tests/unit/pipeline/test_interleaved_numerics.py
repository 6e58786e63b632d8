"""An interleaved pipelined training step (stg-pipeline schedule=interleaved-1f1b)
computes what the step it came from computes.

As tests/unit/pipeline/test_pipeline_numerics.py: each tiny template (float64, AdamW
with weight decay) runs whole on one rank and cut into pp ranks of v model chunks,
each rank's schedule on its own simulated rank (Interpreter.run_stages, which fails
on a message left unreceived or a deadlock). The loss, every parameter and every
optimizer state must agree to 1e-5 relative.
"""

from __future__ import annotations

import pytest
from tests.unit.pipeline.pipeline_testing import TINY, copy, initial_store, pipelined, run_stages, run_whole, train_step
from tests.unit.pipeline.test_pipeline_numerics import TOLERANCE, assert_same_step

CASES = [
    # (template, config overrides, pp, v, micro-batches); layers = a multiple of pp*v
    ("llama", {"num_hidden_layers": 4}, 2, 2, 4),  # chunks of 1 layer: 0.0 1.0 0.1 1.1
    ("llama", {"num_hidden_layers": 8}, 2, 2, 6),  # chunks of 2 layers; M = 6 != pp
    ("llama", {"num_hidden_layers": 4}, 2, 2, 2),  # M == pp: every forward first
    ("gpt", {"n_layer": 4}, 2, 2, 4),  # tied embedding (rank 0, chunk 0) and head (rank 1, chunk 1)
    ("deepseek-moe", {"num_hidden_layers": 4}, 2, 2, 4),  # 1 dense + 3 MoE layers: stacks cut across chunks
    ("mamba", {"num_hidden_layers": 6}, 3, 2, 3),
]


@pytest.mark.parametrize("name, overrides, pp, v, m", CASES,
                         ids=[f"{n}-pp{p}-v{v}-m{m}" for n, _, p, v, m in CASES])
def test_interleaved_step_matches_the_whole_step(name, overrides, pp, v, m):
    config = {**TINY[name], **overrides}
    module = train_step(config, micro_batches=m)
    before = initial_store(config, micro_batches=m)
    whole, staged = copy(before), copy(before)
    loss = run_whole(module, whole)
    staged_module = pipelined(module, pp=pp, schedule="interleaved-1f1b", virtual_stages=v)
    staged_loss = run_stages(staged_module, staged)
    assert abs(staged_loss.item() - loss.item()) <= TOLERANCE * abs(loss.item())
    assert_same_step(whole, staged, before)


def test_interleaved_after_sharding():
    """dp = 2 x tp = 2 first: the pp axis goes outermost, 2 x 4 = 8 ranks."""
    from stagec.dialects import make_context
    from stagec.passes.stg_shard import StgShard

    config = {**TINY["llama"], "num_hidden_layers": 4}
    module = train_step(config)
    StgShard(dp=2, tp=2).apply(make_context(), module)
    before = initial_store(config)
    whole, staged = copy(before), copy(before)
    loss = run_whole(module, whole)
    staged_loss = run_stages(pipelined(module, pp=2, schedule="interleaved-1f1b", virtual_stages=2), staged)
    assert staged_loss.item() == pytest.approx(loss.item(), rel=TOLERANCE)
    assert_same_step(whole, staged, before)
