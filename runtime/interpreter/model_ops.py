"""Rank-local model ops: attention, embedding, cross-entropy, the SSM scan and MoE
routing, with the semantics of their docstrings in dialects/stg/model_ops.py.

Where a rank holds a block of a dim, the op uses the block's place in the global dim:
causal masking offsets split queries, a vocab-split embedding fills only its own rows
(a partial sum), and cross-entropy over split tokens divides its local sum by the
global token count (a partial sum of the mean).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from stagec.dialects.stg.model_ops import (
    AttentionOp,
    CrossEntropyOp,
    EmbeddingOp,
    MoeCombineOp,
    MoeDispatchOp,
    OpaqueOp,
    SsmScanOp,
    VocabCrossEntropyOp,
    VocabStatKind,
    VocabStatOp,
)
from stagec.dialects.stg.moe_routing import route
from stagec.runtime.interpreter.errors import InterpreterError
from stagec.runtime.interpreter.registry import Rank, implements, per_rank
from stagec.runtime.interpreter.tensor_types import compute_dtype, torch_dtype
from stagec.runtime.interpreter.values import Layout, PerRank, assemble, groups_within


@per_rank(AttentionOp)
def attention(op: AttentionOp, rank: Rank, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """softmax(q k^T / sqrt(d) [causal]) v; GQA repeats each kv head over its group of
    query heads (head h reads kv head h // (heads / kv_heads), in global numbering: a
    rank may hold a whole kv head and only some of the query heads that read it)."""
    acc = compute_dtype(q.dtype)
    q, k, v = q.to(acc), k.to(acc), v.to(acc)
    s, heads, d = q.shape[1], q.shape[2], q.shape[3]
    t, kv_heads = k.shape[1], k.shape[2]
    group = rank.sizes.global_shape(op.query.type)[2] // rank.sizes.global_shape(op.key.type)[2]
    q_start = rank.block_start(op.query.type.splits[2], heads)
    kv_start = rank.block_start(op.key.type.splits[2], kv_heads)
    reads = [(q_start + h) // group - kv_start for h in range(heads)]
    if not all(0 <= i < kv_heads for i in reads):
        raise InterpreterError(
            f"query heads {q_start}..{q_start + heads - 1} read kv heads this rank lacks "
            f"(it holds {kv_start}..{kv_start + kv_heads - 1})"
        )
    if reads != list(range(kv_heads)) or heads != kv_heads:
        index = torch.tensor(reads, device=k.device)
        k, v = k.index_select(2, index), v.index_select(2, index)
    scores = torch.einsum("bsnd,btnd->bnst", q, k) / math.sqrt(d)
    if op.causal is not None:
        # query i (global position) sees keys 0..i; a rank holding a block of the
        # query sequence offsets its positions by the block's start
        start = rank.block_start(op.query.type.splits[1], s)
        # queries over a longer key/value cache are its last positions (docs/inference.md)
        sizes = rank.sizes
        start += sizes.global_shape(op.key.type)[1] - sizes.global_shape(op.query.type)[1]
        positions = torch.arange(start, start + s, device=scores.device).unsqueeze(1)
        scores = scores.masked_fill(torch.arange(t, device=scores.device).unsqueeze(0) > positions, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    out = torch.einsum("bnst,btne->bsne", probs, v)
    return out.to(torch_dtype(op.result.type.element_type))


@per_rank(EmbeddingOp)
def embedding(op: EmbeddingOp, rank: Rank, table: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    vocab = rank.sizes.global_shape(op.table.type)[0]
    ids = ids.long()
    if ids.numel() and (ids.min() < 0 or ids.max() >= vocab):
        raise InterpreterError(f"token ids must lie in [0, {vocab}), got [{ids.min()}, {ids.max()}]")
    rows = table.shape[0]
    start = rank.block_start(op.table.type.splits[0], rows)
    local = ids - start
    mine = (local >= 0) & (local < rows)
    out = F.embedding(local.clamp(0, rows - 1), table)
    if rows != vocab:
        # vocab-parallel: rows another rank holds are zero here (a partial sum)
        out = out * mine.unsqueeze(-1).to(out.dtype)
    return out


@implements(CrossEntropyOp)
def cross_entropy(op: CrossEntropyOp, operands, ex):
    """Sum over local tokens of logsumexp(logits) - logits[label], over the global batch's
    token count: the mean itself on one rank, a partial sum of it over split tokens.
    With a split vocab each rank sees its vocab group's shards put together - its own
    live, the others' as constants - so that a stg.vjp gives each rank the gradient of
    its own shard, as Megatron's vocab-parallel cross-entropy does."""
    logits, labels = operands
    vocab_axes = op.logits.type.splits[-1]
    rank_of = {rank.index: rank for rank in ex.ranks}
    layout = Layout(tuple(() for _ in op.logits.type.splits[:-1]) + (vocab_axes,), frozenset())
    out: PerRank = [None] * ex.mesh.num_ranks
    for group in groups_within(ex.placement, vocab_axes):
        for r in group:
            whole = logits[r]
            if vocab_axes:
                parts = {g: logits[g] if g == r else logits[g].detach() for g in group}
                whole = assemble(parts, layout, ex.mesh, vocab_axes)
            out[r] = _cross_entropy(op, rank_of[r], whole, labels[r])
    return [out]


