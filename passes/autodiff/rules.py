"""Backward rules: for one forward op and the cotangents of its results, the ops that
compute the cotangents of its operands.

Einsums, elementwise and shape ops get their backward as ordinary stg ops (dX = dY W^T
is an einsum), so later passes shard and cost them like any forward op. Fused ops
(attention, norm, softmax, cross-entropy, embedding, SSM scan, MoE routing) get a
`stg.vjp` holding the forward op, one fused backward kernel as frameworks run it.

A rule receives an `Emitter` that inserts ops into the backward block and maps a
forward value to one the backward may use (`primal`), and returns one cotangent per
operand (None where no gradient flows).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Protocol

from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Block, Operation, Region, SSAValue

from stagec.dialects import stg
from stagec.dialects.stg import ElementwiseKind as E
from stagec.dialects.stg import TensorType
from stagec.dialects.stg.compute import parse_equation
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
Rule = Callable[[Emitter, Operation, Cotangents], Cotangents]


def is_differentiable(value: SSAValue) -> bool:
    ty = value.type
    return isinstance(ty, TensorType) and not isinstance(ty.element_type, IntegerType)


def like(ty: TensorType, shape: Sequence[Expr] | None = None, element_type=None) -> TensorType:
    """An unsharded tensor type (autodiff runs before stg-shard) with ty's defaults."""
    return TensorType(
        list(ty.shape if shape is None else shape), ty.element_type if element_type is None else element_type
    )


def elementwise(em: Emitter, kind: E, inputs, result_type: TensorType, scalar: float | None = None) -> SSAValue:
    return em.emit(stg.ElementwiseOp(kind, list(inputs), result_type, scalar)).results[0]


