"""Index-letter signatures: how stg-shard sees an op's operands and results.

Most stg ops are, for distribution, an index space: every operand and result dim is a
letter, and a mesh axis splitting a letter splits it in every tensor that has it
(distribution.py's rule). A signature says which letters each tensor has and what the
op tolerates: letters that must stay whole (a norm's hidden dim, attention's key
sequence), letters that must share a split though their sizes differ (query and
key/value heads), what a contracted split makes of the result (a partial sum, for
sums), and how partial-sum operands pass through (linearity).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from xdsl.ir import Operation

from stagec.dialects.stg.compute import (
    ADDITIVE,
    MULTIPLICATIVE,
    UNARY_LINEAR,
    EinsumOp,
    ElementwiseKind,
    ElementwiseOp,
    NormOp,
    ReduceKind,
    ReduceOp,
    SoftmaxOp,
    parse_equation,
    tensor_type,
)
from stagec.dialects.stg.model_ops import (
    AttentionOp,
    CrossEntropyOp,
    EmbeddingOp,
    MoeCombineOp,
    MoeDispatchOp,
    SsmScanOp,
)


class Linearity(Enum):
    """How partial-sum operands may pass through an op."""

    MULTILINEAR = "multilinear"  # a product: one partial factor per axis (einsum, mul)
    ADDITIVE = "additive"  # a sum: all operands partial over the same axes, or none
    FIRST = "first"  # linear in operand 0 only (scale, div by a whole divisor, sum)
    NONE = "none"  # no partial sum may enter


@dataclass
class Signature:
    operands: list[str]
    results: list[str]
    linearity: Linearity = Linearity.NONE
    unsplit: set[str] = field(default_factory=set)
    # groups of letters that must be split alike (attention heads: n and m)
    tied: list[set[str]] = field(default_factory=list)
    # a split contracted letter makes the result a partial sum; otherwise it may not split
    contract_sums: bool = True
    # an operand may hold the whole of a letter others split (einsum, elementwise)
    slices_locally: bool = False
    # contracted letters the op combines across ranks itself (vocab-parallel loss)
    combined: set[str] = field(default_factory=set)


def signature(op: Operation) -> Signature | None:
    """The op's signature, or None for ops stg-shard handles on their own."""
    match op:
        case EinsumOp():
            subs, out = parse_equation(op.equation.data, [tensor_type(v).rank for v in op.inputs])
            return Signature(list(subs), [out], Linearity.MULTILINEAR, slices_locally=True)
        case ElementwiseOp():
            return _elementwise(op)
        case ReduceOp():
            rank = tensor_type(op.input).rank
            letters = _letters(rank)
            kept = "".join(c for i, c in enumerate(letters) if i not in op.dim_list)
            if op.kind.data in (ReduceKind.MAX, ReduceKind.MIN):
                return Signature([letters], [kept], Linearity.NONE, unsplit={letters[d] for d in op.dim_list})
            return Signature([letters], [kept], Linearity.FIRST)
        case SoftmaxOp():
            letters = _letters(tensor_type(op.input).rank)
            return Signature([letters], [letters], unsplit={letters[op.dim.value.data]})
        case NormOp():
            letters = _letters(tensor_type(op.input).rank)
            return Signature([letters] + [letters[-1]] * (len(op.operands) - 1), [letters], unsplit={letters[-1]})
        case AttentionOp():
            return Signature(["bsnd", "btmd", "btme"], ["bsne"], unsplit={"t", "d", "e"}, tied=[{"n", "m"}])
        case EmbeddingOp():
            ids = _letters(tensor_type(op.indices).rank, start="abcdefg")
            return Signature(["vh", ids], [ids + "h"], Linearity.FIRST)
        case CrossEntropyOp():
            tokens = _letters(tensor_type(op.labels).rank)
            return Signature([tokens + "v", tokens], [""], Linearity.NONE, combined={"v"})
        case SsmScanOp():
            letters = _letters(tensor_type(op.input).rank)
            return Signature([letters, letters], [letters], unsplit={letters[op.dim.value.data]})
        case MoeDispatchOp():
            return Signature(["th", "te"], ["ech"], unsplit={"e"}, tied=[{"t", "c"}])
        case MoeCombineOp():
            return Signature(["ech", "te"], ["th"], Linearity.FIRST, unsplit={"e"}, tied=[{"t", "c"}])
    return None


def _letters(rank: int, start: str = "abcdefghijklmnopqrsuwxyz") -> str:
    return start[:rank]


def _elementwise(op: ElementwiseOp) -> Signature:
    out = tensor_type(op.result)
    letters = _letters(out.rank)
    subs = []
    unsplit: set[str] = set()
    for value in op.inputs:
        ty = tensor_type(value)
        sub = ""
        for letter, size in zip(letters[out.rank - ty.rank :], ty.shape):
            if size == 1 and out.shape[letters.index(letter)] != 1:
                # a broadcast dim is its own letter, and stays whole
                sub += letter.upper()
                unsplit.add(letter.upper())
            else:
                sub += letter
        subs.append(sub)
    kind = op.kind.data
    if kind in ADDITIVE:
        linearity = Linearity.ADDITIVE
    elif kind in UNARY_LINEAR or kind == ElementwiseKind.DIV:
        linearity = Linearity.FIRST
    elif kind in MULTIPLICATIVE:
        linearity = Linearity.MULTILINEAR
    else:
        linearity = Linearity.NONE
    return Signature(subs, [letters], linearity, unsplit=unsplit, slices_locally=True)
