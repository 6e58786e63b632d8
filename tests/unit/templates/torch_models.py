"""Plain-PyTorch models equivalent to the stg templates, written from the papers and
Hugging Face's modelling code (not from the templates), to check the templates'
numerics: GPT, Llama, Mixtral and DeepSeek-MoE routing (with capacity drops as
stg.moe_dispatch/moe_combine define them), DeepSeek-V2's MLA, and Mamba with a
sequential scan.

Modules keep HF's structure and parameter names (`model.layers.3.self_attn.q_proj.weight`,
per-expert `experts.5.w1.weight`); GPT uses nn.Linear where HF's GPT-2 has Conv1D, so
its weights are [out, in] already. `stg_state(model)` maps the parameters onto the
templates' names: layer (and expert) indices dropped, tensors stacked over them.

Every model's forward(input_ids, labels, ...) returns the mean token cross-entropy.
"""

from __future__ import annotations

import math
import re

import torch
import torch.nn.functional as F
from torch import nn

from stagec.frontends.templates import ModelConfig


# -- shared pieces ----------------------------------------------------------------------


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def apply_rope(x, cos, sin):
    """x [B, heads, S, d]; cos/sin [S, d]."""
    return x * cos + rotate_half(x) * sin


def causal_attention(q, k, v):
    """q [B, N, S, d], k [B, N, S, d], v [B, N, S, e]: softmax(q k^T / sqrt(d)) v, causal."""
    s = q.shape[2]
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    mask = torch.ones(s, s, dtype=torch.bool).triu(1)
    return scores.masked_fill(mask, float("-inf")).softmax(-1) @ v


def lm_loss(logits, labels):
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten())


