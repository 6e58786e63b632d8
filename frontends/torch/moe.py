"""Mixture-of-experts routing as two torch custom ops that torch.export keeps whole, and
the Hugging Face experts implementation (`stagec_moe`) that uses them.

    torch.ops.stagec.moe_dispatch(tokens [T, H], scores [T, E], top_k, capacity) -> [E, C, H]
    torch.ops.stagec.moe_combine(buffers [E, C, H], scores [T, E], top_k, normalize) -> [T, H]

They compute exactly what stg.moe_dispatch / stg.moe_combine compute (the reference
routing rule, dialects/stg/moe_routing.py's `route`: top-k by score, slots in token order, tokens past the capacity
dropped), so an imported model and its stg program agree numerically; their autograd
formulas make torch's gradients the reference for stg-autodiff's.

Hugging Face's MixtralExperts loops over the experts a batch hits (data-dependent, not
exportable). `stagec_moe` replaces that loop by capacity-based routing (GShard's, the
templates' C = capacity_factor * top_k * T / E, `capacity_factor` on the HF config,
1.0 by default) and batched einsums over the stacked expert weights:

    scores  = scatter(zeros[T, E], top_k_index, top_k_weights)   # the router's normalized top-k
    buffers = moe_dispatch(tokens, scores, k, C)
    gate/up = einsum(buffers, gate_up_proj.view(E, 2, FE, H)[:, 0 / 1]), down = einsum(silu(gate) * up, down_proj)

convert-torch-to-stg declares the two halves of the fused weight as parameters of their
own, `...experts.gate_up_proj[0]` and `...[1]` ([E, FE, H] each: the template's w1 and
w3), so that their gradients are reduced like any other weight's.
    out     = moe_combine(down, scores, k, normalize=False)

convert-torch-to-stg reads `scores` back as the router's softmax probabilities with
top_k and normalize (the scatter of a normalized topk), which is the template's form.
"""

from __future__ import annotations

from fractions import Fraction

import torch

from stagec.dialects.stg.moe_routing import route

__all__ = ["register_experts"]


@torch.library.custom_op("stagec::moe_dispatch", mutates_args=())
def moe_dispatch(tokens: torch.Tensor, scores: torch.Tensor, top_k: int, capacity: int) -> torch.Tensor:
    token, expert, slot, _ = route(scores, top_k, capacity)
    buffers = tokens.new_zeros((scores.shape[1], capacity, tokens.shape[1]))
    return buffers.index_put((expert, slot), tokens[token])


@moe_dispatch.register_fake
def _(tokens, scores, top_k, capacity):
    return tokens.new_empty((scores.shape[1], capacity, tokens.shape[1]))


@torch.library.custom_op("stagec::moe_combine", mutates_args=())
def moe_combine(buffers: torch.Tensor, scores: torch.Tensor, top_k: int, normalize: bool) -> torch.Tensor:
    token, expert, slot, chosen = route(scores, top_k, buffers.shape[1])
    weights = scores / scores.gather(1, chosen).sum(dim=-1, keepdim=True) if normalize else scores
    contributions = buffers[expert, slot] * weights[token, expert].unsqueeze(1).to(buffers.dtype)
    return buffers.new_zeros((scores.shape[0], buffers.shape[2])).index_add(0, token, contributions)


@moe_combine.register_fake
def _(buffers, scores, top_k, normalize):
    return buffers.new_empty((scores.shape[0], buffers.shape[2]))


def _dispatch_setup(ctx, inputs, output):
    tokens, scores, top_k, capacity = inputs
    ctx.save_for_backward(scores)
    ctx.top_k, ctx.capacity, ctx.tokens = top_k, capacity, tokens.shape


def _dispatch_backward(ctx, grad):
    (scores,) = ctx.saved_tensors
    token, expert, slot, _ = route(scores, ctx.top_k, ctx.capacity)
    grad_tokens = grad.new_zeros(ctx.tokens).index_add(0, token, grad[expert, slot])
    return grad_tokens, None, None, None


def _combine_setup(ctx, inputs, output):
    buffers, scores, top_k, normalize = inputs
    if normalize:
        raise NotImplementedError("stagec::moe_combine's gradient is written for normalize=False")
    ctx.save_for_backward(buffers, scores)
    ctx.top_k = top_k


def _combine_backward(ctx, grad):
    buffers, scores = ctx.saved_tensors
    token, expert, slot, _ = route(scores, ctx.top_k, buffers.shape[1])
    grad_buffers = torch.zeros_like(buffers)
    grad_buffers[expert, slot] = grad[token] * scores[token, expert].unsqueeze(1).to(grad.dtype)
    grad_scores = torch.zeros_like(scores)
    grad_scores[token, expert] = (grad[token] * buffers[expert, slot]).sum(-1).to(scores.dtype)
    return grad_buffers, grad_scores, None, None


moe_dispatch.register_autograd(_dispatch_backward, setup_context=_dispatch_setup)
moe_combine.register_autograd(_combine_backward, setup_context=_combine_setup)


def experts_forward(self, hidden_states, top_k_index, top_k_weights):
    """`stagec_moe`: HF's experts (gate_up_proj [E, 2FE, H], down_proj [E, H, FE]) over
    capacity buffers (module doc)."""
    tokens, hidden = hidden_states.shape
    experts, top_k = self.num_experts, top_k_index.shape[-1]
    factor = Fraction(str(getattr(self.config, "capacity_factor", 1.0))) * top_k
    capacity = tokens * factor.numerator // (factor.denominator * experts)
    scores = torch.zeros((tokens, experts), dtype=top_k_weights.dtype, device=hidden_states.device)
    scores = scores.scatter(1, top_k_index, top_k_weights)
    buffers = torch.ops.stagec.moe_dispatch(hidden_states, scores, top_k, capacity)
    gate_up = self.gate_up_proj.view(experts, 2, -1, hidden)
    gate = torch.einsum("ech,efh->ecf", buffers, gate_up[:, 0])
    up = torch.einsum("ech,efh->ecf", buffers, gate_up[:, 1])
    out = torch.einsum("ecf,ehf->ech", self.act_fn(gate) * up, self.down_proj)
    return torch.ops.stagec.moe_combine(out, scores, top_k, False).to(hidden_states.dtype)


_REGISTERED = False


def register_experts() -> str:
    """Registers `stagec_moe` with transformers' ExpertsInterface (once); its name."""
    global _REGISTERED
    if not _REGISTERED:
        from transformers.integrations.moe import ExpertsInterface

        ExpertsInterface.register("stagec_moe", experts_forward)
        _REGISTERED = True
    return "stagec_moe"
