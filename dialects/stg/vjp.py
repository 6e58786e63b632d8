"""The VJP interface: for one forward op and the cotangents of its results, the ops
that compute the cotangents of its operands (stg-autodiff, passes/autodiff/, calls it).

Each op class says how it is differentiated:
- it implements `VjpInterface.vjp` with ordinary stg ops (dX = dY W^T is an einsum), so
  later passes shard and cost its backward like any forward op (einsum, elementwise,
  reduce, shape ops);
- or it is a fused op (`FusedVjp`: attention, norm, softmax, cross-entropy,
  embedding, SSM scan, MoE routing), whose backward is one `stg.vjp` holding the
  forward op, one fused backward kernel as frameworks run it;
- or it declares `NO_GRADIENT`, the reason stg-autodiff stops at it.

A rule receives an `Emitter` that inserts ops into the backward block and maps a
forward value to one the backward may use (`primal`), and returns one cotangent per
operand (None where no gradient flows).

The helpers build ops of other modules of the dialect, which import this one for the
interface: they import them where they run.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar, Protocol

from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Block, Operation, Region, SSAValue

from stagec.dialects.stg.attributes import TensorType
from stagec.dialects.symbolic import Expr


class AutodiffError(Exception):
    """A forward program stg-autodiff cannot differentiate; the message says why."""

    def __init__(self, op: Operation | None, message: str):
        super().__init__(message)
        self.op = op


class Emitter(Protocol):
    def emit(self, op: Operation) -> Operation: ...

    def primal(self, value: SSAValue) -> SSAValue: ...

    def is_active(self, value: SSAValue) -> bool: ...


Cotangents = list[SSAValue | None]


class VjpInterface(ABC):
    """Implemented by every op stg-autodiff differentiates."""

    @abstractmethod
    def vjp(self, em: Emitter, cotangents: Cotangents) -> Cotangents:
        """One cotangent per operand, from one per result (None: none flows)."""


# An op that is not differentiable declares `NO_GRADIENT: ClassVar = "<why>"`;
# stg-autodiff reports that it has no gradient rule if a gradient reaches it.


class FusedVjp(VjpInterface):
    """The gradient of a fused op as one stg.vjp holding a copy of the op."""

    # Operands whose value only selects (routing scores pick experts; they do not
    # scale anything in dispatch), so no gradient flows through them.
    NO_GRADIENT_OPERANDS: ClassVar[tuple[int, ...]] = ()

    def vjp(self, em: Emitter, cotangents: Cotangents) -> Cotangents:
        from stagec.dialects.stg.structure import YieldOp
        from stagec.dialects.stg.training import VjpOp

        op: Operation = self  # type: ignore[assignment]
        wrt = [
            i
            for i, v in enumerate(op.operands)
            if is_differentiable(v) and em.is_active(v) and i not in self.NO_GRADIENT_OPERANDS
        ]
        if not wrt:
            return [None] * len(op.operands)
        body = Block(arg_types=[v.type for v in op.operands])
        clone = op.clone(value_mapper=dict(zip(op.operands, body.args)))
        body.add_ops([clone, YieldOp(*clone.results)])
        cts = [ct if ct is not None else zeros(em, r.type) for ct, r in zip(cotangents, op.results)]
        vjp = em.emit(VjpOp([em.primal(v) for v in op.operands], wrt, cts, Region(body)))
        grads: Cotangents = [None] * len(op.operands)
        for i, g in zip(wrt, vjp.results):
            grads[i] = g
        return grads


def is_differentiable(value: SSAValue) -> bool:
    ty = value.type
    return isinstance(ty, TensorType) and not isinstance(ty.element_type, IntegerType)


def like(ty: TensorType, shape: Sequence[Expr] | None = None, element_type=None) -> TensorType:
    """An unsharded tensor type (autodiff runs before stg-shard) with ty's defaults."""
    return TensorType(
        list(ty.shape if shape is None else shape), ty.element_type if element_type is None else element_type
    )


def elementwise(em: Emitter, kind, inputs, result_type: TensorType, scalar: float | None = None) -> SSAValue:
    from stagec.dialects.stg.compute import ElementwiseOp

    return em.emit(ElementwiseOp(kind, list(inputs), result_type, scalar)).results[0]


def add(em: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    from stagec.dialects.stg.compute import ElementwiseKind

    return elementwise(em, ElementwiseKind.ADD, [a, b], a.type)


def zeros(em: Emitter, ty: TensorType) -> SSAValue:
    from stagec.dialects.stg.shape_ops import FillOp

    return em.emit(FillOp(0.0, like(ty))).results[0]


def unbroadcast(em: Emitter, ct: SSAValue, operand_type: TensorType) -> SSAValue:
    """Sums a result-shaped cotangent over the dims an operand was broadcast along
    (numpy rules: leading dims it lacks, size-1 dims it stretched)."""
    from stagec.dialects.stg.compute import ReduceKind, ReduceOp
    from stagec.dialects.stg.shape_ops import ReshapeOp

    out_shape, shape = ct.type.shape, operand_type.shape
    lead = len(out_shape) - len(shape)
    summed = list(range(lead)) + [
        lead + i for i, size in enumerate(shape) if size == 1 and out_shape[lead + i] != 1
    ]
    if not summed:
        return ct
    kept = [s for i, s in enumerate(out_shape) if i not in summed]
    reduced = em.emit(ReduceOp(ReduceKind.SUM, ct, summed, like(ct.type, kept))).results[0]
    if tuple(kept) == shape:
        return reduced
    return em.emit(ReshapeOp(reduced, like(ct.type, shape))).results[0]
