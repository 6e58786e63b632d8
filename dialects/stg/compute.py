"""Compute ops of the stg dialect.

Each op verifies that its operands' layouts let every rank compute its part locally
(see distribution.py) and that the declared result is exactly what it produces, and
reports its per-rank FLOPs and bytes (cost.py). Counting conventions: a multiply-add
is 2 FLOPs; elementwise ops count the per-element work in ELEMENTWISE_FLOPS.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Callable
from enum import auto
from functools import cache
from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, Float64Type, FloatAttr, I64, IntegerAttr, StringAttr, f64, i64
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    AttrSizedOperandSegments,
    ParsePropInAttrDict,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from stagec.dialects.stg.attributes import DistributedTensorType, TensorType
from stagec.dialects.stg.cost import CostInterface, io_bytes
from stagec.dialects.stg.distribution import (
    check_result,
    partials_disjoint,
    require_no_partial,
    require_unsplit,
    unify_letters,
)
from stagec.dialects.stg.mesh import MeshAxesDeclared
from stagec.dialects.stg.sharding import Linearity, ShardingInterface, Signature, letters
from stagec.dialects.stg.vjp import (
    AutodiffError,
    Cotangents,
    Emitter,
    FusedVjp,
    VjpInterface,
    elementwise,
    is_differentiable,
    like,
    unbroadcast,
)
from stagec.dialects.symbolic import Expr, product


class ComputeOp(IRDLOperation, CostInterface, ABC):
    """Shared traits of compute ops; subclasses define the layout rule and the cost."""

    traits = traits_def(Pure(), MeshAxesDeclared())

    def bytes_moved(self) -> Expr:
        return io_bytes(self)


class DataMovementOp(ComputeOp, ABC):
    """A compute op that only moves or regroups elements: no arithmetic."""

    FLOP_CATEGORY: ClassVar = "other"

    def flops(self) -> Expr:
        return Expr.const(0)


def tensor_type(value) -> DistributedTensorType:
    return value.type


def _require_one_element_type(what: str, types: list[DistributedTensorType]) -> None:
    """Mixed precision is explicit in stg: operands meet in one element type (a cast
    makes them); an einsum may still accumulate into a wider result."""
    kinds = sorted({str(t.element_type) for t in types})
    if len(kinds) > 1:
        raise VerifyException(
            f"{what}: operands have different element types ({', '.join(kinds)}); "
            "insert an elementwise cast"
        )


# -- einsum ------------------------------------------------------------------------------


def parse_equation(equation: str, ranks: list[int]) -> tuple[list[str], str]:
    """Split "bh,hf->bf" into operand subscripts and output subscript, checking ranks."""
    if equation.count("->") != 1:
        raise VerifyException(f"einsum equation '{equation}' needs exactly one '->'")
    lhs, out = equation.split("->")
    subs = lhs.split(",")
    for s in (*subs, out):
        if not s.isalpha() or not s.isascii():
            if s:
                raise VerifyException(
                    f"einsum equation '{equation}': subscripts are letters only, not '{s}'"
                )
        if len(set(s)) != len(s):
            raise VerifyException(f"einsum equation '{equation}': '{s}' repeats an index")
    if len(subs) != len(ranks):
        raise VerifyException(
            f"einsum equation '{equation}' has {len(subs)} operand subscripts "
            f"but the op has {len(ranks)} operands"
        )
    for i, (s, r) in enumerate(zip(subs, ranks)):
        if len(s) != r:
            raise VerifyException(
                f"einsum equation '{equation}': operand #{i} has rank {r} "
                f"but subscript '{s}' has {len(s)} indices"
            )
    if missing := set(out) - set("".join(subs)):
        raise VerifyException(
            f"einsum equation '{equation}': output index '{sorted(missing)[0]}' "
            "appears in no operand"
        )
    return subs, out


@irdl_op_definition
class EinsumOp(ComputeOp, ShardingInterface, VjpInterface):
    """Tensor contraction in einsum notation: `stg.einsum "bh,hf->bf" %x, %w`.

    A contracted index split over axes makes the result a partial sum over them
    (stage.md Table III, TP row); an operand that holds a whole dim others split is
    sliced locally.
    """

    name = "stg.einsum"

    FLOP_CATEGORY: ClassVar = "gemm"

    equation = prop_def(StringAttr)
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = "$equation $inputs attr-dict `:` type($inputs) `->` type($result)"

    def __init__(self, equation: str, inputs, result_type: TensorType):
        super().__init__(
            operands=[inputs],
            result_types=[result_type],
            properties={"equation": StringAttr(equation)},
        )

    def _layout(self):
        types = [tensor_type(v) for v in self.inputs]
        what = f"einsum '{self.equation.data}'"
        _require_one_element_type(what, types)
        subs, out = parse_equation(self.equation.data, [t.rank for t in types])
        return what, subs, out, types, unify_letters(what, subs, types)

    def verify_(self) -> None:
        what, subs, out, types, layout = self._layout()
        contracted = set("".join(subs)) - set(out)
        partial = set(partials_disjoint(what, types))
        for letter in contracted:
            partial |= set(layout.splits[letter])
        if clash := partial & {a for letter in out for a in layout.splits[letter]}:
            raise VerifyException(f"{what}: axis '{sorted(clash)[0]}' both splits and sums")
        check_result(
            what,
            tensor_type(self.result),
            [layout.sizes[c] for c in out],
            [layout.splits[c] for c in out],
            partial,
        )

    def flops(self) -> Expr:
        _, _, _, _, layout = self._layout()
        return 2 * product(
            size / product(Expr.sym(a) for a in layout.splits[letter])
            for letter, size in layout.sizes.items()
        )

    def sharding_signature(self) -> Signature:
        subs, out = parse_equation(self.equation.data, [tensor_type(v).rank for v in self.inputs])
        return Signature(list(subs), [out], Linearity.MULTILINEAR, slices_locally=True)

    def vjp(self, em: Emitter, cotangents: Cotangents) -> Cotangents:
        """d operand_i = einsum(out, other operands -> subs_i) of the result's cotangent."""
        (ct,) = cotangents
        operands = list(self.inputs)
        subs, out = parse_equation(self.equation.data, [v.type.rank for v in operands])
        grads: Cotangents = []
        for i, (sub, value) in enumerate(zip(subs, operands)):
            if not is_differentiable(value):
                grads.append(None)
                continue
            others = [j for j in range(len(operands)) if j != i]
            if lonely := set(sub) - set(out) - {c for j in others for c in subs[j]}:
                raise AutodiffError(
                    self,
                    f"einsum '{self.equation.data}': index '{sorted(lonely)[0]}' of operand #{i} is summed "
                    "without appearing elsewhere; write the sum as a stg.reduce",
                )
            equation = ",".join([out, *(subs[j] for j in others)]) + "->" + sub
            inputs = [ct, *(em.primal(operands[j]) for j in others)]
            grads.append(em.emit(EinsumOp(equation, inputs, like(value.type))).results[0])
        return grads




