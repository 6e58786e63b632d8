"""Llama (stage.md Table II: grouped-query attention, gate-up-down FFN, RMSNorm) and the
pre-norm decoder that the MoE and MLA templates reuse with their own attention and FFN.

    h   = x + o_proj(attention(rotary(q_proj(n1)), rotary(k_proj(n1)), v_proj(n1)))
    out = h + down_proj(silu(gate_proj(n2)) * up_proj(n2))

with n1 = input_layernorm(x), n2 = post_attention_layernorm(h), and q/k rotated by the
`rope.angles` input. Parameters are HF's LlamaForCausalLM names without the layer index.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from stagec.dialects.stg import ElementwiseKind as EW
from stagec.frontends.templates.blocks import Builder, named
from stagec.frontends.templates.config import ModelConfig

__all__ = ["LayerStack", "build_decoder", "build_llama", "gqa_attention"]

# (builder, normalised input, parameter prefix) -> output
Block = Callable[[Builder, SSAValue, str], SSAValue]


def gqa_attention(b: Builder, x: SSAValue, prefix: str, angles: SSAValue) -> SSAValue:
    """Grouped-query attention: N query heads over KV key/value heads of size D."""
    q = b.reshape(b.linear(x, f"{prefix}.q_proj.weight", "N*D", "H"), "B", "S", "N", "D")
    k = b.reshape(b.linear(x, f"{prefix}.k_proj.weight", "KV*D", "H"), "B", "S", "KV", "D")
    v = b.reshape(b.linear(x, f"{prefix}.v_proj.weight", "KV*D", "H"), "B", "S", "KV", "D")
    q, k = named(b.rotary(q, angles), "q_rot"), named(b.rotary(k, angles), "k_rot")
    o = b.attention(q, k, v, "N", "KV", cache=prefix)
    return b.linear(b.reshape(o, "B", "S", "N*D"), f"{prefix}.o_proj.weight", "H", "N*D")


def bind_gqa(b: Builder) -> None:
    c = b.config
    b.bind(N=c.num_attention_heads, KV=c.num_key_value_heads, D=c.head_dim)


def dense_ffn(b: Builder, x: SSAValue, prefix: str) -> SSAValue:
    return b.swiglu(x, f"{prefix}.mlp", "F")


@dataclass(frozen=True)
class LayerStack:
    """One stg.repeat of identical layers: its count symbol, parameter prefix and FFN."""

    count: str
    prefix: str
    ffn: Block


def build_decoder(b: Builder, attention: Callable[[Builder, SSAValue, str, SSAValue], SSAValue],
                  stacks: list[LayerStack], rope_dim: str) -> ModuleOp:
    """Embedding, the layer stacks in order, the final RMSNorm, LM head and loss."""
    c = b.config
    b.bind(H=c.hidden_size, V=c.vocab_size)

    def layer(stack: LayerStack, angles: SSAValue) -> Callable[[SSAValue], SSAValue]:
        def body(x: SSAValue) -> SSAValue:
            p = stack.prefix
            a = attention(b, b.rms_norm(x, f"{p}.input_layernorm"), f"{p}.self_attn", angles)
            h = named(b.ew(EW.ADD, x, a), "h_attn")
            return b.ew(EW.ADD, h, stack.ffn(b, b.rms_norm(h, f"{p}.post_attention_layernorm"), p))

        return body

    def forward() -> SSAValue:
        ids, labels = b.tokens()
        angles = b.rope_angles(rope_dim)
        x = b.embedding(b.param("model.embed_tokens.weight", "V", "H"), ids)
        for stack in stacks:
            x = b.repeat(stack.count, x, layer(stack, angles))
        x = b.rms_norm(x, "model.norm")
        head = "model.embed_tokens.weight" if c.tie_word_embeddings else "lm_head.weight"
        return b.lm_loss(x, b.param(head, "V", "H"), labels)

    return b.forward_module(forward)


def build_llama(config: ModelConfig, dtype: str = "bf16", phase: str = "train") -> ModuleOp:
    b = Builder(config, dtype, phase)
    bind_gqa(b)
    b.bind(F=config.intermediate_size, L=config.num_hidden_layers)
    return build_decoder(b, gqa_attention, [LayerStack("L", "model.layers", dense_ffn)], "D")
