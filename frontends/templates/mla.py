"""Multi-head latent attention and DeepSeek-V2 (stage.md Table II: Multi-latent), which
also builds DeepSeek-V3/R1 (model_type deepseek_v3: the same blocks at V3's sizes; its
router as V2's, moe.py).

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

from stagec.dialects import stg
from stagec.dialects.stg import ElementwiseKind as EW
from stagec.dialects.stg.names import Phase
from stagec.frontends.templates.blocks import Builder, named
from stagec.frontends.templates.config import ModelConfig
from stagec.frontends.templates.llama import build_decoder
from stagec.frontends.templates.moe import moe_stacks

__all__ = ["build_deepseek_v2", "mla_attention", "mla_inference"]

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
    c_kv = b.rms_norm(c_kv, f"{prefix}.kv_a_layernorm", LATENT_NORM_EPS)
    k_nope = v = None
    if b.phase is not Phase.DECODE:  # a decode step absorbs kv_b_proj (mla_inference)
        kv = b.linear(c_kv, f"{prefix}.kv_b_proj.weight", "N*(DN+DV)", "KVR", hint="kv")
        k_nope, v = b.split(b.reshape(kv, "B", "S", "N", "DN+DV"), 3, ["DN", "DV"], ["k_nope", "v"])

    q_pe = named(b.rotary(q_pe, angles), "q_rot")
    k_pe = named(b.rotary(b.reshape(k_pe, "B", "S", 1, "DR"), angles), "k_rot")
    if b.phase is not Phase.TRAIN:
        return mla_inference(b, prefix, q_nope, q_pe, c_kv, k_pe, k_nope, v)
    # one rope key shared by every head
    k_pe = named(b.ew(EW.COPY, k_pe, like=b.t("B", "S", "N", "DR")), "k_rot_heads")
    query = named(b.concat([q_nope, q_pe], 3), "query")
    key = named(b.concat([k_nope, k_pe], 3), "key")
    o = b.attention(query, key, v, "N", "N")
    return b.linear(b.reshape(o, "B", "S", "N*DV"), f"{prefix}.o_proj.weight", "H", "N*DV")


def build_deepseek_v2(config: ModelConfig, dtype: str = "bf16", phase: str = "train") -> ModuleOp:
    b = Builder(config, dtype, phase)
    c = config
    b.bind(N=c.num_attention_heads, KVR=c.kv_lora_rank, DN=c.qk_nope_head_dim,
           DR=c.qk_rope_head_dim, DV=c.v_head_dim)
    if c.q_lora_rank:
        b.bind(QR=c.q_lora_rank)
    return build_decoder(b, mla_attention, moe_stacks(b), "DR")


def mla_inference(b: Builder, prefix: str, q_nope: SSAValue, q_pe: SSAValue, c_kv: SSAValue, k_pe: SSAValue,
                  k_nope: SSAValue | None, v: SSAValue | None) -> SSAValue:
    """MLA in an inference step. The cache `prefix.latent` holds, per position, the
    normalised latent c_kv and the rotated rope key, [B, T, 1, KVR + DR] (DeepSeek's
    576 = 512 + 64 values per token and layer, one "kv head").

    A prefill attends as training does (keys and values expanded by kv_b_proj over its
    S prompt positions) and writes the latents. A decode step attends in the latent
    space (DeepSeek-V2 §2.1.2's absorbed form, what FlashMLA runs): kv_b_proj's rows
    split into W_UK [N, DN, KVR] and W_UV [N, DV, KVR]; the query's no-rope part is
    q_nope @ W_UK, queries attend with N heads over the one cached latent "head" as
    both key and value, and the output's latent part goes up through W_UV. The query
    is scaled by sqrt((KVR + DR) / (DN + DR)) so that stg.attention's 1/sqrt(head dim)
    is the model's 1/sqrt(DN + DR). The value is the whole cached row, so P V also
    multiplies the DR rope columns, which the output drops (FlashMLA reads the 576
    values once and uses 512 as the value): attention FLOPs count (576 + 576) where the
    kernel does (576 + 512) per query-key pair.
    """
    entry = named(b.concat([b.reshape(c_kv, "B", "S", 1, "KVR"), k_pe], 3), "latent_entry")
    cache = b.kv_cache(f"{prefix}.latent", entry)
    if b.phase is Phase.PREFILL:
        k_pe = named(b.ew(EW.COPY, k_pe, like=b.t("B", "S", "N", "DR")), "k_rot_heads")
        query, key = named(b.concat([q_nope, q_pe], 3), "query"), named(b.concat([k_nope, k_pe], 3), "key")
        o = named(stg.AttentionOp(query, key, v, b.t("B", "S", "N", "DV"), "N", "N", causal=True).result, "attn")
        return b.linear(b.reshape(o, "B", "S", "N*DV"), f"{prefix}.o_proj.weight", "H", "N*DV")
    w = b.reshape(b.param(f"{prefix}.kv_b_proj.weight", "N*(DN+DV)", "KVR"), "N", "DN+DV", "KVR")
    w_uk, w_uv = b.split(w, 1, ["DN", "DV"], ["w_uk", "w_uv"])
    q_latent = named(b.einsum("bsnd,ndr->bsnr", [q_nope, w_uk], "B", "S", "N", "KVR"), "q_latent")
    query = b.concat([q_latent, q_pe], 3)
    c = b.config
    scale = ((c.kv_lora_rank + c.qk_rope_head_dim) / (c.qk_nope_head_dim + c.qk_rope_head_dim)) ** 0.5
    query = named(b.ew(EW.SCALE, query, scalar=scale), "query")
    out = b.t("B", "S", "N", "KVR+DR")
    o = named(stg.AttentionOp(query, cache, cache, out, "N", 1, causal=True).result, "attn")
    o_latent, _ = b.split(o, 3, ["KVR", "DR"], ["o_latent", "o_rope"])
    o = b.einsum("bsnr,nvr->bsnv", [o_latent, w_uv], "B", "S", "N", "DV")
    return b.linear(b.reshape(o, "B", "S", "N*DV"), f"{prefix}.o_proj.weight", "H", "N*DV")
