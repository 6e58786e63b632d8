"""The clusters' model and data for `stagec ps run`: a Llama in plain torch, of the
sizes of the plan's model (`run_model.run_model_spec` reads them from the CONFIG's HF
config), and a synthetic corpus pre-partitioned into chunks (di-ps.md §4, "many more
chunks than clusters").

The model keeps Hugging Face's LlamaForCausalLM parameter names (`model.embed_tokens`,
`model.layers.N`, `model.norm`, `lm_head`), so a plan's layer prefixes address it as
they would the real model, and its rotary embedding's frequencies are HF's, scaled as
the config's `rope_scaling` says (`rope_inv_freq`: rope types default, dynamic, linear
and llama3, as transformers' modeling_rope_utils computes them). It is written here
rather than taken from `transformers` so that a cluster process starts in about a
second and the runtime does not depend on a test-only package.

The corpus is a fixed random bigram language (each token has a few likely successors),
so the loss has something to learn and a floor: the chain's entropy rate. Chunk c is
the sequences drawn with seed c; evaluation uses chunks no cluster trains on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["ROPE_TYPES", "ModelSpec", "TinyLlama", "chunk_batches", "default_layer_prefixes", "eval_loss",
           "rope_inv_freq", "rope_scaling_problem"]


@dataclass(frozen=True)
class ModelSpec:
    """The sizes of the clusters' Llama (HF's names in comments) and of its batches.
    `stagec ps run` derives them from the plan's model description
    (`run_model.run_model_spec`); the defaults are the tests' tiny model."""

    vocab: int = 64  # vocab_size
    hidden: int = 32  # hidden_size
    intermediate: int = 64  # intermediate_size
    layers: int = 2  # num_hidden_layers
    heads: int = 4  # num_attention_heads
    kv_heads: int = 2  # num_key_value_heads
    seq: int = 32  # tokens a sequence (a batch row has seq + 1 ids)
    batch: int = 8  # sequences an inner step
    seed: int = 0
    head_dim: int = 0  # head_dim; 0: hidden // heads
    tie_embeddings: bool = False  # tie_word_embeddings: lm_head is model.embed_tokens
    rope_theta: float = 10000.0  # rope_theta
    norm_eps: float = 1e-6  # rms_norm_eps
    # rope_scaling, as HF's config.json writes it (None: none), e.g. Llama 3.2's
    # {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
    #  "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
    rope_scaling: Mapping[str, Any] | None = None

    @property
    def dim(self) -> int:
        return self.head_dim or self.hidden // self.heads

    def to_json(self) -> dict:
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


# The rope types rope_inv_freq computes (transformers' ROPE_INIT_FUNCTIONS keys). The
# others of HF's ("yarn", "longrope", ...) also scale attention, which this model does
# not.
ROPE_TYPES = ("default", "dynamic", "linear", "llama3")
_ROPE_KEYS = {"default": (), "dynamic": ("factor",), "linear": ("factor",),
              "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")}


def _rope_type(scaling: Mapping[str, Any]) -> Any:
    return scaling.get("rope_type", scaling.get("type", "default"))  # HF: "type" is the old spelling


def rope_scaling_problem(scaling: Any) -> str | None:
    """What keeps `rope_inv_freq` from computing `scaling` (a config's rope_scaling),
    as a phrase naming what would be right; None if nothing does."""
    if scaling is None:
        return None
    if not isinstance(scaling, Mapping):
        return f"rope_scaling {scaling!r} is not a mapping; give null or {{rope_type: ..., ...}}"
    kind = _rope_type(scaling)
    if kind not in ROPE_TYPES:
        return (f"rope_scaling's rope_type {kind!r} is not one the PS runtime computes; "
                f"supported: {', '.join(ROPE_TYPES)}")
    for key in _ROPE_KEYS[kind]:
        value = scaling.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            return (f"rope_scaling's {key} is {value!r}; rope_type {kind} needs {', '.join(_ROPE_KEYS[kind])}, "
                    f"each a number > 0")
    if kind == "llama3" and not scaling["high_freq_factor"] > scaling["low_freq_factor"]:
        return (f"rope_scaling's high_freq_factor {scaling['high_freq_factor']} is not above its low_freq_factor "
                f"{scaling['low_freq_factor']}; llama3 scaling interpolates between the two")
    return None