# -- elementwise -------------------------------------------------------------------------


class ElementwiseKind(StrEnum):
    ADD = auto()
    SUB = auto()
    MUL = auto()
    DIV = auto()
    MAX = auto()
    MIN = auto()
    NEG = auto()
    SCALE = auto()
    CAST = auto()
    COPY = auto()
    EXP = auto()
    LOG = auto()
    SQRT = auto()
    RSQRT = auto()
    SQUARE = auto()
    RECIPROCAL = auto()
    TANH = auto()
    SIGMOID = auto()
    RELU = auto()
    GELU = auto()
    SILU = auto()
    DROPOUT = auto()
    ROTARY = auto()
    RELU_GRAD = auto()
    GELU_GRAD = auto()
    SILU_GRAD = auto()
    SIGMOID_GRAD = auto()
    TANH_GRAD = auto()
    SOFTPLUS = auto()
    SOFTPLUS_GRAD = auto()
    SWIGLU = auto()


E = ElementwiseKind

# Semantics the interpreter and stg-autodiff share:
#  - scale: x * c, with c the op's `by` scalar (required for scale, absent otherwise);
#  - rotary(x, theta): x * cos(theta) + rotate_half(x) * sin(theta) over the last dim
#    (rotate_half(x) = cat(-x2, x1) of its halves, Hugging Face's convention); theta
#    broadcasts to x, e.g. [S, 1, D] against [B, S, N, D], and may have a wider float
#    type than x (f32 angles for a bf16 x; the result has x's type);
#  - k_grad(dy, x) = dy * k'(x), x being the forward input (gelu: the tanh form);
#  - swiglu(gate, up) = silu(gate) * up, Llama's MLP activation (Shazeer 2020).
# FLOPs per output element. Transcendentals count 1 (one SFU instruction); gelu is the
# tanh approximation (~8 ops), silu = x * sigmoid(x) (~4); rotary = 2 mul + 1 add per
# element of the rotated pair; *_grad multiply the upstream gradient by the derivative;
# swiglu = silu (4) + the product (1).
ELEMENTWISE_FLOPS: dict[ElementwiseKind, int] = {
    E.ADD: 1, E.SUB: 1, E.MUL: 1, E.DIV: 1, E.MAX: 1, E.MIN: 1, E.NEG: 1, E.SCALE: 1,
    E.CAST: 0, E.COPY: 0, E.EXP: 1, E.LOG: 1, E.SQRT: 1, E.RSQRT: 1, E.SQUARE: 1,
    E.RECIPROCAL: 1, E.TANH: 1, E.SIGMOID: 3, E.RELU: 1, E.GELU: 8, E.SILU: 4,
    E.DROPOUT: 2, E.ROTARY: 3, E.RELU_GRAD: 2, E.GELU_GRAD: 12, E.SILU_GRAD: 7,
    E.SIGMOID_GRAD: 3, E.TANH_GRAD: 3, E.SOFTPLUS: 3, E.SOFTPLUS_GRAD: 4, E.SWIGLU: 5,
}
ARITY: dict[ElementwiseKind, int] = {
    k: 2
    for k in (E.ADD, E.SUB, E.MUL, E.DIV, E.MAX, E.MIN, E.ROTARY, E.SWIGLU)
    + (E.RELU_GRAD, E.GELU_GRAD, E.SILU_GRAD, E.SIGMOID_GRAD, E.TANH_GRAD, E.SOFTPLUS_GRAD)
}
# How partial sums pass through: sums of partial sums are partial sums, and so are
# products with one partial factor; nothing else is linear.
ADDITIVE = {E.ADD, E.SUB}
UNARY_LINEAR = {E.NEG, E.SCALE, E.CAST, E.COPY, E.DROPOUT}
MULTIPLICATIVE = {E.MUL, E.ROTARY}
# An activation's gradient is its *_grad kind applied to (dy, x).
ACTIVATION_GRADS = {
    E.TANH: E.TANH_GRAD,
    E.SIGMOID: E.SIGMOID_GRAD,
    E.RELU: E.RELU_GRAD,
    E.GELU: E.GELU_GRAD,
    E.SILU: E.SILU_GRAD,
    E.SOFTPLUS: E.SOFTPLUS_GRAD,
}


