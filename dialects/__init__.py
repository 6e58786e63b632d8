"""The dialects stagec speaks: stg (symbolic sharded tensors), torch (torch-mlir input) and
ps (Di-PS cross-cluster programs)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from xdsl.context import Context
from xdsl.ir import Dialect, Operation


def _builtin() -> Dialect:
    from xdsl.dialects.builtin import Builtin

    return Builtin


def _func() -> Dialect:
    from xdsl.dialects.func import Func

    return Func


def _stg() -> Dialect:
    from stagec.dialects.stg import STG

    return STG


def _ps() -> Dialect:
    from stagec.dialects.ps import PS

    return PS


def _torch() -> Dialect:
    from stagec.dialects.torch import Torch

    return Torch


def all_dialects() -> dict[str, Callable[[], Dialect]]:
    """Every dialect stagec-opt loads, by name; factories so that loading stays lazy."""
    return {"builtin": _builtin, "func": _func, "stg": _stg, "torch": _torch, "ps": _ps}


def make_context() -> Context:
    """A Context with every dialect of `all_dialects()` registered (loaded lazily),
    in which the torch dialect owns every `torch.*` op name, as parsing torch-mlir
    input needs."""
    # torch-mlir's shape maps (`s0 * s1`) are semi-affine; affine_map aliases are
    # parsed before any torch op loads the torch dialect, so enable them up front.
    from stagec.dialects.torch import allow_semi_affine

    allow_semi_affine()
    ctx = _StagecContext()
    for name, factory in all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx


class _StagecContext(Context):
    """A Context in which a dialect may own every op name under its prefix.

    torch-mlir has thousands of ops, so the torch dialect makes one generic op class
    per name on demand through its `generic_op(name)`, the way Context itself makes
    UnregisteredOp classes; ops a dialect declares are still found first.
    """

    def get_optional_op(
        self, name: str, *, dialect_stack: Sequence[str] = ()
    ) -> type[Operation] | None:
        if "." in name and name not in self._loaded_ops:
            dialect = self.get_optional_dialect(Dialect.split_name(name)[0])
            generic_op = getattr(dialect, "generic_op", None)
            # Loading the dialect may have loaded a declared op of that name.
            if generic_op is not None and name not in self._loaded_ops:
                self.load_op(generic_op(name))
        return super().get_optional_op(name, dialect_stack=dialect_stack)

    def clone(self) -> _StagecContext:
        # Context.clone builds a plain Context; rebuild it as this class from its
        # fields so that a clone keeps owning op names by prefix.
        copy = super().clone()
        fields = dataclasses.fields(copy)
        return _StagecContext(**{f.name: getattr(copy, f.name) for f in fields})