def _cross_entropy(op: CrossEntropyOp, rank: Rank, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    vocab = logits.shape[-1]
    flat = logits.reshape(-1, vocab).to(compute_dtype(logits.dtype))
    targets = labels.reshape(-1).long()
    if targets.numel() and (targets.min() < 0 or targets.max() >= vocab):
        raise InterpreterError(f"labels must lie in [0, {vocab}), got [{targets.min()}, {targets.max()}]")
    losses = torch.logsumexp(flat, dim=-1) - flat.gather(1, targets.unsqueeze(1)).squeeze(1)
    tokens = math.prod(rank.sizes.global_shape(op.labels.type))
    return (losses.sum() / tokens).to(torch_dtype(op.result.type.element_type))


@per_rank(VocabStatOp)
def vocab_stat(op: VocabStatOp, rank: Rank, logits: torch.Tensor, labels: torch.Tensor,
               maximum: torch.Tensor | None = None) -> torch.Tensor:
    """This rank's share of a vocab-parallel cross-entropy statistic: over its vocab
    shard, the max logit, the label's logit (0 where another shard holds the label), or
    the sum of exp(logit - the group's max)."""
    x = logits.to(compute_dtype(logits.dtype))
    dtype = torch_dtype(op.result.type.element_type)
    kind = op.kind.data
    if kind == VocabStatKind.MAX:
        return x.amax(dim=-1).to(dtype)
    if kind == VocabStatKind.SUM_EXP:
        return torch.exp(x - maximum.to(x.dtype).unsqueeze(-1)).sum(dim=-1).to(dtype)
    shard = x.shape[-1]
    start = rank.block_start(op.logits.type.splits[-1], shard)
    local = labels.long() - start
    mine = (local >= 0) & (local < shard)
    picked = x.gather(-1, local.clamp(0, shard - 1).unsqueeze(-1)).squeeze(-1)
    return torch.where(mine, picked, torch.zeros_like(picked)).to(dtype)


@per_rank(VocabCrossEntropyOp)
def vocab_cross_entropy(op: VocabCrossEntropyOp, rank: Rank, maximum: torch.Tensor, target: torch.Tensor,
                        sum_exp: torch.Tensor) -> torch.Tensor:
    """Sum over local tokens of log(sum_exp) + max - target, over the global batch's
    token count (the fused stg.cross_entropy's loss, from the group's statistics)."""
    losses = torch.log(sum_exp) + maximum - target
    tokens = math.prod(rank.sizes.global_shape(op.maximum.type))
    return (losses.sum() / tokens).to(torch_dtype(op.result.type.element_type))


@per_rank(SsmScanOp)
def ssm_scan(op: SsmScanOp, rank: Rank, decay: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """h[t] = decay[t] * h[t-1] + x[t] along dim, h before the first step = 0."""
    dim = op.dim.value.data
    h = torch.zeros_like(x.select(dim, 0))
    states = []
    for step in range(x.shape[dim]):
        h = decay.select(dim, step) * h + x.select(dim, step)
        states.append(h)
    return torch.stack(states, dim=dim)


# -- MoE routing -------------------------------------------------------------------------


@per_rank(MoeDispatchOp)
def moe_dispatch(op: MoeDispatchOp, rank: Rank, tokens: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    experts, capacity, hidden = rank.sizes.local_shape(op.result.type)
    token, expert, slot, _ = route(scores, op.top_k.value.data, capacity)
    buffers = tokens.new_zeros((experts, capacity, hidden))
    return buffers.index_put((expert, slot), tokens[token])


@per_rank(MoeCombineOp)
def moe_combine(op: MoeCombineOp, rank: Rank, buffers: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    token, expert, slot, chosen = route(scores, op.top_k.value.data, buffers.shape[1])
    weights = scores
    if op.normalize is not None:
        weights = scores / scores.gather(1, chosen).sum(dim=-1, keepdim=True)
    dtype = torch_dtype(op.result.type.element_type)
    contributions = buffers[expert, slot] * weights[token, expert].unsqueeze(1).to(buffers.dtype)
    out = buffers.new_zeros((scores.shape[0], buffers.shape[2]))
    return out.index_add(0, token, contributions).to(dtype)


@implements(OpaqueOp)
def opaque(op: OpaqueOp, operands, ex):
    raise InterpreterError(
        f"stg.opaque \"{op.callee.data}\" cannot be executed: it carries only FLOP and byte "
        "counts, not a computation; write it as stg ops to interpret the program"
    )