def add(em: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    return elementwise(em, E.ADD, [a, b], a.type)


def zeros(em: Emitter, ty: TensorType) -> SSAValue:
    return em.emit(stg.FillOp(0.0, like(ty))).results[0]


def unbroadcast(em: Emitter, ct: SSAValue, operand_type: TensorType) -> SSAValue:
    """Sums a result-shaped cotangent over the dims an operand was broadcast along
    (numpy rules: leading dims it lacks, size-1 dims it stretched)."""
    out_shape, shape = ct.type.shape, operand_type.shape
    lead = len(out_shape) - len(shape)
    summed = list(range(lead)) + [
        lead + i for i, size in enumerate(shape) if size == 1 and out_shape[lead + i] != 1
    ]
    if not summed:
        return ct
    kept = [s for i, s in enumerate(out_shape) if i not in summed]
    reduced = em.emit(stg.ReduceOp(stg.ReduceKind.SUM, ct, summed, like(ct.type, kept))).results[0]
    if tuple(kept) == shape:
        return reduced
    return em.emit(stg.ReshapeOp(reduced, like(ct.type, shape))).results[0]


# -- einsum ------------------------------------------------------------------------------


def einsum_rule(em: Emitter, op: stg.EinsumOp, cts: Cotangents) -> Cotangents:
    """d operand_i = einsum(out, other operands -> subs_i) of the result's cotangent."""
    (ct,) = cts
    operands = list(op.inputs)
    subs, out = parse_equation(op.equation.data, [v.type.rank for v in operands])
    grads: Cotangents = []
    for i, (sub, value) in enumerate(zip(subs, operands)):
        if not is_differentiable(value):
            grads.append(None)
            continue
        others = [j for j in range(len(operands)) if j != i]
        if lonely := set(sub) - set(out) - {c for j in others for c in subs[j]}:
            raise AutodiffError(
                op,
                f"einsum '{op.equation.data}': index '{sorted(lonely)[0]}' of operand #{i} is summed "
                "without appearing elsewhere; write the sum as a stg.reduce",
            )
        equation = ",".join([out, *(subs[j] for j in others)]) + "->" + sub
        inputs = [ct, *(em.primal(operands[j]) for j in others)]
        grads.append(em.emit(stg.EinsumOp(equation, inputs, like(value.type))).results[0])
    return grads


# -- elementwise -------------------------------------------------------------------------

_ACTIVATION_GRADS = {
    E.TANH: E.TANH_GRAD,
    E.SIGMOID: E.SIGMOID_GRAD,
    E.RELU: E.RELU_GRAD,
    E.GELU: E.GELU_GRAD,
    E.SILU: E.SILU_GRAD,
    E.SOFTPLUS: E.SOFTPLUS_GRAD,
}


def elementwise_rule(em: Emitter, op: stg.ElementwiseOp, cts: Cotangents) -> Cotangents:
    (ct,) = cts
    kind = op.kind.data
    xs = list(op.inputs)
    out_ty = op.result.type

    def ew(k: E, *inputs, scalar: float | None = None) -> SSAValue:
        return elementwise(em, k, inputs, out_ty, scalar)

    def y() -> SSAValue:
        return em.primal(op.result)

    def x(i: int = 0) -> SSAValue:
        return em.primal(xs[i])

    def wanted(i: int) -> bool:
        return is_differentiable(xs[i]) and em.is_active(xs[i])

    # Each entry makes one operand's gradient, only if that operand needs one.
    makers: list[Callable[[], SSAValue] | None]
    match kind:
        case E.ADD:
            makers = [lambda: ct, lambda: ct]
        case E.SUB:
            makers = [lambda: ct, lambda: ew(E.NEG, ct)]
        case E.MUL:
            makers = [lambda: ew(E.MUL, ct, x(1)), lambda: ew(E.MUL, ct, x(0))]
        case E.DIV:
            quotient = cache(lambda: ew(E.DIV, ct, x(1)))  # d/da, reused by d/db
            makers = [quotient, lambda: ew(E.NEG, ew(E.MUL, quotient(), y()))]
        case E.NEG:
            makers = [lambda: ew(E.NEG, ct)]
        case E.SCALE:
            makers = [lambda: ew(E.SCALE, ct, scalar=op.scalar_value)]
        case E.COPY:
            makers = [lambda: ct]
        case E.CAST:
            makers = [lambda: elementwise(em, E.CAST, [ct], like(out_ty, element_type=xs[0].type.element_type))]
        case E.EXP:
            makers = [lambda: ew(E.MUL, ct, y())]
        case E.LOG:
            makers = [lambda: ew(E.DIV, ct, x())]
        case E.SQRT:
            makers = [lambda: ew(E.SCALE, ew(E.DIV, ct, y()), scalar=0.5)]
        case E.RSQRT:
            makers = [lambda: ew(E.SCALE, ew(E.MUL, ct, ew(E.MUL, y(), ew(E.SQUARE, y()))), scalar=-0.5)]
        case E.SQUARE:
            makers = [lambda: ew(E.SCALE, ew(E.MUL, ct, x()), scalar=2.0)]
        case E.RECIPROCAL:
            makers = [lambda: ew(E.NEG, ew(E.MUL, ct, ew(E.SQUARE, y())))]
        case E.ROTARY:
            if wanted(1):
                raise AutodiffError(op, "rotary: the angles cannot depend on parameters")
            # A rotation is orthogonal: its transpose rotates by -theta (rotate_half pairs
            # d with d + D/2, whose angles are equal by the convention in compute.py).
            makers = [lambda: ew(E.ROTARY, ct, elementwise(em, E.NEG, [x(1)], xs[1].type)), None]
        case _ if kind in _ACTIVATION_GRADS:
            makers = [lambda: ew(_ACTIVATION_GRADS[kind], ct, x())]
        case _:
            raise AutodiffError(op, f"elementwise {kind} has no gradient in stg-autodiff")
    return [
        unbroadcast(em, make(), v.type) if make is not None and wanted(i) else None
        for i, (make, v) in enumerate(zip(makers, xs))
    ]


# -- reductions and shape ops ------------------------------------------------------------


def reduce_rule(em: Emitter, op: stg.ReduceOp, cts: Cotangents) -> Cotangents:
    (ct,) = cts
    src = op.input.type
    dims = op.dim_list
    if op.kind.data != stg.ReduceKind.SUM:
        raise AutodiffError(op, f"reduce {op.kind.data} has no gradient in stg-autodiff; use sum")
    kept_as_one = [Expr.const(1) if i in dims else s for i, s in enumerate(src.shape)]
    expanded = em.emit(stg.ReshapeOp(ct, like(ct.type, kept_as_one))).results[0]
    return [elementwise(em, E.COPY, [expanded], like(src, element_type=ct.type.element_type))]


def reshape_rule(em: Emitter, op: stg.ReshapeOp, cts: Cotangents) -> Cotangents:
    (ct,) = cts
    return [em.emit(stg.ReshapeOp(ct, like(op.input.type))).results[0]]


def transpose_rule(em: Emitter, op: stg.TransposeOp, cts: Cotangents) -> Cotangents:
    (ct,) = cts
    perm = [p.value.data for p in op.perm.data]
    inverse = [perm.index(i) for i in range(len(perm))]
    return [em.emit(stg.TransposeOp(ct, inverse, like(op.input.type))).results[0]]


def concat_rule(em: Emitter, op: stg.ConcatOp, cts: Cotangents) -> Cotangents:
    (ct,) = cts
    pieces = em.emit(stg.SplitOp(ct, op.dim.value.data, [like(v.type) for v in op.inputs])).results
    return [p if is_differentiable(v) else None for p, v in zip(pieces, op.inputs)]


def split_rule(em: Emitter, op: stg.SplitOp, cts: Cotangents) -> Cotangents:
    pieces = [ct if ct is not None else zeros(em, r.type) for ct, r in zip(cts, op.outputs)]
    return [em.emit(stg.ConcatOp(pieces, op.dim.value.data, like(op.input.type))).results[0]]


# -- fused ops: a stg.vjp around the forward op ------------------------------------------


def vjp_rule(em: Emitter, op: Operation, cts: Cotangents) -> Cotangents:
    """The gradient of a fused op as one stg.vjp holding a copy of the op."""
    wrt = [
        i
        for i, v in enumerate(op.operands)
        if is_differentiable(v) and em.is_active(v) and i not in _NO_GRADIENT.get(type(op), ())
    ]
    if not wrt:
        return [None] * len(op.operands)
    body = Block(arg_types=[v.type for v in op.operands])
    clone = op.clone(value_mapper=dict(zip(op.operands, body.args)))
    body.add_ops([clone, stg.YieldOp(*clone.results)])
    cotangents = [ct if ct is not None else zeros(em, r.type) for ct, r in zip(cts, op.results)]
    vjp = em.emit(stg.VjpOp([em.primal(v) for v in op.operands], wrt, cotangents, Region(body)))
    grads: Cotangents = [None] * len(op.operands)
    for i, g in zip(wrt, vjp.results):
        grads[i] = g
    return grads


# Operands whose value only selects (routing scores pick experts; they do not scale
# anything in dispatch), so no gradient flows through them.
_NO_GRADIENT: dict[type, tuple[int, ...]] = {stg.MoeDispatchOp: (1,)}

FUSED_OPS = (
    stg.AttentionOp,
    stg.NormOp,
    stg.SoftmaxOp,
    stg.CrossEntropyOp,
    stg.EmbeddingOp,
    stg.SsmScanOp,
    stg.MoeDispatchOp,
    stg.MoeCombineOp,
)

RULES: dict[type[Operation], Rule] = {
    stg.EinsumOp: einsum_rule,
    stg.ElementwiseOp: elementwise_rule,
    stg.ReduceOp: reduce_rule,
    stg.ReshapeOp: reshape_rule,
    stg.TransposeOp: transpose_rule,
    stg.ConcatOp: concat_rule,
    stg.SplitOp: split_rule,
    **{cls: vjp_rule for cls in FUSED_OPS},
}