@irdl_attr_definition
class ElementwiseKindAttr(EnumAttribute[ElementwiseKind], SpacedOpaqueSyntaxAttribute):
    name = "stg.elementwise_kind"


@irdl_op_definition
class ElementwiseOp(ComputeOp, ShardingInterface, VjpInterface):
    """An elementwise op, numpy-broadcasting trailing dims: `stg.elementwise gelu %h`,
    `stg.elementwise scale %x by 0.125`."""

    name = "stg.elementwise"

    FLOP_CATEGORY: ClassVar = "elementwise"

    kind = prop_def(ElementwiseKindAttr)
    scalar = opt_prop_def(FloatAttr[Float64Type])
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = "$kind $inputs (`by` $scalar^)? attr-dict `:` type($inputs) `->` type($result)"

    def __init__(self, kind: ElementwiseKind, inputs, result_type: TensorType, scalar: float | None = None):
        super().__init__(
            operands=[inputs],
            result_types=[result_type],
            properties={
                "kind": ElementwiseKindAttr(kind),
                **({"scalar": FloatAttr(scalar, f64)} if scalar is not None else {}),
            },
        )

    @property
    def scalar_value(self) -> float | None:
        return self.scalar.value.data if self.scalar is not None else None

    def verify_(self) -> None:
        kind = self.kind.data
        what = f"elementwise {kind}"
        if (kind == E.SCALE) != (self.scalar is not None):
            raise VerifyException(
                f"{what}: " + ("needs its factor: `scale %x by 0.5`" if kind == E.SCALE else "takes no `by` scalar")
            )
        types = [tensor_type(v) for v in self.inputs]
        if len(types) != ARITY.get(kind, 1):
            raise VerifyException(f"{what} takes {ARITY.get(kind, 1)} operands, not {len(types)}")
        out = tensor_type(self.result)
        letters = "abcdefghijklmnopqrstuvwxyz"[: out.rank]
        subs = []
        for i, ty in enumerate(types):
            if ty.rank > out.rank:
                raise VerifyException(f"{what}: operand #{i} has a higher rank than the result")
            sub = letters[out.rank - ty.rank :]
            for letter, size, split in zip(sub, ty.shape, ty.splits):
                target = out.shape[letters.index(letter)]
                if size == 1 and target != 1:
                    if split:
                        raise VerifyException(f"{what}: a broadcast dim cannot be split")
                    sub = sub.replace(letter, letter.upper())
                elif size != target:
                    raise VerifyException(
                        f"{what}: operand #{i} dim of size {size} does not broadcast to {target}"
                    )
            subs.append(sub)
        if kind == E.CAST:
            same_type = types
        elif kind == E.ROTARY:
            # the angles may be wider than x (f32 for bf16), as Hugging Face takes cos/sin
            same_type = [types[0], out]
        else:
            same_type = [*types, out]
        _require_one_element_type(what, same_type)
        layout = unify_letters(
            what, subs, types, lambda c: f"result dim {letters.index(c.lower())}"
        )
        check_result(
            what, out, out.shape, [layout.splits.get(c, ()) for c in letters], self._partial(what, types)
        )

    def _partial(self, what: str, types: list[DistributedTensorType]) -> frozenset[str]:
        kind = self.kind.data
        if kind in ADDITIVE:
            if len({t.partial_axes for t in types}) != 1:
                raise VerifyException(
                    f"{what}: operands must be partial sums over the same axes "
                    f"({' vs '.join(t.layout_str() for t in types)})"
                )
            return types[0].partial_axes
        if kind in UNARY_LINEAR:
            return types[0].partial_axes
        if kind in MULTIPLICATIVE:
            return partials_disjoint(what, types)
        if kind == E.DIV:
            require_no_partial(what, types[1], "divisor")
            return types[0].partial_axes
        for ty in types:
            require_no_partial(what, ty)
        return frozenset()

    def flops(self) -> Expr:
        return ELEMENTWISE_FLOPS[self.kind.data] * tensor_type(self.result).local_numel()

    def sharding_signature(self) -> Signature:
        out = tensor_type(self.result)
        names = letters(out.rank)
        subs = []
        unsplit: set[str] = set()
        for value in self.inputs:
            ty = tensor_type(value)
            sub = ""
            for letter, size in zip(names[out.rank - ty.rank :], ty.shape):
                if size == 1 and out.shape[names.index(letter)] != 1:
                    # a broadcast dim is its own letter, and stays whole
                    sub += letter.upper()
                    unsplit.add(letter.upper())
                else:
                    sub += letter
            subs.append(sub)
        kind = self.kind.data
        if kind in ADDITIVE:
            linearity = Linearity.ADDITIVE
        elif kind in UNARY_LINEAR or kind == E.DIV:
            linearity = Linearity.FIRST
        elif kind in MULTIPLICATIVE:
            linearity = Linearity.MULTILINEAR
        else:
            linearity = Linearity.NONE
        return Signature(subs, [names], linearity, unsplit=unsplit, slices_locally=True)

    def vjp(self, em: Emitter, cotangents: Cotangents) -> Cotangents:
        (ct,) = cotangents
        kind = self.kind.data
        xs = list(self.inputs)
        out_ty = self.result.type

        def ew(k: E, *inputs, scalar: float | None = None) -> SSAValue:
            return elementwise(em, k, inputs, out_ty, scalar)

        def y() -> SSAValue:
            return em.primal(self.result)

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
                makers = [lambda: ew(E.SCALE, ct, scalar=self.scalar_value)]
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
                    raise AutodiffError(self, "rotary: the angles cannot depend on parameters")
                # A rotation is orthogonal: its transpose rotates by -theta (rotate_half
                # pairs d with d + D/2, whose angles are equal by the convention above).
                makers = [lambda: ew(E.ROTARY, ct, elementwise(em, E.NEG, [x(1)], xs[1].type)), None]
            case E.SWIGLU:
                # d gate = dy * up * silu'(gate); d up = dy * silu(gate)
                makers = [
                    lambda: ew(E.SILU_GRAD, ew(E.MUL, ct, x(1)), x(0)),
                    lambda: ew(E.MUL, ct, ew(E.SILU, x(0))),
                ]
            case _ if kind in ACTIVATION_GRADS:
                makers = [lambda: ew(ACTIVATION_GRADS[kind], ct, x())]
            case _:
                raise AutodiffError(self, f"elementwise {kind} has no gradient in stg-autodiff")
        return [
            unbroadcast(em, make(), v.type) if make is not None and wanted(i) else None
            for i, (make, v) in enumerate(zip(makers, xs))
        ]




