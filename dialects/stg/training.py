"""Training ops: vector-Jacobian products and optimizer updates.

stg-autodiff writes the backward of an einsum, an elementwise op or a shape op as
ordinary stg ops (dX = dY W^T is an einsum), and the backward of a fused op
(attention, norm, softmax, cross-entropy, embedding, SSM scan, MoE routing) as a
`stg.vjp` that holds the forward computation in its body:

    %dq, %dk, %dv = stg.vjp(%q, %k, %v) wrt [0, 1, 2] cotangents(%do : To) {
    ^bb0(%a : Tq, %b : Tk, %c : Tv):
      %o = stg.attention %a, %b, %c heads 32 kv_heads 8 causal : ...
      stg.yield %o : To
    } : (Tq, Tk, Tv) -> (Tq, Tk, Tv)

so the gradient is exactly the forward's (the interpreter differentiates the body),
one trace node stands for one fused backward kernel, and its cost is the body's
backward cost (CostInterface.backward_flops).

The optimizer ops are the real arithmetic of torch.optim.SGD / Adam / AdamW on one
parameter's tensors (fp32 master weights and states under mixed precision).
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, Float64Type, FloatAttr, IntegerAttr, UnitAttr, f64
from xdsl.ir import Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    opt_result_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from stagec.dialects.stg.names import EXP_AVG, EXP_AVG_SQ, GRAD
from stagec.dialects.stg.attributes import DistributedTensorType, TensorType
from stagec.dialects.stg.compute import dims_property, tensor_type
from stagec.dialects.stg.cost import CostInterface, io_bytes
from stagec.dialects.stg.mesh import MeshAxesDeclared
from stagec.dialects.stg.structure import terminator
from stagec.dialects.symbolic import Expr, sum_exprs


def _same_tensor(a: DistributedTensorType, b: DistributedTensorType) -> bool:
    """Same global shape, element type and splits; partial sums may differ (the
    gradient of a duplicated weight used by split tokens is a partial sum)."""
    return a.shape == b.shape and a.splits == b.splits and a.element_type == b.element_type


@irdl_op_definition
class VjpOp(IRDLOperation, CostInterface):
    """The gradients of the body's computation with respect to the primals listed in
    `wrt`, given the cotangents of the values the body yields (see module doc)."""

    name = "stg.vjp"

    primals = var_operand_def(TensorType)
    cotangents = var_operand_def(TensorType)
    wrt = prop_def(ArrayAttr[IntegerAttr])
    grads = var_result_def(TensorType)
    body = region_def("single_block")

    traits = traits_def(Pure(), MeshAxesDeclared())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, primals, wrt: list[int], cotangents, body: Region, grad_types=None):
        primals = list(primals)
        if grad_types is None:
            grad_types = [primals[i].type for i in wrt]
        super().__init__(
            operands=[primals, list(cotangents)],
            result_types=[list(grad_types)],
            regions=[body],
            properties={"wrt": dims_property(wrt)},
        )

    @property
    def wrt_indices(self) -> list[int]:
        return [a.value.data for a in self.wrt.data]

    @property
    def forward_ops(self) -> list:
        return [op for op in self.body.block.ops if op is not terminator(self.body)]

    def verify_(self) -> None:
        what = "'stg.vjp'"
        if not self.body.blocks:
            raise VerifyException(f"{what}: the body must end with stg.yield")
        if [a.type for a in self.body.block.args] != [p.type for p in self.primals]:
            raise VerifyException(f"{what}: the body's arguments must have the primals' types")
        yielded = terminator(self.body)
        if yielded is None:
            raise VerifyException(f"{what}: the body must end with stg.yield")
        outs = [v.type for v in yielded.values]
        cts = [c.type for c in self.cotangents]
        if len(outs) != len(cts) or not all(_same_tensor(o, c) for o, c in zip(outs, cts)):
            raise VerifyException(f"{what}: one cotangent per yielded value, shaped and split like it")
        wrt = self.wrt_indices
        if len(set(wrt)) != len(wrt) or any(not 0 <= i < len(self.primals) for i in wrt):
            raise VerifyException(f"{what}: wrt {wrt} must name distinct primals in [0, {len(self.primals)})")
        if len(wrt) != len(self.grads):
            raise VerifyException(f"{what}: {len(wrt)} primals in wrt but {len(self.grads)} results")
        for i, g in zip(wrt, self.grads):
            if not _same_tensor(self.primals[i].type, g.type):
                raise VerifyException(
                    f"{what}: the gradient {g.type.layout_str()} must be shaped and split like "
                    f"primal #{i} {self.primals[i].type.layout_str()}"
                )

    def flops(self) -> Expr:
        return sum_exprs(op.backward_flops() for op in self.forward_ops if isinstance(op, CostInterface))

    def flop_category(self) -> str:
        """A fused backward kernel runs as its forward op did; one holding an attention
        is an attention kernel, whatever else it fuses."""
        inner = [op for op in self.forward_ops if isinstance(op, CostInterface)]
        if any(op.flop_category() == "attention" for op in inner):
            return "attention"
        return inner[0].flop_category() if inner else "other"

    def bytes_moved(self) -> Expr:
        return io_bytes(self)

    def print(self, printer: Printer) -> None:
        printer.print_string("(")
        printer.print_list(self.primals, printer.print_operand)
        printer.print_string(f") wrt [{', '.join(str(i) for i in self.wrt_indices)}] cotangents(")
        printer.print_list(
            self.cotangents,
            lambda c: (printer.print_operand(c), printer.print_string(" : "), printer.print_attribute(c.type)),
        )
        printer.print_string(") ")
        printer.print_region(self.body, print_entry_block_args=True, print_block_terminators=True)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : (")
        printer.print_list([p.type for p in self.primals], printer.print_attribute)
        printer.print_string(") -> (")
        printer.print_list([g.type for g in self.grads], printer.print_attribute)
        printer.print_string(")")

    @classmethod
    def parse(cls, parser: Parser) -> VjpOp:
        primals = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_unresolved_operand)
        parser.parse_keyword("wrt")
        wrt = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)
        parser.parse_keyword("cotangents")

        def parse_cotangent():
            operand = parser.parse_unresolved_operand()
            parser.parse_punctuation(":")
            return parser.resolve_operand(operand, parser.parse_type())

        cotangents = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parse_cotangent)
        body = parser.parse_region()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        primal_types = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
        parser.parse_punctuation("->")
        grad_types = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
        if len(primal_types) != len(primals):
            parser.raise_error(f"expected {len(primals)} primal types, got {len(primal_types)}")
        resolved = [parser.resolve_operand(o, t) for o, t in zip(primals, primal_types)]
        op = cls(resolved, wrt, cotangents, body, grad_types)
        op.attributes |= attrs
        return op


def _float_prop(value: float) -> FloatAttr:
    return FloatAttr(value, f64)


class _OptimizerOp(IRDLOperation, CostInterface):
    """One parameter's update; every tensor operand has the parameter's layout.
    Subclasses declare their operands (parameter and gradient first: IRDL orders
    operands by declaration) and the `lr` and `weight_decay` properties."""

    traits = traits_def(Pure(), MeshAxesDeclared())
    FLOPS_PER_ELEMENT: ClassVar[int]
    FLOP_CATEGORY: ClassVar = "elementwise"

    def _check_like_param(self, role: str, value: SSAValue) -> None:
        p, t = tensor_type(self.param), tensor_type(value)
        if t.shape != p.shape or t.splits != p.splits or t.element_type != p.element_type or t.partial_axes:
            raise VerifyException(
                f"'{self.name}': the {role} {t.layout_str()} ({t.element_type}) must have the "
                f"parameter's layout {p.layout_str()} ({p.element_type}) and no partial sum"
            )

    def flops(self) -> Expr:
        return self.FLOPS_PER_ELEMENT * tensor_type(self.param).local_numel()

    def bytes_moved(self) -> Expr:
        return io_bytes(self)

    def hyper(self, name: str) -> float:
        return getattr(self, name).value.data


@irdl_op_definition
class AdamOp(_OptimizerOp):
    """torch.optim.Adam (L2 weight decay) or, with `decoupled`, AdamW:

        %w2, %m2, %v2, %t2 = stg.adam %w, %g, %m, %v, %t lr 1.0e-04 betas 0.9, 0.95
            eps 1.0e-08 weight_decay 0.1 decoupled : T, T, T, T, Tstep

    `%t` is the step count before this step, a scalar as torch keeps it per parameter.
    """

    name = "stg.adam"

    param = operand_def(TensorType)
    grad = operand_def(TensorType)
    exp_avg = operand_def(TensorType)
    exp_avg_sq = operand_def(TensorType)
    step = operand_def(TensorType)
    lr = prop_def(FloatAttr[Float64Type])
    weight_decay = prop_def(FloatAttr[Float64Type])
    beta1 = prop_def(FloatAttr[Float64Type])
    beta2 = prop_def(FloatAttr[Float64Type])
    eps = prop_def(FloatAttr[Float64Type])
    decoupled = opt_prop_def(UnitAttr)
    new_param = result_def(TensorType)
    new_exp_avg = result_def(TensorType)
    new_exp_avg_sq = result_def(TensorType)
    new_step = result_def(TensorType)

    assembly_format = (
        "$param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $step `lr` $lr `betas` $beta1 `,` $beta2"
        " `eps` $eps `weight_decay` $weight_decay (`decoupled` $decoupled^)? attr-dict"
        " `:` type($param) `,` type($grad) `,` type($exp_avg) `,` type($exp_avg_sq) `,` type($step)"
        " `->` type($new_param) `,` type($new_exp_avg) `,` type($new_exp_avg_sq) `,` type($new_step)"
    )

    # m: 3, v: 4, bias-corrected denominator: 3, update: 3, weight decay: 1 (torch's
    # _single_tensor_adam); the step count and bias corrections are per tensor.
    FLOPS_PER_ELEMENT: ClassVar[int] = 14

    def __init__(self, param, grad, exp_avg, exp_avg_sq, step, *, lr: float, betas=(0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, decoupled: bool = True):
        super().__init__(
            operands=[param, grad, exp_avg, exp_avg_sq, step],
            result_types=[param.type, exp_avg.type, exp_avg_sq.type, step.type],
            properties={
                "lr": _float_prop(lr),
                "beta1": _float_prop(betas[0]),
                "beta2": _float_prop(betas[1]),
                "eps": _float_prop(eps),
                "weight_decay": _float_prop(weight_decay),
                **({"decoupled": UnitAttr()} if decoupled else {}),
            },
        )

    def verify_(self) -> None:
        for role, v in ((GRAD, self.grad), (EXP_AVG, self.exp_avg), (EXP_AVG_SQ, self.exp_avg_sq)):
            self._check_like_param(role, v)
        if tensor_type(self.step).rank != 0:
            raise VerifyException(f"'stg.adam': the step count is a scalar, not {tensor_type(self.step).layout_str()}")
        for role, v in (("beta1", self.hyper("beta1")), ("beta2", self.hyper("beta2"))):
            if not 0.0 <= v < 1.0:
                raise VerifyException(f"'stg.adam': {role} = {v} must be in [0, 1)")
        if [r.type for r in self.results] != [o.type for o in (self.param, self.exp_avg, self.exp_avg_sq, self.step)]:
            raise VerifyException("'stg.adam': results have the types of the parameter, moments and step")


@irdl_op_definition
class SgdOp(_OptimizerOp):
    """torch.optim.SGD (no dampening, not Nesterov), with an optional momentum buffer:

        %w2, %b2 = stg.sgd %w, %g momentum %b by 0.9 : T lr 0.01 weight_decay 0.0 : T, T -> T, T
    """

    name = "stg.sgd"

    param = operand_def(TensorType)
    grad = operand_def(TensorType)
    momentum_buffer = opt_operand_def(TensorType)
    lr = prop_def(FloatAttr[Float64Type])
    weight_decay = prop_def(FloatAttr[Float64Type])
    momentum = opt_prop_def(FloatAttr[Float64Type])
    new_param = result_def(TensorType)
    new_momentum_buffer = opt_result_def(TensorType)

    assembly_format = (
        "$param `,` $grad (`momentum` $momentum_buffer^ `by` $momentum `:` type($momentum_buffer))? `lr` $lr"
        " `weight_decay` $weight_decay attr-dict `:` type($param) `,` type($grad)"
        " `->` type($new_param) (`,` type($new_momentum_buffer)^)?"
    )

    FLOPS_PER_ELEMENT: ClassVar[int] = 6  # weight decay 2, momentum 2, update 2

    def __init__(self, param, grad, *, lr: float, weight_decay: float = 0.0, momentum_buffer=None,
                 momentum: float | None = None):
        has_buffer = momentum_buffer is not None
        super().__init__(
            operands=[param, grad, [momentum_buffer] if has_buffer else []],
            result_types=[param.type, [momentum_buffer.type] if has_buffer else []],
            properties={
                "lr": _float_prop(lr),
                "weight_decay": _float_prop(weight_decay),
                **({"momentum": _float_prop(momentum)} if momentum is not None else {}),
            },
        )

    def verify_(self) -> None:
        self._check_like_param(GRAD, self.grad)
        if (self.momentum_buffer is None) != (self.momentum is None):
            raise VerifyException("'stg.sgd': a momentum buffer and a {momentum = ...} factor come together")
        if self.momentum_buffer is not None:
            self._check_like_param("momentum buffer", self.momentum_buffer)


__all__ = ["AdamOp", "SgdOp", "VjpOp"]
