"""A pipelined training step computes what the step it came from computes.

Each tiny template (float64, four micro-batches, AdamW with weight decay) runs once
whole (@train_step on one rank) and once cut into stages by stg-pipeline, every
stage's schedule on its own simulated rank (Interpreter.run_stages, which also fails
if a message is left unreceived). The loss, every parameter and every optimizer state
must agree to 1e-5 relative; in practice they agree to the last bit or within a few
ulps (gradient terms summed in another order: GPipe's backwards run last micro-batch
first, a tied weight's two partial gradients meet in the all-reduce).
"""

from __future__ import annotations

import pytest
import torch
from tests.unit.pipeline.pipeline_testing import TINY, copy, initial_store, pipelined, run_stages, run_whole, train_step

from stagec.dialects import make_context

TOLERANCE = 1e-5


def assert_same_step(whole, staged, before) -> None:
    assert staged.params.keys() == whole.params.keys()
    assert staged.states.keys() == whole.states.keys()
    for table in ("params", "states"):
        for key, expected in getattr(whole, table).items():
            actual = getattr(staged, table)[key]
            scale = float(expected.abs().max()) or 1.0
            error = float((actual - expected).abs().max()) / scale
            assert error <= TOLERANCE, (table, key, error)
    for name, value in before.params.items():
        # the comparison is not vacuous: the step moved every weight
        assert not torch.equal(whole.params[name], value), name


CASES = [
    # (template, config overrides, stages): pp = 2, and pp = the number of layers
    ("llama", {"num_hidden_layers": 4}, 2),
    ("llama", {"num_hidden_layers": 4}, 4),
    ("gpt", {"n_layer": 3}, 2),  # tied embedding and head; 3 layers: 2 + 1
    ("gpt", {"n_layer": 3}, 3),
    ("llama-tied", {}, 2),
    ("mixtral", {}, 2),
    ("deepseek-moe", {}, 2),  # two stacks, L = 1 dense then L2 = 2 MoE layers: [1 + 1, 1]
    ("deepseek-moe", {}, 3),
    ("mamba", {}, 2),
]


@pytest.mark.parametrize("schedule", ["1f1b", "gpipe"])
@pytest.mark.parametrize("name, overrides, pp", CASES, ids=[f"{n}-pp{p}" for n, _, p in CASES])
def test_pipelined_step_matches_the_whole_step(name, overrides, pp, schedule):
    config = {**TINY[name], **overrides}
    module = train_step(config)
    before = initial_store(config)
    whole, staged = copy(before), copy(before)
    loss = run_whole(module, whole)
    staged_loss = run_stages(pipelined(module, pp=pp, schedule=schedule), staged)
    assert abs(staged_loss.item() - loss.item()) <= TOLERANCE * abs(loss.item())
    assert_same_step(whole, staged, before)


def test_recompute_pipelines_too():
    """With activation recompute each stage saves only its layers' inputs."""
    config = {**TINY["llama"], "num_hidden_layers": 4}
    module = train_step(config, recompute=True)
    before = initial_store(config)
    whole, staged = copy(before), copy(before)
    loss = run_whole(module, whole)
    assert run_stages(pipelined(module, pp=2), staged).item() == pytest.approx(loss.item(), rel=TOLERANCE)
    assert_same_step(whole, staged, before)


def test_sharded_step_pipelines_on_an_outer_axis():
    """A step sharded over dp and tp first: pp becomes the outermost axis (8 ranks),
    the types stay as stg-shard left them, and each stage runs on its dp x tp ranks."""
    from stagec.passes.stg_shard import StgShard

    config = {**TINY["llama"], "num_hidden_layers": 2}
    module = train_step(config)
    StgShard(dp=2, tp=2).apply(make_context(), module)
    staged_module = pipelined(module, pp=2)
    mesh = next(op for op in staged_module.ops if op.name == "stg.mesh")
    assert mesh.axis_names == ("pp", "dp", "tp")
    before = initial_store(config)
    whole, staged = copy(before), copy(before)
    loss = run_whole(module, whole)
    assert run_stages(staged_module, staged).item() == pytest.approx(loss.item(), rel=TOLERANCE)
    assert_same_step(whole, staged, before)


def test_two_steps_in_a_row():
    """The store a pipelined step leaves (tied-gradient copies zeroed, Adam's step
    counted once per copy) is a good start for the next step."""
    config = TINY["gpt"]
    module = train_step(config)
    staged_module = pipelined(module, pp=2)
    before = initial_store(config)
    whole, staged = copy(before), copy(before)
    for _ in range(2):
        loss = run_whole(module, whole)
        assert run_stages(staged_module, staged).item() == pytest.approx(loss.item(), rel=TOLERANCE)
    assert_same_step(whole, staged, before)
