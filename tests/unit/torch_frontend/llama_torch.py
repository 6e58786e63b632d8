"""A Llama-style decoder written in plain PyTorch, as a user would: nothing of stagec in
it. RMSNorm as torch ops, rotary embeddings from an inv_freq buffer, grouped-query
attention through F.scaled_dot_product_attention(enable_gqa=True), a SwiGLU MLP, and
the mean token cross-entropy against shifted labels. Parameter names follow HF's
LlamaForCausalLM. `make_model(config)` is a MODULE:FACTORY for `stagec import` and
`--torch-factory` (config: a stagec ModelConfig or None for a tiny default).
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Attention(nn.Module):
    def __init__(self, hidden: int, heads: int, kv_heads: int, head_dim: int):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.q_proj = nn.Linear(hidden, heads * head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.o_proj = nn.Linear(heads * head_dim, hidden, bias=False)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return self.o_proj(o.transpose(1, 2).reshape(b, s, -1))


class MLP(nn.Module):
    def __init__(self, hidden: int, ffn: int):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, ffn, bias=False)
        self.up_proj = nn.Linear(hidden, ffn, bias=False)
        self.down_proj = nn.Linear(ffn, hidden, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, hidden, heads, kv_heads, head_dim, ffn, eps):
        super().__init__()
        self.input_layernorm = RMSNorm(hidden, eps)
        self.self_attn = Attention(hidden, heads, kv_heads, head_dim)
        self.post_attention_layernorm = RMSNorm(hidden, eps)
        self.mlp = MLP(hidden, ffn)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class Decoder(nn.Module):
    def __init__(self, vocab, hidden, heads, kv_heads, head_dim, ffn, layers, eps, theta):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList(DecoderLayer(hidden, heads, kv_heads, head_dim, ffn, eps) for _ in range(layers))
        self.norm = RMSNorm(hidden, eps)
        inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.shape[1], dtype=torch.float32, device=input_ids.device)
        angles = torch.outer(positions, self.inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        x = self.embed_tokens(input_ids)
        cos, sin = angles.cos()[None, None].to(x.dtype), angles.sin()[None, None].to(x.dtype)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.norm(x)


class LlamaLM(nn.Module):
    def __init__(self, vocab=64, hidden=32, heads=4, kv_heads=2, head_dim=8, ffn=48, layers=2, eps=1e-5, theta=10000.0):
        super().__init__()
        self.model = Decoder(vocab, hidden, heads, kv_heads, head_dim, ffn, layers, eps, theta)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, input_ids, labels):
        logits = self.lm_head(self.model(input_ids))
        wide = torch.promote_types(logits.dtype, torch.float32)  # bf16 -> f32, f64 stays
        return F.cross_entropy(logits.to(wide).view(-1, logits.shape[-1]), labels.view(-1))


def make_model(config=None) -> LlamaLM:
    """The decoder for a stagec ModelConfig (a Llama-family named config), or tiny."""
    if config is None:
        return LlamaLM()
    return LlamaLM(config.vocab_size, config.hidden_size, config.num_attention_heads, config.num_key_value_heads,
                   config.head_dim, config.intermediate_size, config.num_hidden_layers, config.rms_norm_eps,
                   config.rope_theta)