# -- reductions and normalisations -----------------------------------------------------


class ReduceKind(StrEnum):
    SUM = auto()
    MEAN = auto()
    MAX = auto()
    MIN = auto()


@irdl_attr_definition
class ReduceKindAttr(EnumAttribute[ReduceKind], SpacedOpaqueSyntaxAttribute):
    name = "stg.reduce_kind"


def dims_property(dims) -> ArrayAttr[IntegerAttr]:
    return ArrayAttr(IntegerAttr(d, i64) for d in dims)


def check_dims(what: str, dims: list[int], rank: int) -> None:
    if len(set(dims)) != len(dims) or any(not 0 <= d < rank for d in dims):
        raise VerifyException(f"{what}: dims {dims} must be distinct and in [0, {rank})")


@irdl_op_definition
class ReduceOp(ComputeOp, ShardingInterface, VjpInterface):
    """Reduces dims away: `stg.reduce sum %x dims [1]`. A sum over a split dim leaves a
    partial sum over its axes; max/min need the dim whole."""

    name = "stg.reduce"

    FLOP_CATEGORY: ClassVar = "elementwise"

    kind = prop_def(ReduceKindAttr)
    dims = prop_def(ArrayAttr[IntegerAttr])
    input = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = "$kind $input `dims` $dims attr-dict `:` type($input) `->` type($result)"

    def __init__(self, kind: ReduceKind, input, dims, result_type: TensorType):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"kind": ReduceKindAttr(kind), "dims": dims_property(dims)},
        )

    @property
    def dim_list(self) -> list[int]:
        return [d.value.data for d in self.dims.data]

    def verify_(self) -> None:
        kind = self.kind.data
        what = f"reduce {kind}"
        src = tensor_type(self.input)
        dims = self.dim_list
        check_dims(what, dims, src.rank)
        partial = set(src.partial_axes)
        if kind in (ReduceKind.MAX, ReduceKind.MIN):
            require_no_partial(what, src)
            for d in dims:
                require_unsplit(what, src, d, f"a {kind} cannot be a partial result")
        else:
            for d in dims:
                partial |= set(src.splits[d])
        kept = [i for i in range(src.rank) if i not in dims]
        check_result(
            what, tensor_type(self.result), [src.shape[i] for i in kept], [src.splits[i] for i in kept], partial
        )

    def flops(self) -> Expr:
        return tensor_type(self.input).local_numel()

    def sharding_signature(self) -> Signature:
        names = letters(tensor_type(self.input).rank)
        kept = "".join(c for i, c in enumerate(names) if i not in self.dim_list)
        if self.kind.data in (ReduceKind.MAX, ReduceKind.MIN):
            return Signature([names], [kept], Linearity.NONE, unsplit={names[d] for d in self.dim_list})
        return Signature([names], [kept], Linearity.FIRST)

    def vjp(self, em: Emitter, cotangents: Cotangents) -> Cotangents:
        from stagec.dialects.stg.shape_ops import ReshapeOp

        (ct,) = cotangents
        src = self.input.type
        dims = self.dim_list
        if self.kind.data != ReduceKind.SUM:
            raise AutodiffError(self, f"reduce {self.kind.data} has no gradient in stg-autodiff; use sum")
        kept_as_one = [Expr.const(1) if i in dims else s for i, s in enumerate(src.shape)]
        expanded = em.emit(ReshapeOp(ct, like(ct.type, kept_as_one))).results[0]
        return [elementwise(em, E.COPY, [expanded], like(src, element_type=ct.type.element_type))]




