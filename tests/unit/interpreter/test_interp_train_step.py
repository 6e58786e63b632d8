"""A whole training step: a two-layer Llama (GQA, rotary, RMSNorm, SwiGLU) written in
stg, run forward by the interpreter against the same model in plain torch, then
differentiated by stg-autodiff and run as @train_step against torch.autograd and
torch.optim.AdamW. This exercises phases, reversed repeats over stacked saved
activations, stg.vjp of fused ops, recompute and micro-batch accumulation together
(and checks stg-autodiff along the way)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from stagec.dialects import make_context
from stagec.passes.stg_autodiff import StgAutodiff
from stagec.runtime.interpreter import Interpreter, StateStore

from tests.unit.interpreter.interp_testing import close, parse

SIZES = dict(B=2, S=4, H=8, N=2, KV=1, D=4, F=6, V=11, L=2)
FORWARD = (Path(__file__).parent / "tiny_llama.mlir").read_text()
LAYER_PARAMS = {
    "input_layernorm.weight": ("H",),
    "self_attn.q_proj.weight": ("N*D", "H"),
    "self_attn.k_proj.weight": ("KV*D", "H"),
    "self_attn.v_proj.weight": ("KV*D", "H"),
    "self_attn.o_proj.weight": ("H", "N*D"),
    "post_attention_layernorm.weight": ("H",),
    "mlp.gate_proj.weight": ("F", "H"),
    "mlp.up_proj.weight": ("F", "H"),
    "mlp.down_proj.weight": ("H", "F"),
}


def _size(dim: str) -> int:
    return math.prod(SIZES[s] for s in dim.split("*"))


def _params(seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64) * 0.5

    params = {f"model.layers.{k}": randn(SIZES["L"], *map(_size, dims)) for k, dims in LAYER_PARAMS.items()}
    params |= {
        "model.embed_tokens.weight": randn(SIZES["V"], SIZES["H"]),
        "model.norm.weight": randn(SIZES["H"]),
        "lm_head.weight": randn(SIZES["V"], SIZES["H"]),
    }
    return params


def _angles() -> torch.Tensor:
    """theta[s, d] = s * inv_freq[d mod D/2] (docs/training-ir.md), as [S, 1, D]."""
    d = SIZES["D"]
    inv_freq = 1.0 / (10000 ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    freqs = torch.outer(torch.arange(SIZES["S"], dtype=torch.float64), inv_freq)
    return torch.cat((freqs, freqs), dim=-1).unsqueeze(1)


def _batch(seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    shape = (SIZES["B"], SIZES["S"])
    return {"input_ids": torch.randint(0, SIZES["V"], shape, generator=g),
            "labels": torch.randint(0, SIZES["V"], shape, generator=g)}


def _torch_loss(p: dict[str, torch.Tensor], ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The same model, Hugging Face style, in plain torch."""
    b, s, n, kv, d = (SIZES[k] for k in ("B", "S", "N", "KV", "D"))

    def rms(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w

    def rotate(x):  # x: [B, heads, S, D]; HF's apply_rotary_pos_emb
        cos, sin = _angles().squeeze(1).cos(), _angles().squeeze(1).sin()
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]
        return x * cos + torch.cat((-x2, x1), dim=-1) * sin

    h = F.embedding(ids, p["model.embed_tokens.weight"])
    for i in range(SIZES["L"]):
        w = {k: p[f"model.layers.{k}"][i] for k in LAYER_PARAMS}
        x = rms(h, w["input_layernorm.weight"])
        q = (x @ w["self_attn.q_proj.weight"].T).view(b, s, n, d).transpose(1, 2)
        k = (x @ w["self_attn.k_proj.weight"].T).view(b, s, kv, d).transpose(1, 2)
        v = (x @ w["self_attn.v_proj.weight"].T).view(b, s, kv, d).transpose(1, 2)
        o = F.scaled_dot_product_attention(rotate(q), rotate(k), v, is_causal=True, enable_gqa=True)
        h = h + o.transpose(1, 2).reshape(b, s, n * d) @ w["self_attn.o_proj.weight"].T
        x = rms(h, w["post_attention_layernorm.weight"])
        gate, up = x @ w["mlp.gate_proj.weight"].T, x @ w["mlp.up_proj.weight"].T
        h = h + (F.silu(gate) * up) @ w["mlp.down_proj.weight"].T
    logits = rms(h, p["model.norm.weight"]) @ p["lm_head.weight"].T
    return F.cross_entropy(logits.reshape(-1, SIZES["V"]), labels.reshape(-1))


def test_forward_matches_the_torch_model():
    params, batch = _params(), _batch(1)
    store = StateStore(params=params, inputs={**batch, "rope.angles": _angles()})
    (loss,) = Interpreter(parse(FORWARD), SIZES).run("forward", store)
    close(loss, _torch_loss(params, batch["input_ids"], batch["labels"]))


@pytest.mark.parametrize("micro_batches, recompute", [(1, False), (1, True), (2, False)])
def test_train_step_matches_autograd_and_adamw(micro_batches, recompute):
    params = _params()
    batches = [_batch(10 + m) for m in range(micro_batches)]
    # reference: mean loss over micro-batches, torch.autograd, torch.optim.AdamW
    leaves = {k: torch.nn.Parameter(v.clone()) for k, v in params.items()}
    loss = sum(_torch_loss(leaves, b["input_ids"], b["labels"]) for b in batches) / micro_batches
    loss.backward()
    grads = {k: v.grad.clone() for k, v in leaves.items()}
    torch.optim.AdamW(list(leaves.values()), lr=1e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1).step()

    module = parse(FORWARD)
    StgAutodiff(optimizer="adamw", lr=1e-2, weight_decay=0.1, micro_batches=micro_batches,
                recompute=recompute).apply(make_context(), module)
    inputs = {k: torch.stack([b[k] for b in batches]) if micro_batches > 1 else batches[0][k] for k in batches[0]}
    store = StateStore(params={k: v.clone() for k, v in params.items()}, inputs={**inputs, "rope.angles": _angles()})
    (step_loss,) = Interpreter(module, SIZES).run("train_step", store)
    close(step_loss, loss.detach())
    for name, param in leaves.items():
        close(store.params[name], param.detach())
        # with micro-batches the optimizer phase zeroes the accumulated gradients after use
        close(store.states[("grad", name)], grads[name] if micro_batches == 1 else torch.zeros_like(grads[name]))
