"""GPT (GPT-2/GPT-3, Megatron's GPT): stage.md Table II's multi-head attention,
up-down FFN with GeLU and LayerNorm, with learned position embeddings.

    x   = wte[input_ids] + wpe[position_ids]
    h   = x + c_proj(attention(split(c_attn(ln_1(x)))))
    out = h + mlp.c_proj(gelu(mlp.c_fc(ln_2(h))))

Every linear has a bias; LayerNorms have weight and bias; the GeLU is the tanh form
(GPT-2's gelu_new). Names are HF's GPT2LMHeadModel's without the layer index, the
weights in torch's [out, in] orientation (HF's GPT-2 Conv1D stores them transposed).
c_attn's output is [q | k | v], each N heads of D: its weight is held as [3, N*D, H]
and its bias as [3, N*D] (HF's rows, viewed three ways), so that tensor parallelism
splits the heads of each of q, k and v, not the fused dim. The position table is
[P, H], P = n_positions; the LM head is the token table when embeddings are tied.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp, i64
from xdsl.ir import SSAValue

from stagec.dialects.stg import ElementwiseKind as EW
from stagec.dialects.stg import NormKind
from stagec.frontends.templates.blocks import Builder, named
from stagec.frontends.templates.config import ModelConfig

__all__ = ["build_gpt"]


def gpt_layer(b: Builder, x: SSAValue) -> SSAValue:
    p = "transformer.h"
    eps = b.config.layer_norm_epsilon
    a = b.norm(NormKind.LAYER, x, f"{p}.ln_1", eps, bias=True)
    w = b.param(f"{p}.attn.c_attn.weight", "3", "N*D", "H")
    qkv = b.einsum("bsh,knh->bskn", [a, w], "B", "S", "3", "N*D")
    qkv = named(b.ew(EW.ADD, qkv, b.param(f"{p}.attn.c_attn.bias", "3", "N*D")), "qkv")
    q, k, v = (b.reshape(t, "B", "S", "N", "D") for t in b.split(qkv, 2, ["1"] * 3, ["q", "k", "v"]))
    o = b.reshape(b.attention(q, k, v, "N", "N", cache=f"{p}.attn"), "B", "S", "N*D")
    h = b.ew(EW.ADD, x, b.linear(o, f"{p}.attn.c_proj.weight", "H", "N*D", bias=f"{p}.attn.c_proj.bias", hint="attn_out"))
    m = b.norm(NormKind.LAYER, h, f"{p}.ln_2", eps, bias=True)
    m = b.ew(EW.GELU, b.linear(m, f"{p}.mlp.c_fc.weight", "F", "H", bias=f"{p}.mlp.c_fc.bias", hint="fc"))
    return b.ew(EW.ADD, h, b.linear(m, f"{p}.mlp.c_proj.weight", "H", "F", bias=f"{p}.mlp.c_proj.bias", hint="mlp_out"))


def build_gpt(config: ModelConfig, dtype: str = "bf16", phase: str = "train") -> ModuleOp:
    b = Builder(config, dtype, phase)
    c = config
    b.bind(H=c.hidden_size, N=c.num_attention_heads, D=c.head_dim, F=c.intermediate_size,
           V=c.vocab_size, P=c.max_position_embeddings, L=c.num_hidden_layers)

    def forward() -> SSAValue:
        ids, labels = b.tokens()
        positions = b.input("position_ids", "B", "S", element=i64)
        x = b.ew(EW.ADD, b.embedding(b.param("transformer.wte.weight", "V", "H"), ids),
                 b.embedding(b.param("transformer.wpe.weight", "P", "H"), positions))
        x = b.repeat("L", x, lambda h: gpt_layer(b, h))
        x = b.norm(NormKind.LAYER, x, "transformer.ln_f", c.layer_norm_epsilon, bias=True)
        head = "transformer.wte.weight" if c.tie_word_embeddings else "lm_head.weight"
        return b.lm_loss(x, b.param(head, "V", "H"), labels)

    return b.forward_module(forward)
