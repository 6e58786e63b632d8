"""Parameter count: how many trainable numbers a program's `stg.param`s name.

A parameter read inside `stg.repeat` bodies names one tensor per iteration, so it
counts its global numel times the enclosing repeat counts; a name read more than once
(tied embeddings: the token table and the LM head) counts once. Symbols are bound by
the module's `stg.config` and the caller's `bindings` (which win).
"""

from __future__ import annotations

from collections.abc import Mapping

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from stagec.dialects import stg
from stagec.dialects.stg.config import config_bindings
from stagec.dialects.symbolic import Expr, product

__all__ = ["parameter_count", "parameter_sizes"]


def _repeat_count(op: Operation) -> Expr:
    counts = []
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, stg.RepeatOp):
            counts.append(parent.count_expr)
        parent = parent.parent_op()
    return product(counts)


def parameter_sizes(module: ModuleOp) -> dict[str, Expr]:
    """Each distinct parameter name -> its symbolic element count over all layers.
    A name read with two different sizes is an error (two tensors under one name)."""
    sizes: dict[str, Expr] = {}
    for op in module.walk():
        if not isinstance(op, stg.ParamOp):
            continue
        name = op.tensor_name.data
        size = op.result.type.global_numel() * _repeat_count(op)
        if sizes.setdefault(name, size) != size:
            raise ValueError(f"parameter '{name}' is read as {sizes[name]} and as {size} elements")
    return sizes


def parameter_count(module: ModuleOp, bindings: Mapping[str, int] | None = None) -> int:
    """The number of trainable elements, with symbols from `stg.config` and `bindings`."""
    env = {**config_bindings(module), **(bindings or {})}
    return sum(size.evaluate(env) for size in parameter_sizes(module).values())
