"""The ring cost model the collective matcher minimises: bytes one rank sends, by
dialects/stg/ring.py's ring_factor with n the product of the op's mesh axis sizes.

The model is consistent: all_reduce costs exactly a reduce_scatter plus an all_gather,
and gathering (or reducing) over two axes costs the same in one op as axis by axis.
So the search often meets ties; it breaks them by fewer ops, then by a fixed order.

Sizes may be symbolic. A cost is evaluated with the numbers known (the module's
numeric mesh sizes, its stg.config bindings) and stand-ins for the rest:
UNSIZED_AXIS for a mesh axis without a number, UNBOUND_SYMBOL for any other symbol.
Every candidate sequence for one reshard moves the same global tensor, so the global
size is a common factor of all their costs: the stand-in for dims changes the
reported bytes, never the choice. The choice depends only on the mesh axis sizes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from math import prod

from stagec.dialects.stg.attributes import DistributedTensorType, element_bytes
from stagec.dialects.stg.comm import CollectiveOp
from stagec.dialects.stg.ring import ring_factor
from stagec.dialects.symbolic import Expr

__all__ = ["UNBOUND_SYMBOL", "UNSIZED_AXIS", "Sizes", "global_bytes", "ring_factor", "step_cost"]

UNSIZED_AXIS = 8
"""The size assumed for a mesh axis without a numeric size (`stg.mesh @m [dp, tp]`)."""

UNBOUND_SYMBOL = 4096
"""The value assumed for a dim symbol without a binding (B, S, H, ...)."""


@dataclass(frozen=True)
class Sizes:
    """What is known of the sizes: mesh axis sizes (None: not a number) and symbol
    bindings."""

    mesh_sizes: Mapping[str, int | None]
    bindings: Mapping[str, int]

    def known_axis(self, axis: str) -> int | None:
        size = self.mesh_sizes.get(axis)
        return self.bindings.get(axis) if size is None else size

    def axis(self, axis: str) -> int:
        """The axis size the cost uses: its number, or UNSIZED_AXIS."""
        known = self.known_axis(axis)
        return UNSIZED_AXIS if known is None else known

    def group(self, axes: Iterable[str]) -> int:
        return prod(self.axis(a) for a in axes)

    def known_group(self, axes: Iterable[str]) -> int | None:
        sizes = [self.known_axis(a) for a in axes]
        return None if None in sizes else prod(sizes)

    def known_value(self, expr: Expr) -> int | None:
        """The expression's integer value if the known sizes fix it, else None."""
        env = {**self.bindings, **{a: n for a, n in self.mesh_sizes.items() if n is not None}}
        if not expr.symbols <= env.keys():
            return None
        value = expr.evaluate_fraction({s: env[s] for s in expr.symbols})
        return value.numerator if value.denominator == 1 else None

    def value(self, expr: Expr) -> Fraction:
        """The expression's value with stand-ins for what is not known."""
        env: dict[str, int] = {}
        for symbol in expr.symbols:
            if symbol in self.mesh_sizes:
                env[symbol] = self.axis(symbol)
            else:
                env[symbol] = self.bindings.get(symbol, UNBOUND_SYMBOL)
        return expr.evaluate_fraction(env)


def global_bytes(ty: DistributedTensorType, sizes: Sizes) -> Fraction:
    """Bytes of the whole (global) tensor, with stand-ins for unknown dims."""
    return prod((sizes.value(d) for d in ty.shape), start=Fraction(1)) * element_bytes(ty.element_type)


def step_cost(
    op: type[CollectiveOp],
    axes: Iterable[str],
    input_splits: Iterable[Iterable[str]],
    whole: Fraction,
    sizes: Sizes,
) -> Fraction:
    """Ring-model bytes one rank sends for `op` over `axes`, on an input whose dims
    are split as `input_splits` and whose global tensor has `whole` bytes."""
    local = whole / prod(sizes.group(s) for s in input_splits)
    return ring_factor(op, sizes.group(axes)) * local
