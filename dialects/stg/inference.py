"""Inference state: the key/value cache of a prefill or decode step (docs/inference.md).

A decoder serving requests keeps, per layer and per sequence, the keys and values of
every position it has seen (MLA keeps its compressed latent instead), so that a decode
step computes one new token's K/V and attends over the whole context. The cache is
persistent state, like a parameter: it lives across steps, its memory is counted once
per layer (per enclosing stg.repeat iteration), and a step reads and writes it in place.

    %keys = stg.kv_cache "model.layers.self_attn.key" append %k at T - S
          : !stg.tensor<[B, S, KV, D], bf16> -> !stg.tensor<[B, T, KV, D], bf16>

writes the S new positions of %k into the cache of T positions, at positions
[at, at + S), and yields the whole cache: the positions cached by earlier steps and the
new ones. Dim 1 is the sequence; every other dim of the new entries and the cache
agree (the cache holds what the step computes, for the context T instead of the S new
tokens). A prefill writes its S prompt positions `at 0` into a cache sized for the
context and attends over its own keys; a decode step writes its one token `at T - 1`
(S = 1) and attends over the cache.

The op moves data only: 0 FLOPs, and the bytes of writing the new entries (read them,
write them to the cache). Reading the cache is the cost of the op that consumes it
(stg.attention reads its key and value operands). stg-shard splits the cache as it
splits the new entries (batch over the data-parallel axes, heads over tp); the
sequence stays whole.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import StringAttr
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect
from xdsl.utils.exceptions import VerifyException

from stagec.dialects.stg.attributes import ExprAttr, TensorType
from stagec.dialects.stg.cost import CostInterface, local_bytes
from stagec.dialects.stg.distribution import require_no_partial
from stagec.dialects.stg.mesh import MeshAxesDeclared
from stagec.dialects.stg.sharding import Linearity, ShardingInterface, Signature
from stagec.dialects.stg.syntax import parse_expr
from stagec.dialects.symbolic import Expr

__all__ = ["KvCacheOp"]

SEQUENCE_DIM = 1  # [batch, sequence, ...]: the dim the cache extends


@irdl_op_definition
class KvCacheOp(IRDLOperation, CostInterface, ShardingInterface):
    """Appends new key/value entries to a named per-layer cache and yields the whole
    cache (module doc)."""

    name = "stg.kv_cache"

    FLOP_CATEGORY: ClassVar = "other"
    # the cache is state, not a differentiable value: inference steps have no backward
    NO_GRADIENT: ClassVar = "a key/value cache belongs to inference steps, which have no backward"

    entries = operand_def(TensorType)
    result = result_def(TensorType)
    cache_name = prop_def(StringAttr, prop_name="name")
    position = prop_def(ExprAttr, prop_name="at")

    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect(), MeshAxesDeclared())

    def __init__(self, name: str, entries, cache_type: TensorType, at: int | str | Expr):
        super().__init__(
            operands=[entries],
            result_types=[cache_type],
            properties={"name": StringAttr(name), "at": ExprAttr.of(at)},
        )

    @property
    def at_expr(self) -> Expr:
        return self.position.data

    def print(self, printer: Printer) -> None:
        printer.print_string(f' "{self.cache_name.data}" append ')
        printer.print_operand(self.entries)
        printer.print_string(f" at {self.at_expr}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.entries.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> KvCacheOp:
        name = parser.parse_str_literal()
        parser.parse_keyword("append")
        entries = parser.parse_unresolved_operand()
        parser.parse_keyword("at")
        at = parse_expr(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        entries_type = parser.parse_type()
        parser.parse_punctuation("->")
        cache_type = parser.parse_type()
        op = cls(name, parser.resolve_operand(entries, entries_type), cache_type, at)
        op.attributes |= attrs
        return op

    def verify_(self) -> None:
        what = f"'stg.kv_cache' \"{self.cache_name.data}\""
        if not self.cache_name.data:
            raise VerifyException("'stg.kv_cache' needs a non-empty name")
        new, cache = self.entries.type, self.result.type
        if new.rank < 2 or new.rank != cache.rank:
            raise VerifyException(
                f"{what}: the new entries {new.layout_str()} and the cache {cache.layout_str()} must both be "
                "[batch, sequence, ...] of one rank"
            )
        if new.element_type != cache.element_type:
            raise VerifyException(f"{what}: the cache holds {cache.element_type}, not the entries' {new.element_type}")
        require_no_partial(what, new, "new entries")
        require_no_partial(what, cache, "cache")
        for d in range(new.rank):
            if d == SEQUENCE_DIM:
                continue
            if new.shape[d] != cache.shape[d] or new.splits[d] != cache.splits[d]:
                raise VerifyException(
                    f"{what}: dim {d} of the new entries {new.layout_str()} and of the cache "
                    f"{cache.layout_str()} differ; only the sequence (dim 1) may"
                )
        for role, ty in (("new entries", new), ("cache", cache)):
            if ty.splits[SEQUENCE_DIM]:
                raise VerifyException(
                    f"{what}: the {role} split the sequence over {', '.join(ty.splits[SEQUENCE_DIM])}; "
                    "each rank caches whole sequences"
                )
        s, t = new.shape[SEQUENCE_DIM], cache.shape[SEQUENCE_DIM]
        end = (self.at_expr + s).as_int()
        if self.at_expr.as_int() is not None and self.at_expr.as_int() < 0:
            raise VerifyException(f"{what}: position {self.at_expr} is negative")
        if end is not None and t.as_int() is not None and end > t.as_int():
            raise VerifyException(f"{what}: {s} entries at {self.at_expr} overrun the cache's {t} positions")

    # -- cost ---------------------------------------------------------------------------
    def flops(self) -> Expr:
        return Expr.const(0)

    def bytes_moved(self) -> Expr:
        # read the new entries and write them into the cache; the cache is read by its user
        return 2 * local_bytes([self.entries])

    # -- sharding -----------------------------------------------------------------------
    def sharding_signature(self) -> Signature:
        rest = "cdfgh"[: self.entries.type.rank - 2]
        return Signature([f"as{rest}"], [f"at{rest}"], Linearity.NONE, unsplit={"s", "t"})
