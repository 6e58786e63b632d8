"""Gradient accumulations in a backward phase: `grad(W) = read(grad(W)) + (t1 + t2 + ...)`,
or with mixed precision `read(grad(W)) + cast(t1 + t2 + ...)` (bf16 terms, f32 buffer).

A weight tied across stages has terms from several stages; stg-pipeline splits such an
accumulation so that each stage adds its own terms to its own copy (builder.py)."""

from __future__ import annotations

from xdsl.ir import Block, Operation, SSAValue

from stagec.dialects.stg.names import GRAD
from stagec.dialects import stg
from stagec.dialects.stg import ElementwiseKind


class Accumulation:
    """`grad(W) = read(grad(W)) + (t1 + t2 + ...)` in the backward phase."""

    def __init__(self, assign: stg.AssignOp, add: stg.ElementwiseOp, read: stg.OptimizerStateOp,
                 read_first: bool, terms: list[SSAValue], ops: list[Operation],
                 cast: stg.ElementwiseOp | None = None):
        self.assign, self.add, self.read, self.read_first = assign, add, read, read_first
        self.terms, self.ops = terms, ops
        self.cast = cast  # the cast of the terms' sum to the buffer's type, if any

    @property
    def param(self) -> str:
        return self.read.param.data


def _single_use_add(value: SSAValue, block: Block) -> stg.ElementwiseOp | None:
    op = value.owner
    if (
        isinstance(op, stg.ElementwiseOp) and op.kind.data == ElementwiseKind.ADD and op.parent is block
        and len(op.inputs) == 2 and value.has_one_use()
        and all(v.type == op.result.type for v in op.inputs)
    ):
        return op
    return None


def _single_use_cast(value: SSAValue, block: Block) -> stg.ElementwiseOp | None:
    op = value.owner
    if (
        isinstance(op, stg.ElementwiseOp) and op.kind.data == ElementwiseKind.CAST and op.parent is block
        and value.has_one_use() and _single_use_add(op.inputs[0], block) is not None
    ):
        return op
    return None


def find_accumulations(block: Block) -> list[Accumulation]:
    found = []
    for assign in block.ops:
        if not (isinstance(assign, stg.AssignOp) and assign.state_name.data == GRAD and assign.param is not None):
            continue
        add = _single_use_add(assign.value, block)
        if add is None:
            continue
        for read_first in (True, False):
            read = add.inputs[0 if read_first else 1].owner
            if (
                isinstance(read, stg.OptimizerStateOp) and read.tensor_name.data == GRAD
                and read.param.data == assign.param.data and read.result.has_one_use()
            ):
                break
        else:
            continue
        terms, ops = [], []

        def expand(value: SSAValue) -> None:
            inner = _single_use_add(value, block)
            if inner is None:
                terms.append(value)
                return
            expand(inner.inputs[0])
            expand(inner.inputs[1])
            ops.append(inner)

        summed = add.inputs[1 if read_first else 0]
        cast = _single_use_cast(summed, block)
        expand(cast.inputs[0] if cast is not None else summed)
        if len(terms) >= 2:
            found_ops = [*ops, cast, add, assign] if cast is not None else [*ops, add, assign]
            found.append(Accumulation(assign, add, read, read_first, terms, found_ops, cast))
    return found
