"""The routing rule of stg.moe_dispatch / stg.moe_combine, in numbers: the one
definition the reference interpreter (runtime/interpreter/model_ops.py) and the torch
custom ops an imported model calls (frontends/torch/moe.py) both compute with, so an
imported model and its stg program route every token alike.
"""

from __future__ import annotations

import torch

__all__ = ["route"]


def route(scores: torch.Tensor, top_k: int, capacity: int):
    """moe_dispatch's routing: each token's top-k experts (descending score, ties to the
    lower expert index), its slot in an expert = the earlier tokens routed there, and
    slots past capacity dropped. Returns the kept (token, expert, slot) triples and each
    token's top-k experts [T, k].

    With the tokens split over ranks, each rank routes its own tokens into its own
    block of the capacity dim (a per-rank capacity, as expert-parallel training does).
    Slots then differ from the unsharded routing, and so may drops; what moe_combine
    returns per token is the same wherever neither drops a token."""
    chosen = torch.sort(scores, dim=-1, descending=True, stable=True).indices[:, :top_k]
    routed = torch.zeros(scores.shape, dtype=torch.bool).scatter(1, chosen, True)
    slots = routed.long().cumsum(dim=0) - 1
    token, expert = routed.nonzero(as_tuple=True)
    slot = slots[token, expert]
    kept = slot < capacity
    return token[kept], expert[kept], slot[kept], chosen
