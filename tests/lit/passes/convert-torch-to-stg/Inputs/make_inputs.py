"""Writes the torch-dialect inputs of the convert-torch-to-stg lit tests: each case is a
small torch module exported and imported by stagec's torch frontend (torch.export +
torch-mlir's FX importer), printed in generic form. Run from the repository root:

    PYTHONPATH=. python tests/lit/passes/convert-torch-to-stg/Inputs/make_inputs.py

The CHECK lines in the tests beside it were written against this output; `torch.loc`
attributes are dropped (they hold this machine's paths) but for the error case's own
lines, `torch.module` kept.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from xdsl.dialects.builtin import StringAttr
from xdsl.printer import Printer

from stagec.frontends.torch import import_module

HERE = Path(__file__).parent
BS = {0: "B", 1: "S"}


class Linear(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 12)

    def forward(self, x):
        return self.proj(x)


class MatMul(nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b.transpose(1, 2))


class Elementwise(nn.Module):
    def forward(self, x, y):
        z = (x + y) * x - y / 2.0
        return F.silu(z) + F.gelu(x, approximate="tanh") + F.relu(y) + torch.exp(-x) * torch.rsqrt(y * y + 1.0)


class Softmax(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


class Attention(nn.Module):
    def forward(self, q, k, v):
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                           is_causal=True, enable_gqa=True)
        return o.transpose(1, 2)


class Norms(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(8)
        self.rms = nn.RMSNorm(8, eps=1e-6)
        self.weight = nn.Parameter(torch.ones(8))

    def forward(self, x):
        decomposed = self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5))
        return self.ln(x) + self.rms(x) + decomposed


class Embedding(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(50, 8)

    def forward(self, input_ids):
        return self.embed_tokens(input_ids)


class CrossEntropy(nn.Module):
    def forward(self, logits, labels):
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.view(-1))


class Shapes(nn.Module):
    def forward(self, x):
        b, s, _ = x.shape
        heads = x.view(b, s, 2, 6).permute(0, 2, 1, 3)          # [B, 2, S, 6]
        left, right = heads.split(3, dim=-1)                    # two [B, 2, S, 3]
        both = torch.cat([right, left], dim=-1).transpose(1, 2)  # [B, S, 2, 6]
        return both.reshape(b, s, 12) + x[..., :12].expand(b, s, 12)


def rotate_half(x):
    return torch.cat((-x[..., 4:], x[..., :4]), dim=-1)


class Rotary(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, 8, 2).float() / 8), persistent=False)

    def forward(self, q):
        angles = torch.outer(torch.arange(q.shape[1], dtype=torch.float32), self.inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        cos, sin = angles.cos()[None, None], angles.sin()[None, None]
        x = q.transpose(1, 2)
        return (x * cos + rotate_half(x) * sin).transpose(1, 2)


class Scan(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, dim=1)


class Unsupported(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.scan = Scan()

    def forward(self, x):
        return self.scan(self.proj(x))


class Router(nn.Module):
    """Top-2 routing over 4 experts through stagec's MoE custom ops (frontends/torch/moe.py)."""

    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(8, 4, bias=False)
        self.w = nn.Parameter(torch.randn(4, 6, 8))
        self.w2 = nn.Parameter(torch.randn(4, 8, 6))

    def forward(self, x):
        import stagec.frontends.torch.moe  # noqa: F401  (registers torch.ops.stagec)

        x = x.view(-1, 8)
        probs = torch.softmax(self.gate(x).float(), dim=-1)
        top, index = torch.topk(probs, 2, dim=-1)
        top = top / top.sum(dim=-1, keepdim=True)
        scores = torch.zeros_like(probs).scatter(1, index, top)
        buffers = torch.ops.stagec.moe_dispatch(x, scores, 2, x.shape[0] // 2)
        hidden = torch.einsum("ech,efh->ecf", buffers, self.w)
        out = torch.einsum("ecf,ehf->ech", F.silu(hidden), self.w2)
        return torch.ops.stagec.moe_combine(out, scores, 2, False)


class Conv1DGelu(nn.Module):
    """GPT-2's Conv1D (addmm over a [in, out] weight) and gelu_new written out in torch ops."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(8, 12))
        self.bias = nn.Parameter(torch.zeros(12))

    def forward(self, x):
        y = torch.addmm(self.bias, x.view(-1, 8), self.weight).view(x.shape[0], x.shape[1], 12)
        return 0.5 * y * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (y + 0.044715 * torch.pow(y, 3.0))))


class Reductions(nn.Module):
    def forward(self, x):
        return x.mean(-1) + x.sum(-1) - x.amax(-1)


class Positions(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(50, 8)
        self.wpe = nn.Embedding(16, 8)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.shape[1]).unsqueeze(0)
        return self.wte(input_ids) + self.wpe(positions)


def llama():
    """Two layers of the plain-PyTorch Llama of the unit tests (llama_torch.py)."""
    from tests.unit.torch_frontend.llama_torch import LlamaLM

    return LlamaLM(vocab=64, hidden=32, heads=4, kv_heads=2, head_dim=8, ffn=48, layers=2)


def f(*shape, dtype=torch.float32):
    return torch.randn(*shape).to(dtype) if dtype.is_floating_point else torch.randint(0, 50, shape)


CASES = {
    "linear": (Linear(), (f(2, 3, 8),), {"x": BS}),
    "matmul": (MatMul(), (f(2, 3, 8), f(2, 5, 8)), {"a": {0: "B", 1: "S"}, "b": {0: "B"}}),
    "elementwise": (Elementwise(), (f(2, 3, 8), f(2, 3, 8)), {"x": BS, "y": BS}),
    "softmax": (Softmax(), (f(2, 3, 8),), {"x": BS}),
    "attention": (Attention(), (f(2, 3, 4, 8), f(2, 3, 2, 8), f(2, 3, 2, 8)), {"q": BS, "k": BS, "v": BS}),
    "norms": (Norms(), (f(2, 3, 8),), {"x": BS}),
    "embedding": (Embedding(), (f(2, 3, dtype=torch.long),), {"input_ids": BS}),
    "cross-entropy": (CrossEntropy(), (f(2, 3, 50, dtype=torch.bfloat16), f(2, 3, dtype=torch.long)),
                      {"logits": BS, "labels": BS}),
    "shapes": (Shapes(), (f(2, 3, 12),), {"x": BS}),
    "rotary": (Rotary(), (f(2, 3, 4, 8),), {"q": BS}),
    "unsupported": (Unsupported(), (f(2, 3, 8),), {"x": BS}),
    "moe-routing": (Router(), (f(2, 6, 8),), {"x": BS}),
    "conv1d-gelu": (Conv1DGelu(), (f(2, 3, 8),), {"x": BS}),
    "reductions": (Reductions(), (f(2, 3, 8),), {"x": BS}),
    "positions": (Positions(), (f(2, 3, dtype=torch.long),), {"input_ids": BS}),
    "llama": (llama(), (f(2, 3, dtype=torch.long), f(2, 3, dtype=torch.long)), {"input_ids": BS, "labels": BS}),
}


def main() -> None:
    for name, (model, args, dynamic) in CASES.items():
        module = import_module(model.eval(), args, dynamic)
        for op in module.walk():
            loc = op.attributes.pop("torch.loc", None)
            if name == "unsupported" and loc is not None and "make_inputs.py" in loc.data:
                op.attributes["torch.loc"] = StringAttr(Path(loc.data).name)
        from io import StringIO

        text = StringIO()
        Printer(stream=text).print_op(module)
        out = re.sub(r"\n\s*\n", "\n", text.getvalue())
        (HERE / f"{name}.torch.mlir").write_text(out + "\n")


if __name__ == "__main__":
    main()