@irdl_op_definition
class SoftmaxOp(ComputeOp, ShardingInterface, FusedVjp):
    """Softmax along one dim, which must be whole on every rank."""

    name = "stg.softmax"

    FLOP_CATEGORY: ClassVar = "elementwise"

    dim = prop_def(IntegerAttr[I64])
    input = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = "$input `dim` $dim attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input, dim: int):
        super().__init__(operands=[input], result_types=[input.type], properties={"dim": IntegerAttr(dim, i64)})

    def verify_(self) -> None:
        src, d = tensor_type(self.input), self.dim.value.data
        check_dims("softmax", [d], src.rank)
        require_no_partial("softmax", src)
        require_unsplit("softmax", src, d, "it normalises along it")
        check_result("softmax", tensor_type(self.result), src.shape, src.splits, ())

    def flops(self) -> Expr:
        # max, subtract, exp, sum, divide
        return 5 * tensor_type(self.input).local_numel()

    def sharding_signature(self) -> Signature:
        names = letters(tensor_type(self.input).rank)
        return Signature([names], [names], unsplit={names[self.dim.value.data]})



class NormKind(StrEnum):
    RMS = auto()
    LAYER = auto()


@irdl_attr_definition
class NormKindAttr(EnumAttribute[NormKind], SpacedOpaqueSyntaxAttribute):
    name = "stg.norm_kind"