def rope_inv_freq(spec: ModelSpec) -> torch.Tensor:
    """The rotary embedding's inverse frequencies [dim / 2], float32, as transformers'
    `ROPE_INIT_FUNCTIONS[rope_type](config)` gives them (modeling_rope_utils.py); the
    three types have attention_factor 1, so cos and sin are not scaled. ValueError
    (rope_scaling_problem's phrase) for a rope_scaling it cannot compute."""
    problem = rope_scaling_problem(spec.rope_scaling)
    if problem:
        raise ValueError(problem)
    dim = spec.dim
    # _compute_default_rope_parameters
    inv_freq = 1.0 / (spec.rope_theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    scaling = spec.rope_scaling or {}
    kind = _rope_type(scaling)
    if kind == "linear":  # _compute_linear_scaling_rope_parameters
        return inv_freq / scaling["factor"]
    if kind != "llama3":
        # default; and dynamic NTK, which raises the base only for sequences longer
        # than max_position_embeddings (_compute_dynamic_ntk_parameters), which
        # run_model_spec refuses
        return inv_freq
    # _compute_llama3_parameters (Llama 3.1's scaling): wavelengths below
    # original / high_freq_factor stay, those above original / low_freq_factor are
    # divided by factor, and those between are interpolated by a smooth factor.
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    original = scaling["original_max_position_embeddings"]
    low_freq_wavelen, high_freq_wavelen = original / low, original / high
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth = (original / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(medium, smoothed, scaled)


def _rotary(x, positions, inv_freq):
    half = x.shape[-1] // 2
    freqs = torch.outer(positions, inv_freq)
    cos, sin = torch.cat((freqs.cos(), freqs.cos()), -1), torch.cat((freqs.sin(), freqs.sin()), -1)
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class Attention(nn.Module):
    def __init__(self, s: ModelSpec):
        super().__init__()
        self.heads, self.kv_heads, self.dim = s.heads, s.kv_heads, s.dim
        self.register_buffer("inv_freq", rope_inv_freq(s), persistent=False)  # not a parameter: never pushed
        self.q_proj = nn.Linear(s.hidden, s.heads * self.dim, bias=False)
        self.k_proj = nn.Linear(s.hidden, s.kv_heads * self.dim, bias=False)
        self.v_proj = nn.Linear(s.hidden, s.kv_heads * self.dim, bias=False)
        self.o_proj = nn.Linear(s.heads * self.dim, s.hidden, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        pos = torch.arange(t, dtype=torch.float32)
        q = _rotary(self.q_proj(x).view(b, t, self.heads, self.dim).transpose(1, 2), pos, self.inv_freq)
        k = _rotary(self.k_proj(x).view(b, t, self.kv_heads, self.dim).transpose(1, 2), pos, self.inv_freq)
        v = self.v_proj(x).view(b, t, self.kv_heads, self.dim).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return self.o_proj(y.transpose(1, 2).reshape(b, t, -1))


class MLP(nn.Module):
    def __init__(self, s: ModelSpec):
        super().__init__()
        self.gate_proj = nn.Linear(s.hidden, s.intermediate, bias=False)
        self.up_proj = nn.Linear(s.hidden, s.intermediate, bias=False)
        self.down_proj = nn.Linear(s.intermediate, s.hidden, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, s: ModelSpec):
        super().__init__()
        self.self_attn = Attention(s)
        self.mlp = MLP(s)
        self.input_layernorm = RMSNorm(s.hidden, s.norm_eps)
        self.post_attention_layernorm = RMSNorm(s.hidden, s.norm_eps)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class Decoder(nn.Module):
    def __init__(self, s: ModelSpec):
        super().__init__()
        self.embed_tokens = nn.Embedding(s.vocab, s.hidden)
        self.layers = nn.ModuleList(DecoderLayer(s) for _ in range(s.layers))
        self.norm = RMSNorm(s.hidden, s.norm_eps)

    def forward(self, ids):
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


TIED_INIT_STD = 0.02  # transformers' LlamaConfig.initializer_range


class TinyLlama(nn.Module):
    """LlamaForCausalLM's structure and names; forward(ids) is the mean next-token loss."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        torch.manual_seed(spec.seed)
        self.spec = spec
        self.model = Decoder(spec)
        self.lm_head = nn.Linear(spec.hidden, spec.vocab, bias=False)
        if spec.tie_embeddings:
            # one parameter under two names; named_parameters() gives it once, as the
            # embedding's (the plan then has no lm_head layer, config.model_layers).
            # As the head, torch's N(0, 1) embedding init makes logits of size
            # sqrt(hidden) and an untrained loss in the tens (62 at vocab 512, hidden
            # 64); HF's LlamaPreTrainedModel draws it from N(0, initializer_range 0.02)
            self.lm_head.weight = self.model.embed_tokens.weight
            nn.init.normal_(self.lm_head.weight, std=TIED_INIT_STD)

    def forward(self, ids):
        logits = self.lm_head(self.model(ids[:, :-1]))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))


def default_layer_prefixes(spec: ModelSpec) -> list[str]:
    """The Di-PS layers of `spec` in config.model_layers' order (no lm_head when tied)."""
    return ["model.embed_tokens", *(f"model.layers.{i}" for i in range(spec.layers)), "model.norm",
            *(() if spec.tie_embeddings else ("lm_head",))]


def _bigram(spec: ModelSpec) -> np.ndarray:
    rng = np.random.default_rng(10_000 + spec.seed)
    logits = rng.standard_normal((spec.vocab, spec.vocab)) * 3.0
    p = np.exp(logits - logits.max(1, keepdims=True))
    return p / p.sum(1, keepdims=True)


def chunk_batches(spec: ModelSpec, chunk: int, steps: int) -> list[torch.Tensor]:
    """`steps` batches of token ids [batch, seq + 1] from data chunk `chunk`."""
    table = np.cumsum(_bigram(spec), axis=1)
    rng = np.random.default_rng(chunk)
    n = steps * spec.batch
    ids = np.empty((n, spec.seq + 1), dtype=np.int64)
    ids[:, 0] = rng.integers(0, spec.vocab, n)
    u = rng.random((n, spec.seq))
    for t in range(spec.seq):
        ids[:, t + 1] = np.minimum((table[ids[:, t]] < u[:, t:t + 1]).sum(1), spec.vocab - 1)
    return [torch.from_numpy(ids[i * spec.batch:(i + 1) * spec.batch]) for i in range(steps)]


EVAL_CHUNK = 1_000_000_007


@torch.no_grad()
def eval_loss(model: TinyLlama, batches: int = 8) -> float:
    """Mean loss on held-out chunk EVAL_CHUNK (never handed to a cluster)."""
    data = chunk_batches(model.spec, EVAL_CHUNK, batches)
    return float(sum(model(b) for b in data) / len(data))
