"""The converted program, run by the reference interpreter in float64, against the torch
module it came from: the loss agrees to 1e-5 relative (it is far closer), and the
training step stg-autodiff makes of it moves every parameter by torch.autograd's
gradient. Tiny instances: a plain-PyTorch Llama (llama_torch.py) and, when
transformers is installed, HF's own LlamaForCausalLM."""

from __future__ import annotations

import math

import pytest
import torch
from tests.unit.torch_frontend.frontend_testing import split_fused, stacked_state
from tests.unit.torch_frontend.llama_torch import LlamaLM

from stagec.dialects import make_context
from stagec.frontends.templates import rope_angles
from stagec.frontends.torch.models import import_forward
from stagec.passes.stg_autodiff import StgAutodiff
from stagec.runtime import interpreter

B, S = 2, 6


def _inputs(vocab: int, head_dim: int, theta: float = 10000.0, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(vocab, (B, S + 1), generator=g)
    return {"input_ids": ids[:, :-1].contiguous(), "labels": ids[:, 1:].contiguous(),
            "rope.angles": rope_angles(S, head_dim, theta),
            "position_ids": torch.arange(S).expand(B, S).contiguous()}


def _plain():
    torch.manual_seed(0)
    return LlamaLM(vocab=64, hidden=32, heads=4, kv_heads=2, head_dim=8, ffn=48, layers=3).double().eval(), 64, 8


def _hf_llama():
    transformers = pytest.importorskip("transformers")
    from stagec.frontends.torch.models import causal_lm_loss, register_attention

    config = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=3,
                                      num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-6)
    config._attn_implementation = register_attention()
    torch.manual_seed(0)
    lm = transformers.LlamaForCausalLM(config).double().eval()
    return causal_lm_loss(lm), 64, 8


def _hf_mixtral():
    transformers = pytest.importorskip("transformers")
    from stagec.frontends.torch.models import causal_lm_loss, register_attention
    from stagec.frontends.torch.moe import register_experts

    config = transformers.MixtralConfig(vocab_size=64, hidden_size=32, intermediate_size=24, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=2, num_local_experts=4,
                                        num_experts_per_tok=2, rms_norm_eps=1e-6, rope_theta=10000.0)
    config._attn_implementation = register_attention()
    config._experts_implementation = register_experts()
    config.capacity_factor = 1.0  # C = 6 slots for 24 routed tokens over 4 experts: overflow drops, as stg routes
    torch.manual_seed(0)
    lm = transformers.MixtralForCausalLM(config).double().eval()
    return causal_lm_loss(lm), 64, 8


def _hf_gpt2():
    transformers = pytest.importorskip("transformers")
    from stagec.frontends.torch.models import causal_lm_loss, register_attention

    config = transformers.GPT2Config(vocab_size=64, n_embd=32, n_layer=2, n_head=4, n_inner=48, n_positions=16,
                                     activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    config._attn_implementation = register_attention()
    torch.manual_seed(0)
    lm = transformers.GPT2LMHeadModel(config).double().eval()
    return causal_lm_loss(lm), 64, 8


MODELS = {"plain-llama": _plain, "hf-llama": _hf_llama, "hf-mixtral": _hf_mixtral, "hf-gpt2": _hf_gpt2}


def _params(model, module, grad=False):
    """The model's parameters as the program names and shapes them: stacked over layers,
    fused expert halves split, and views such as GPT-2's c_attn [H, 3, N*D] applied."""
    env = {k: v.value.data for k, v in module.attributes["stg.config"].data.items()}
    shapes = {op.tensor_name.data: [d.evaluate(env) for d in op.result.type.shape]
              for op in module.walk() if op.name == "stg.param"}
    state = split_fused(stacked_state(model, grad), list(shapes))
    out = {}
    for name, shape in shapes.items():
        tensor = state[name]
        stacked = tensor.numel() != math.prod(shape)
        out[name] = tensor.reshape([tensor.shape[0], *shape] if stacked else shape)
    return out


@pytest.mark.parametrize("name", sorted(MODELS))
def test_forward_matches_torch(name):
    model, vocab, head_dim = MODELS[name]()
    module = import_forward(model, vocab, name)
    inputs = _inputs(vocab, head_dim)
    with torch.no_grad():
        expected = model(inputs["input_ids"], inputs["labels"])
    store = interpreter.StateStore(params=_params(model, module), inputs=inputs)
    (loss,) = interpreter.Interpreter(module, bindings={"B": B, "S": S}).run("forward", store)
    assert loss.dtype == torch.float64
    assert abs(loss.item() - expected.item()) <= 1e-5 * abs(expected.item()), (loss.item(), expected.item())


@pytest.mark.parametrize("name", sorted(MODELS))
def test_autodiff_gradients_match_torch_autograd(name):
    """One SGD step at lr 1 moves each parameter by minus its gradient."""
    model, vocab, head_dim = MODELS[name]()
    module = import_forward(model, vocab, name)
    module_forward = module.clone()
    before = _params(model, module)
    StgAutodiff(optimizer="sgd", lr=1.0).apply(make_context(), module)
    inputs = _inputs(vocab, head_dim, seed=1)
    store = interpreter.StateStore(params={k: v.clone() for k, v in before.items()}, inputs=inputs)
    (loss,) = interpreter.Interpreter(module, bindings={"B": B, "S": S}).run("train_step", store)
    expected = model(inputs["input_ids"], inputs["labels"])
    expected.backward()
    assert abs(loss.item() - expected.item()) <= 1e-5 * abs(expected.item())
    grads = _params(model, module_forward, grad=True)
    assert set(grads) == set(store.params)
    for param, grad in grads.items():
        step = before[param] - store.params[param]
        torch.testing.assert_close(step, grad, rtol=1e-5, atol=1e-7 * float(grad.abs().max()), msg=param)
