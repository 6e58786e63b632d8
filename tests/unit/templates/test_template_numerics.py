"""Every template's @forward, run by the reference interpreter in float64, against an
independently written PyTorch model with the same weights (torch_models.py): the
losses agree to 1e-10 relative; and the training step stg-autodiff makes of it moves
every parameter by torch autograd's gradient."""

from __future__ import annotations

import pytest
import torch
from tests.unit.templates.tiny_configs import TINY
from tests.unit.templates.torch_models import reference_model, stg_state

from stagec.dialects import make_context
from stagec.frontends.templates import build_model, example_inputs, load_config, rope_angles
from stagec.passes.stg_autodiff import StgAutodiff
from stagec.runtime import interpreter

B, S = 2, 6


def reference_loss(model, config, inputs) -> torch.Tensor:
    if config.family == "gpt":
        return model(inputs["input_ids"], inputs["labels"], inputs["position_ids"])
    if config.family == "mamba":
        return model(inputs["input_ids"], inputs["labels"])
    return model(inputs["input_ids"], inputs["labels"], inputs["rope.angles"])


@pytest.mark.parametrize("name", sorted(TINY))
def test_forward_matches_torch(name):
    config = load_config(TINY[name])
    module = build_model(config, "f64")
    model = reference_model(config)
    inputs = example_inputs(config, B, S, "f64")
    with torch.no_grad():
        expected = reference_loss(model, config, inputs)

    store = interpreter.StateStore(params=stg_state(model), inputs=inputs)
    (loss,) = interpreter.Interpreter(module, bindings={"B": B, "S": S}).run("forward", store)

    assert loss.dtype == torch.float64 and loss.shape == ()
    assert abs(loss.item() - expected.item()) <= 1e-10 * abs(expected.item()), (loss.item(), expected.item())
    if config.num_local_experts:
        # the capacity of C = capacity_factor * top_k * B * S / E slots was exceeded
        assert model.dropped() > 0


@pytest.mark.parametrize("name", sorted(TINY))
def test_train_step_gradients_match_torch(name):
    """One SGD step at lr 1 moves each parameter by minus its gradient."""
    config = load_config(TINY[name])
    module = build_model(config, "f64")
    StgAutodiff(optimizer="sgd", lr=1.0).apply(make_context(), module)
    model = reference_model(config)
    inputs = example_inputs(config, B, S, "f64")
    before = stg_state(model)
    store = interpreter.StateStore(params={k: v.clone() for k, v in before.items()}, inputs=inputs)
    (loss,) = interpreter.Interpreter(module, bindings={"B": B, "S": S}).run("train_step", store)

    expected = reference_loss(model, config, inputs)
    expected.backward()
    assert abs(loss.item() - expected.item()) <= 1e-10 * abs(expected.item())
    for param, grad in stg_state(model, grad=True).items():
        step = before[param] - store.params[param]
        assert torch.allclose(step, grad, rtol=0, atol=1e-10 * float(grad.abs().max()) + 1e-300), param


def test_reference_stacks_layers_and_experts():
    """stg_state's names and shapes are the template's: [L, ...] per layer, [L, E, ...] per expert."""
    config = load_config(TINY["deepseek-moe"])
    state = stg_state(reference_model(config))
    assert state["model.layers.self_attn.q_proj.weight"].shape == (1, 16, 16)
    assert state["model.moe_layers.self_attn.q_proj.weight"].shape == (2, 16, 16)
    assert state["model.moe_layers.mlp.experts.gate_proj.weight"].shape == (2, 4, 8, 16)
    assert state["model.moe_layers.mlp.shared_experts.down_proj.weight"].shape == (2, 16, 16)
    assert "model.embed_tokens.weight" in state and "lm_head.weight" in state


def test_rope_angles_follow_hf():
    """theta[s, 0, d] = s * base^(-2 (d mod D/2) / D), as HF's LlamaRotaryEmbedding."""
    angles = rope_angles(5, 8, 10000.0)
    assert angles.shape == (5, 1, 8) and angles.dtype == torch.float32
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, 8, 2, dtype=torch.float64) / 8))
    assert torch.allclose(angles[3, 0].double(), 3 * torch.cat([inv_freq, inv_freq]))


def test_example_inputs_are_seeded_and_shifted():
    config = load_config(TINY["gpt"])
    a, b = example_inputs(config, B, S), example_inputs(config, B, S)
    assert a.keys() == {"input_ids", "labels", "position_ids"}
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert torch.equal(a["labels"][:, :-1], a["input_ids"][:, 1:])
    assert a["input_ids"].dtype == torch.int64 and int(a["input_ids"].max()) < 32
    assert set(example_inputs(load_config(TINY["mla"]), B, S)) == {"input_ids", "labels", "rope.angles"}
