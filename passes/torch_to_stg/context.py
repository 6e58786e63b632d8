"""The state convert-torch-to-stg keeps while it walks one torch function.

- `View`: a converted torch tensor is an stg value seen through a permutation
  (torch = stg.permute(perm)), so transposes cost nothing until an op needs the
  torch order itself; einsums and attention fold the permutation into their operands.
- `ModelSymbols`: the model's symbols (H, V, N, KV, D, F, E, FE, P, L) and their
  values, and `resolve`, which names a static torch size by them.
- `Unconvertible`: what an op that could not be converted leaves behind; it becomes
  an error only if something converted needs it (a rotary pattern, say, consumes the
  pieces of rotate_half without converting them one by one).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Attribute, Operation, SSAValue

from stagec.dialects.symbolic import Expr
from stagec.passes.diagnostics import PassError

# Symbols in the order a static size is named by default (docs/training-ir.md's table).
DEFAULT_ORDER = ("H", "V", "F", "FE", "FS", "P", "N", "KV", "D", "E")


class ConversionError(PassError):
    """An op convert-torch-to-stg cannot map: names the op, its source line and module path."""


def describe(op: Operation) -> str:
    """`torch.aten.foo` at file.py:12 in module model.layers.0.mlp"""
    loc = op.attributes.get("torch.loc")
    module = op.attributes.get("torch.module")
    text = f"'{op.name}'"
    if isinstance(loc, StringAttr):
        text += f" at {loc.data}"
    if isinstance(module, StringAttr):
        text += f" in module '{module.data}'" if module.data else " in the model's own forward"
    return text


@dataclass(frozen=True)
class View:
    """A torch tensor as an stg value: torch_tensor = value.permute(perm)."""

    value: SSAValue
    perm: tuple[int, ...]

    @property
    def rank(self) -> int:
        return len(self.perm)

    @property
    def identity(self) -> bool:
        return self.perm == tuple(range(len(self.perm)))

    def dims(self) -> list[Expr]:
        """The torch-order sizes."""
        shape = self.value.type.shape
        return [shape[p] for p in self.perm]

    def permuted(self, p: Sequence[int]) -> View:
        """torch.permute(p) of this view."""
        return View(self.value, tuple(self.perm[k] for k in p))


def identity(value: SSAValue) -> View:
    return View(value, tuple(range(value.type.rank)))


@dataclass
class Unconvertible:
    """Why an op's result has no stg form."""

    op: Operation
    reason: str

    def error(self) -> ConversionError:
        return ConversionError(f"cannot convert {describe(self.op)}: {self.reason}", self.op)


@dataclass
class ModelSymbols:
    """The model's symbols and their values, inferred from the graph or given."""

    values: dict[str, int] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)

    def bind(self, name: str, value: int) -> None:
        if name not in self.values:
            self.values[name] = value

    def sym(self, name: str) -> Expr:
        self.used.add(name)
        return Expr.sym(name)

    def resolve(self, size: int, prefer: Iterable[str] = (), exclude: Iterable[str] = ()) -> Expr:
        """A static size as a model symbol: the first of `prefer`, then of the default
        order (less `exclude`), whose value it is; else the number itself."""
        excluded = set(exclude)
        for name in (*prefer, *DEFAULT_ORDER):
            if name not in excluded and self.values.get(name) == size:
                return self.sym(name)
        return Expr.const(size)

    def value_of(self, expr: Expr, samples: dict[str, int]) -> int:
        """`expr` at the model's values and `samples` for B and S; any other symbol
        (a user's own dynamic dim) takes a distinct prime of its own."""
        env = {**self.values, **samples}
        primes = iter((4001, 5003, 6007, 7001, 8009, 9001, 10007, 11003))
        for name in sorted(expr.symbols - env.keys()):
            env[name] = next(primes, 12007)
        return int(expr.evaluate_fraction(env))


_LAYER = re.compile(r"^(?P<prefix>[A-Za-z_][\w.]*?)\.(?P<index>\d+)(?=\.|$)")


def layer_of(path: str) -> tuple[str, int] | None:
    """("model.layers", 3) for "model.layers.3.mlp.up_proj"; None outside a layer list."""
    m = _LAYER.match(path)
    return (m["prefix"], int(m["index"])) if m else None


def strip_layer_index(name: str, prefix: str) -> str:
    """model.layers.3.mlp.up_proj.weight -> model.layers.mlp.up_proj.weight"""
    return re.sub(rf"^{re.escape(prefix)}\.\d+\.", f"{prefix}.", name)


def element_attr(dtype: Attribute) -> Attribute:
    """torch's element types -> stg's: si64 -> i64, the floats as they are."""
    from xdsl.dialects.builtin import IntegerType, Signedness, i1, i32, i64

    if isinstance(dtype, IntegerType):
        return {64: i64, 32: i32, 1: i1}.get(dtype.width.data, dtype) if dtype.signedness.data != Signedness.UNSIGNED or dtype.width.data == 1 else dtype
    return dtype
