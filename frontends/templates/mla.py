"""Multi-head latent attention and DeepSeek-V2 (stage.md Table II: Multi-latent).

Queries come from q_proj (or the low-rank q_a_proj -> q_a_layernorm -> q_b_proj when
q_lora_rank is set) as N heads of DN + DR; keys and values from one compressed
latent: kv_a_proj_with_mqa gives c_kv [KVR] and a single rope key k_pe [DR];
kv_a_layernorm and kv_b_proj expand c_kv into per-head k_nope [DN] and v [DV].
The rope parts are rotated, k_pe is broadcast to all heads, and attention runs with
query/key head dim DN + DR and value head dim DV (softmax scale 1/sqrt(DN + DR)).

The rope channels are in rotate_half order. HF's DeepSeek-V2 code de-interleaves
them before rotating; a checkpoint's q/kv_a rope rows are permuted to match when
loaded. YaRN (rope_scaling) and its softmax-scale correction are not modelled.
The FFNs are DeepSeek-MoE's (moe.py).
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from stagec.dialects.stg import ElementwiseKind as EW
from stagec.frontends.templates.blocks import Builder, named
from stagec.frontends.templates.config import ModelConfig
from stagec.frontends.templates.llama import build_decoder
from stagec.frontends.templates.moe import moe_stacks

__all__ = ["build_deepseek_v2", "mla_attention"]

# HF's DeepseekV2Attention builds q_a_layernorm and kv_a_layernorm with the RMSNorm's
# default eps, not the config's.
LATENT_NORM_EPS = 1e-6


def mla_attention(b: Builder, x: SSAValue, prefix: str, angles: SSAValue) -> SSAValue:
    if b.config.q_lora_rank:
        q = b.linear(x, f"{prefix}.q_a_proj.weight", "QR", "H")
        q = b.rms_norm(q, f"{prefix}.q_a_layernorm", LATENT_NORM_EPS)
        q = b.linear(q, f"{prefix}.q_b_proj.weight", "N*(DN+DR)", "QR", hint="q")
    else:
        q = b.linear(x, f"{prefix}.q_proj.weight", "N*(DN+DR)", "H")
    q_nope, q_pe = b.split(b.reshape(q, "B", "S", "N", "DN+DR"), 3, ["DN", "DR"], ["q_nope", "q_pe"])

    latent = b.linear(x, f"{prefix}.kv_a_proj_with_mqa.weight", "KVR+DR", "H", hint="latent")
    c_kv, k_pe = b.split(latent, 2, ["KVR", "DR"], ["c_kv", "k_pe"])
    kv = b.linear(b.rms_norm(c_kv, f"{prefix}.kv_a_layernorm", LATENT_NORM_EPS),
                  f"{prefix}.kv_b_proj.weight", "N*(DN+DV)", "KVR", hint="kv")
    k_nope, v = b.split(b.reshape(kv, "B", "S", "N", "DN+DV"), 3, ["DN", "DV"], ["k_nope", "v"])

    q_pe = named(b.rotary(q_pe, angles), "q_rot")
    k_pe = named(b.rotary(b.reshape(k_pe, "B", "S", 1, "DR"), angles), "k_rot")
    # one rope key shared by every head
    k_pe = named(b.ew(EW.COPY, k_pe, like=b.t("B", "S", "N", "DR")), "k_rot_heads")
    query = named(b.concat([q_nope, q_pe], 3), "query")
    key = named(b.concat([k_nope, k_pe], 3), "key")
    o = b.attention(query, key, v, "N", "N")
    return b.linear(b.reshape(o, "B", "S", "N*DV"), f"{prefix}.o_proj.weight", "H", "N*DV")


def build_deepseek_v2(config: ModelConfig, dtype: str = "bf16") -> ModuleOp:
    b = Builder(config, dtype)
    c = config
    b.bind(N=c.num_attention_heads, KVR=c.kv_lora_rank, DN=c.qk_nope_head_dim,
           DR=c.qk_rope_head_dim, DV=c.v_head_dim)
    if c.q_lora_rank:
        b.bind(QR=c.q_lora_rank)
    return build_decoder(b, mla_attention, moe_stacks(b), "DR")
