"""The sharding interface: how stg-shard sees an op's operands and results.

Most stg ops are, for distribution, an index space: every operand and result dim is a
letter, and a mesh axis splitting a letter splits it in every tensor that has it
(distribution.py's rule). An op's signature says which letters each tensor has and
what the op tolerates: letters that must stay whole (a norm's hidden dim, attention's
key sequence), letters that must share a split though their sizes differ (query and
key/value heads), what a contracted split makes of the result (a partial sum, for
sums), and how partial-sum operands pass through (linearity). stg-shard's solver
(passes/shard/) reads nothing else about the op.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import Enum


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


class ShardingInterface(ABC):
    """Implemented by every op stg-shard distributes by its index signature (ops whose
    layout rule is not an index space, such as reshape, are laid out by stg-shard)."""

    @abstractmethod
    def sharding_signature(self) -> Signature: ...


def letters(rank: int, start: str = "abcdefghijklmnopqrsuwxyz") -> str:
    return start[:rank]