class SwiGLU(nn.Module):
    """Llama's MLP: down(silu(gate(x)) * up(x))."""

    def __init__(self, hidden: int, size: int):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, size, bias=False)
        self.up_proj = nn.Linear(hidden, size, bias=False)
        self.down_proj = nn.Linear(size, hidden, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


# -- GPT ---------------------------------------------------------------------------------


class GPTBlock(nn.Module):
    def __init__(self, c: ModelConfig):
        super().__init__()
        h, f = c.hidden_size, c.intermediate_size
        self.n_head = c.num_attention_heads
        self.ln_1 = nn.LayerNorm(h, eps=c.layer_norm_epsilon)
        self.attn = nn.Module()
        self.attn.c_attn = nn.Linear(h, 3 * h)
        self.attn.c_proj = nn.Linear(h, h)
        self.ln_2 = nn.LayerNorm(h, eps=c.layer_norm_epsilon)
        self.mlp = nn.Module()
        self.mlp.c_fc = nn.Linear(h, f)
        self.mlp.c_proj = nn.Linear(f, h)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.attn.c_attn(self.ln_1(x)).split(h, dim=2)
        heads = [t.view(b, s, self.n_head, h // self.n_head).transpose(1, 2) for t in (q, k, v)]
        o = causal_attention(*heads).transpose(1, 2).reshape(b, s, h)
        x = x + self.attn.c_proj(o)
        return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, c: ModelConfig):
        super().__init__()
        self.transformer = nn.Module()
        self.transformer.wte = nn.Embedding(c.vocab_size, c.hidden_size)
        self.transformer.wpe = nn.Embedding(c.max_position_embeddings, c.hidden_size)
        self.transformer.h = nn.ModuleList(GPTBlock(c) for _ in range(c.num_hidden_layers))
        self.transformer.ln_f = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_epsilon)
        self.lm_head = None if c.tie_word_embeddings else nn.Linear(c.hidden_size, c.vocab_size, bias=False)

    def forward(self, input_ids, labels, position_ids):
        t = self.transformer
        x = t.wte(input_ids) + t.wpe(position_ids)
        for block in t.h:
            x = block(x)
        x = t.ln_f(x)
        head = t.wte.weight if self.lm_head is None else self.lm_head.weight
        return lm_loss(x @ head.T, labels)

    def stg_tensor(self, name: str, w: torch.Tensor) -> torch.Tensor:
        """The template holds c_attn as [3, N*D, H] (and its bias [3, N*D])."""
        return w.reshape(3, -1, *w.shape[1:]) if "c_attn" in name else w


# -- MoE ---------------------------------------------------------------------------------


def route(scores, top_k: int, capacity: int):
    """GShard routing as stg.moe_dispatch defines it: token t goes to its top-k experts
    in token order; a token finding expert e's C slots taken is dropped there.
    Returns (experts [T, k], kept [T, k] bool)."""
    experts = torch.topk(scores, top_k, dim=-1).indices
    taken = [0] * scores.shape[1]
    kept = torch.zeros_like(experts, dtype=torch.bool)
    for t in range(scores.shape[0]):
        for j in range(top_k):
            e = int(experts[t, j])
            kept[t, j] = taken[e] < capacity
            taken[e] += 1
    return experts, kept


class RoutedExperts(nn.Module):
    """Top-k softmax router over E SwiGLU experts with a capacity per expert.
    `names` are the expert's (gate, up, down) projections: Mixtral's w1, w3, w2."""

    def __init__(self, c: ModelConfig, size: int, names, normalize: bool, scale: float = 1.0):
        super().__init__()
        h, e = c.hidden_size, c.num_local_experts
        self.names, self.top_k, self.normalize, self.scale = names, c.num_experts_per_tok, normalize, scale
        self.capacity_factor = c.capacity_factor
        self.gate = nn.Linear(h, e, bias=False)
        self.experts = nn.ModuleList()
        for _ in range(e):
            expert = nn.Module()
            for name, shape in zip(names, ((h, size), (h, size), (size, h))):
                setattr(expert, name, nn.Linear(*shape, bias=False))
            self.experts.append(expert)
        self.dropped = 0  # (token, expert) pairs the last forward dropped

    def forward(self, x):
        b, s, h = x.shape
        tokens = x.reshape(b * s, h)
        scores = self.gate(tokens).softmax(-1)
        n_exp = len(self.experts)
        capacity = self.capacity_factor * self.top_k * b * s / n_exp
        assert capacity == int(capacity)
        experts, kept = route(scores, self.top_k, int(capacity))
        self.dropped = int((~kept).sum())
        weights = scores.gather(1, experts)
        if self.normalize:
            weights = weights / weights.sum(-1, keepdim=True)
        out = torch.zeros_like(tokens)
        gate, up, down = self.names
        for e, expert in enumerate(self.experts):
            t, j = torch.nonzero((experts == e) & kept, as_tuple=True)
            y = getattr(expert, down)(F.silu(getattr(expert, gate)(tokens[t])) * getattr(expert, up)(tokens[t]))
            out.index_add_(0, t, weights[t, j, None] * y)
        return (out * self.scale).reshape(b, s, h)


class DeepseekMoE(nn.Module):
    """Routed experts plus n_shared_experts always-on experts as one SwiGLU."""

    def __init__(self, c: ModelConfig):
        super().__init__()
        normalize = c.norm_topk_prob and c.num_experts_per_tok > 1
        self.routed = RoutedExperts(c, c.moe_intermediate_size, ("gate_proj", "up_proj", "down_proj"),
                                    normalize, c.routed_scaling_factor)
        self.shared_experts = SwiGLU(c.hidden_size, c.n_shared_experts * c.moe_intermediate_size)

    def forward(self, x):
        return self.routed(x) + self.shared_experts(x)


# -- Llama-style decoders (Llama, Mixtral, DeepSeek-MoE, DeepSeek-V2) -----------------------


class GQA(nn.Module):
    def __init__(self, c: ModelConfig):
        super().__init__()
        h, d = c.hidden_size, c.head_dim
        self.n, self.kv, self.d = c.num_attention_heads, c.num_key_value_heads, d
        self.q_proj = nn.Linear(h, self.n * d, bias=False)
        self.k_proj = nn.Linear(h, self.kv * d, bias=False)
        self.v_proj = nn.Linear(h, self.kv * d, bias=False)
        self.o_proj = nn.Linear(self.n * d, h, bias=False)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.n, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.kv, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.kv, self.d).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        # HF's repeat_kv: query head i reads kv head i // (N / KV)
        k, v = (t.repeat_interleave(self.n // self.kv, dim=1) for t in (k, v))
        o = causal_attention(q, k, v).transpose(1, 2).reshape(b, s, self.n * self.d)
        return self.o_proj(o)


def deinterleave(x):
    """HF DeepSeek-V2's rope input order: channels (0, 2, 4, ..., 1, 3, 5, ...)."""
    *lead, d = x.shape
    return x.view(*lead, d // 2, 2).transpose(-1, -2).reshape(*lead, d)


def deinterleave_rows(w, start: int, rows: int, width: int):
    """Permutes rows [start, start+rows) of every `width`-row group of w as deinterleave does."""
    w = w.clone()
    groups = w.view(-1, width, *w.shape[1:])
    part = groups[:, start : start + rows]
    groups[:, start : start + rows] = part.view(part.shape[0], rows // 2, 2, *part.shape[2:]).transpose(1, 2).reshape(part.shape)
    return w


class MLA(nn.Module):
    """DeepSeek-V2's multi-head latent attention (HF DeepseekV2Attention, no YaRN)."""

    def __init__(self, c: ModelConfig):
        super().__init__()
        h, n = c.hidden_size, c.num_attention_heads
        self.n, self.dn, self.dr, self.dv, self.kvr = n, c.qk_nope_head_dim, c.qk_rope_head_dim, c.v_head_dim, c.kv_lora_rank
        qd = self.dn + self.dr
        if c.q_lora_rank:
            self.q_a_proj = nn.Linear(h, c.q_lora_rank, bias=False)
            self.q_a_layernorm = RMSNorm(c.q_lora_rank, 1e-6)
            self.q_b_proj = nn.Linear(c.q_lora_rank, n * qd, bias=False)
        else:
            self.q_proj = nn.Linear(h, n * qd, bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(h, self.kvr + self.dr, bias=False)
        self.kv_a_layernorm = RMSNorm(self.kvr, 1e-6)
        self.kv_b_proj = nn.Linear(self.kvr, n * (self.dn + self.dv), bias=False)
        self.o_proj = nn.Linear(n * self.dv, h, bias=False)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x))) if hasattr(self, "q_b_proj") else self.q_proj(x)
        q = q.view(b, s, self.n, self.dn + self.dr).transpose(1, 2)
        q_nope, q_pe = q.split([self.dn, self.dr], dim=-1)
        c_kv, k_pe = self.kv_a_proj_with_mqa(x).split([self.kvr, self.dr], dim=-1)
        k_pe = k_pe.view(b, s, 1, self.dr).transpose(1, 2)
        kv = self.kv_b_proj(self.kv_a_layernorm(c_kv)).view(b, s, self.n, self.dn + self.dv).transpose(1, 2)
        k_nope, v = kv.split([self.dn, self.dv], dim=-1)
        q_pe = apply_rope(deinterleave(q_pe), cos, sin)
        k_pe = apply_rope(deinterleave(k_pe), cos, sin)
        query = torch.cat([q_nope, q_pe], dim=-1)
        key = torch.cat([k_nope, k_pe.expand(b, self.n, s, self.dr)], dim=-1)
        o = causal_attention(query, key, v).transpose(1, 2).reshape(b, s, self.n * self.dv)
        return self.o_proj(o)


class DecoderLayer(nn.Module):
    def __init__(self, c: ModelConfig, attention: nn.Module, ffn: nn.Module, ffn_name: str):
        super().__init__()
        self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.self_attn = attention
        self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.ffn_name = ffn_name
        setattr(self, ffn_name, ffn)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + getattr(self, self.ffn_name)(self.post_attention_layernorm(x))


class Decoder(nn.Module):
    """LlamaForCausalLM and its MoE/MLA relatives, by the config's family."""

    def __init__(self, c: ModelConfig):
        super().__init__()
        self.config = c
        self.model = nn.Module()
        self.model.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        layers = []
        for i in range(c.num_hidden_layers):
            attention = MLA(c) if c.family == "deepseek_v2" else GQA(c)
            if c.family == "mixtral":
                ffn = RoutedExperts(c, c.intermediate_size, ("w1", "w3", "w2"), c.norm_topk_prob)
                layers.append(DecoderLayer(c, attention, ffn, "block_sparse_moe"))
            elif c.family == "llama" or i < c.first_k_dense_replace:
                layers.append(DecoderLayer(c, attention, SwiGLU(c.hidden_size, c.intermediate_size), "mlp"))
            else:
                layers.append(DecoderLayer(c, attention, DeepseekMoE(c), "mlp"))
        self.model.layers = nn.ModuleList(layers)
        self.model.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.lm_head = None if c.tie_word_embeddings else nn.Linear(c.hidden_size, c.vocab_size, bias=False)

    def forward(self, input_ids, labels, angles):
        # as HF's rotary embedding: cos and sin of the float32 angles, then the model's dtype
        cos, sin = (f(angles[:, 0]).to(self.model.embed_tokens.weight.dtype) for f in (torch.cos, torch.sin))
        x = self.model.embed_tokens(input_ids)
        for layer in self.model.layers:
            x = layer(x, cos, sin)
        x = self.model.norm(x)
        head = self.model.embed_tokens.weight if self.lm_head is None else self.lm_head.weight
        return lm_loss(x @ head.T, labels)

    def dropped(self) -> int:
        return sum(m.dropped for m in self.modules() if isinstance(m, RoutedExperts))

    def stg_name(self, name: str) -> str:
        """HF name -> template name: DeepseekMoE's `routed.` level is HF's `mlp.` itself,
        and DeepSeek's MoE layers after the dense ones form the `model.moe_layers` stack."""
        name = name.replace(".routed.", ".")
        c = self.config
        if c.first_k_dense_replace and (m := re.match(r"model\.layers\.(\d+)\.(.*)", name)):
            i = int(m.group(1))
            if i >= c.first_k_dense_replace:
                return f"model.moe_layers.{i - c.first_k_dense_replace}.{m.group(2)}"
        return name

    def stg_tensor(self, name: str, w: torch.Tensor) -> torch.Tensor:
        """HF DeepSeek-V2 de-interleaves the rope channels before rotating; the
        template rotates them in place, so their projection rows move instead."""
        if self.config.family != "deepseek_v2":
            return w
        if name.endswith("q_proj.weight") or name.endswith("q_b_proj.weight"):
            return deinterleave_rows(w, self.config.qk_nope_head_dim, self.config.qk_rope_head_dim,
                                     self.config.qk_nope_head_dim + self.config.qk_rope_head_dim)
        if name.endswith("kv_a_proj_with_mqa.weight"):
            return deinterleave_rows(w, self.config.kv_lora_rank, self.config.qk_rope_head_dim, w.shape[0])
        return w


# -- Mamba -------------------------------------------------------------------------------


class MambaMixer(nn.Module):
    """HF MambaMixer's slow path without the conv1d (an identity kernel)."""

    def __init__(self, c: ModelConfig):
        super().__init__()
        h, di, ds, r = c.hidden_size, c.intermediate_size, c.state_size, c.time_step_rank
        self.di, self.ds, self.r = di, ds, r
        self.in_proj = nn.Linear(h, 2 * di, bias=False)
        self.x_proj = nn.Linear(di, r + 2 * ds, bias=False)
        self.dt_proj = nn.Linear(r, di, bias=True)
        self.A_log = nn.Parameter(torch.log(torch.arange(1, ds + 1, dtype=torch.float64)).repeat(di, 1))
        self.D = nn.Parameter(torch.ones(di))
        self.out_proj = nn.Linear(di, h, bias=False)

    def forward(self, x):
        b, s, _ = x.shape
        u, z = self.in_proj(x).chunk(2, dim=-1)
        u = F.silu(u)
        dt, bc, cc = self.x_proj(u).split([self.r, self.ds, self.ds], dim=-1)
        dt = F.softplus(self.dt_proj(dt))
        a = -torch.exp(self.A_log)
        state = torch.zeros(b, self.di, self.ds, dtype=x.dtype)
        ys = []
        for t in range(s):
            state = torch.exp(dt[:, t, :, None] * a) * state + dt[:, t, :, None] * bc[:, t, None, :] * u[:, t, :, None]
            ys.append(state @ cc[:, t, :, None])
        y = torch.stack(ys, dim=1)[..., 0] + u * self.D
        return self.out_proj(y * F.silu(z))


class MambaBlock(nn.Module):
    def __init__(self, c: ModelConfig):
        super().__init__()
        self.norm = RMSNorm(c.hidden_size, c.layer_norm_epsilon)
        self.mixer = MambaMixer(c)

    def forward(self, x):
        return x + self.mixer(self.norm(x))


class Mamba(nn.Module):
    def __init__(self, c: ModelConfig):
        super().__init__()
        self.backbone = nn.Module()
        self.backbone.embeddings = nn.Embedding(c.vocab_size, c.hidden_size)
        self.backbone.layers = nn.ModuleList(MambaBlock(c) for _ in range(c.num_hidden_layers))
        self.backbone.norm_f = RMSNorm(c.hidden_size, c.layer_norm_epsilon)

    def forward(self, input_ids, labels):
        x = self.backbone.embeddings(input_ids)
        for layer in self.backbone.layers:
            x = layer(x)
        x = self.backbone.norm_f(x)
        return lm_loss(x @ self.backbone.embeddings.weight.T, labels)


# -- building and mapping ----------------------------------------------------------------


def reference_model(c: ModelConfig, seed: int = 0, std: float = 0.3) -> nn.Module:
    """The torch model of `c` in float64 with seeded random weights (norm weights near 1,
    Mamba's A_log and D as HF initialises them, plus noise)."""
    torch.manual_seed(seed)
    family = c.family
    model = GPT(c) if family == "gpt" else Mamba(c) if family == "mamba" else Decoder(c)
    model = model.double()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("A_log") or name.endswith(".D") or "norm" in name or "ln_" in name:
                p.add_(0.1 * torch.randn_like(p))
            else:
                p.copy_(std * torch.randn_like(p))
    return model


_INDEX = re.compile(r"\.(\d+)(?=\.)")


def stg_state(model: nn.Module, grad: bool = False) -> dict[str, torch.Tensor]:
    """{template parameter name: tensor stacked over layers (outer) and experts}; the
    parameters' gradients instead with `grad` (zero where backward left none)."""
    groups: dict[str, dict[tuple[int, ...], torch.Tensor]] = {}
    for name, p in model.named_parameters():
        renamed = model.stg_name(name) if hasattr(model, "stg_name") else name
        value = (p.grad if p.grad is not None else torch.zeros_like(p)) if grad else p.detach()
        tensor = model.stg_tensor(name, value) if hasattr(model, "stg_tensor") else value
        index = tuple(int(i) for i in _INDEX.findall(renamed))
        groups.setdefault(_INDEX.sub("", renamed), {})[index] = tensor

    def stack(entries: dict[tuple[int, ...], torch.Tensor]) -> torch.Tensor:
        if () in entries:
            return entries[()]
        outer = sorted({i[0] for i in entries})
        assert outer == list(range(len(outer))), f"missing index in {sorted(entries)}"
        return torch.stack([stack({i[1:]: t for i, t in entries.items() if i[0] == o}) for o in outer])

    return {name: stack(entries) for name, entries in groups.items()}
