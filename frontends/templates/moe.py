"""Mixture-of-experts FFNs (stage.md Table II: MoE, MoE with shared experts) and the
Mixtral and DeepSeek-MoE models built on the Llama decoder.

Routed experts (GShard-style capacity, Mixtral's and DeepSeek's top-k softmax router):

    scores  = softmax(tokens @ gate^T)                 [B*S, E]   (f32 or wider)
    buffers = moe_dispatch(tokens, scores, top_k)      [E, C, H], C = capacity_factor*top_k*B*S/E
    y       = down(silu(gate_e(buffers)) * up_e(buffers))   batched einsums over the E experts
    out     = moe_combine(y, scores, top_k [normalize])     [B*S, H]

Expert weights are one tensor per projection with a leading [E] dim, named by HF's
expert parameter name without the layer and expert indices
(`model.layers.block_sparse_moe.experts.w1.weight` [E, FE, H] holds experts.0..E-1.w1).

DeepSeek-MoE adds a dense SwiGLU of size FS = n_shared_experts * moe_intermediate_size
(`mlp.shared_experts`) to the routed output, and keeps its first `first_k_dense_replace`
layers dense: those form the first stack (L layers, `model.layers.*`), the MoE layers a
second (L2 layers, `model.moe_layers.*`; HF's layer index is first_k_dense_replace + i).
A config without dense layers has one MoE stack, `model.layers.*`, of L layers.
Left out: the router's auxiliary load-balancing loss, and DeepSeek-V2's device-limited
(group) routing, which is plain top-k for V2-Lite's `greedy` method. DeepSeek-V3/R1's
router (sigmoid scores, the aux-loss-free correction bias, top-k within the best 4 of
8 expert groups) is built as this softmax top-k: other experts are chosen, with the
same shapes and dispatch (docs/inference.md, "Table IX").
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from stagec.dialects import stg
from stagec.dialects.stg import ElementwiseKind as EW
from stagec.frontends.templates.blocks import Builder, capacity, named
from stagec.frontends.templates.config import ModelConfig
from stagec.frontends.templates.llama import LayerStack, bind_gqa, build_decoder, dense_ffn, gqa_attention

__all__ = ["build_deepseek_moe", "build_mixtral", "deepseek_ffn", "moe_stacks", "routed_experts"]


def routed_experts(b: Builder, x: SSAValue, prefix: str, names: tuple[str, str, str],
                   normalize: bool, scale: float = 1.0) -> SSAValue:
    """Top-k routed SwiGLU experts on x [B, S, H]; `prefix.gate.weight` is the router,
    `prefix.experts.{gate, up, down}.weight` the stacked expert projections."""
    c = b.config
    top_k = c.num_experts_per_tok
    tokens = named(b.reshape(x, "B*S", "H"), "tokens")
    logits = b.linear(tokens, f"{prefix}.gate.weight", "E", "H", hint="router_logits")
    scores = named(stg.SoftmaxOp(b.cast(logits, b.wide), 1).result, "scores")
    cap = capacity(c)
    buffers = named(stg.MoeDispatchOp(tokens, scores, top_k, b.t("E", cap, "H")).result, "dispatched")
    gate_name, up_name, down_name = (f"{prefix}.experts.{n}.weight" for n in names)
    gate = named(b.einsum("ech,efh->ecf", [buffers, b.param(gate_name, "E", "FE", "H")], "E", cap, "FE"), "expert_gate")
    up = named(b.einsum("ech,efh->ecf", [buffers, b.param(up_name, "E", "FE", "H")], "E", cap, "FE"), "expert_up")
    act = named(b.ew(EW.MUL, b.ew(EW.SILU, gate), up), "expert_act")
    y = b.einsum("ecf,ehf->ech", [act, b.param(down_name, "E", "H", "FE")], "E", cap, "H")
    out = named(stg.MoeCombineOp(named(y, "expert_out"), scores, top_k, b.t("B*S", "H"), normalize).result, "combined")
    if scale != 1.0:
        out = b.ew(EW.SCALE, out, scalar=scale)
    return named(b.reshape(out, "B", "S", "H"), "routed")


def bind_experts(b: Builder, expert_size: int) -> None:
    c = b.config
    b.bind(E=c.num_local_experts, FE=expert_size)
    if c.n_shared_experts:
        b.bind(FS=c.n_shared_experts * c.moe_intermediate_size)


def mixtral_ffn(b: Builder, x: SSAValue, prefix: str) -> SSAValue:
    return routed_experts(b, x, f"{prefix}.block_sparse_moe", ("w1", "w3", "w2"), b.config.norm_topk_prob)


def deepseek_ffn(b: Builder, x: SSAValue, prefix: str) -> SSAValue:
    """Routed experts plus the always-on shared experts."""
    c = b.config
    normalize = c.norm_topk_prob and c.num_experts_per_tok > 1
    names = ("gate_proj", "up_proj", "down_proj")
    y = routed_experts(b, x, f"{prefix}.mlp", names, normalize, c.routed_scaling_factor)
    if c.n_shared_experts:
        shared = named(b.swiglu(x, f"{prefix}.mlp.shared_experts", "FS"), "shared")
        y = b.ew(EW.ADD, y, shared)
    return y


def moe_stacks(b: Builder) -> list[LayerStack]:
    """DeepSeek's layer stacks: first_k_dense_replace dense layers, then MoE layers."""
    c = b.config
    bind_experts(b, c.moe_intermediate_size)
    dense = c.first_k_dense_replace
    if not dense:
        b.bind(L=c.num_hidden_layers)
        return [LayerStack("L", "model.layers", deepseek_ffn)]
    b.bind(L=dense, L2=c.num_hidden_layers - dense, F=c.intermediate_size)
    return [LayerStack("L", "model.layers", dense_ffn), LayerStack("L2", "model.moe_layers", deepseek_ffn)]


def build_mixtral(config: ModelConfig, dtype: str = "bf16", phase: str = "train") -> ModuleOp:
    b = Builder(config, dtype, phase)
    bind_gqa(b)
    # Mixtral's experts are full-size FFNs: FE is its intermediate_size
    bind_experts(b, config.intermediate_size)
    b.bind(L=config.num_hidden_layers)
    return build_decoder(b, gqa_attention, [LayerStack("L", "model.layers", mixtral_ffn)], "D")


def build_deepseek_moe(config: ModelConfig, dtype: str = "bf16", phase: str = "train") -> ModuleOp:
    b = Builder(config, dtype, phase)
    bind_gqa(b)
    return build_decoder(b, gqa_attention, moe_stacks(b), "D")