@irdl_op_definition
class NormOp(ComputeOp, ShardingInterface, FusedVjp):
    """RMSNorm or LayerNorm over the last dim: `stg.norm rms %x, %w {eps = ...}`."""

    name = "stg.norm"

    FLOP_CATEGORY: ClassVar = "elementwise"

    kind = prop_def(NormKindAttr)
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    eps = opt_prop_def(FloatAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    assembly_format = (
        "$kind $input `,` $weight (`,` $bias^)? attr-dict `:` type($input) `,` type($weight)"
        " (`,` type($bias)^)? `->` type($result)"
    )

    def __init__(self, kind: NormKind, input, weight, bias=None):
        super().__init__(
            operands=[input, weight, [bias] if bias is not None else []],
            result_types=[input.type],
            properties={"kind": NormKindAttr(kind)},
        )

    def verify_(self) -> None:
        what = f"norm {self.kind.data}"
        x = tensor_type(self.input)
        if x.rank == 0:
            raise VerifyException(f"{what}: the input needs at least one dim")
        require_no_partial(what, x)
        require_unsplit(what, x, x.rank - 1, "it normalises along it")
        if self.kind.data == NormKind.RMS and self.bias is not None:
            raise VerifyException(f"{what}: RMSNorm has no bias")
        for role, p in (("weight", self.weight), ("bias", self.bias)):
            if p is None:
                continue
            t = tensor_type(p)
            if t.shape != (x.shape[-1],) or t.splits != ((),) or t.partial_axes:
                raise VerifyException(
                    f"{what}: the {role} must be the whole [{x.shape[-1]}] vector, not {t.layout_str()}"
                )
        check_result(what, tensor_type(self.result), x.shape, x.splits, ())

    def flops(self) -> Expr:
        per_element = 4 if self.kind.data == NormKind.RMS else 7
        return per_element * tensor_type(self.input).local_numel()

    def sharding_signature(self) -> Signature:
        names = letters(tensor_type(self.input).rank)
        return Signature([names] + [names[-1]] * (len(self.operands) - 1), [names], unsplit={names[-1]})

