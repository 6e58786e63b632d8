"""Model-specific compute ops: the SSM scan, MoE dispatch/combine, and opaque ops."""

from __future__ import annotations

from xdsl.dialects.builtin import I64, IntegerAttr, StringAttr, i64
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    var_operand_def,
    var_result_def,
)
from xdsl.utils.exceptions import VerifyException

from stagec.dialects.stg.attributes import ExprAttr, TensorType
from stagec.dialects.stg.compute import ComputeOp, _check_dims, _ty
from stagec.dialects.stg.distribution import check_result, require_no_partial, require_unsplit
from stagec.dialects.symbolic import Expr


@irdl_op_definition
class SsmScanOp(ComputeOp):
    """The selective-scan recurrence of a state-space model (stage.md Table X, pscan):
    h[t] = decay[t] * h[t-1] + input[t] along `dim`, e.g. over [B, S, D, P] with dim 1.
    The scanned dim is whole on every rank."""

    name = "stg.ssm_scan"

    decay = operand_def(TensorType)
    input = operand_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)

    assembly_format = "$decay `,` $input `dim` $dim attr-dict `:` type($decay) `,` type($input) `->` type($result)"

    def __init__(self, decay, input, dim: int):
        super().__init__(operands=[decay, input], result_types=[input.type], properties={"dim": IntegerAttr(dim, i64)})

    def verify_(self) -> None:
        what = "ssm_scan"
        decay, x = _ty(self.decay), _ty(self.input)
        d = self.dim.value.data
        _check_dims(what, [d], x.rank)
        if decay.shape != x.shape or decay.splits != x.splits:
            raise VerifyException(
                f"{what}: decay {decay.layout_str()} and input {x.layout_str()} must have one layout"
            )
        for role, t in (("decay", decay), ("input", x)):
            require_no_partial(what, t, role)
        require_unsplit(what, x, d, "the recurrence runs along it")
        check_result(what, _ty(self.result), x.shape, x.splits, ())

    def flops(self) -> Expr:
        return 2 * _ty(self.input).local_numel()


def _token_dims(what: str, tokens: TensorType, scores: TensorType, experts: TensorType) -> None:
    """Tokens [T, H], router scores [T, E], per-expert buffers [E, C, H]."""
    if tokens.rank != 2 or scores.rank != 2 or experts.rank != 3:
        raise VerifyException(
            f"{what}: expects tokens [T, H], scores [T, E] and expert buffers [E, C, H]; got "
            f"{tokens.layout_str()}, {scores.layout_str()}, {experts.layout_str()}"
        )
    if tokens.shape[0] != scores.shape[0] or scores.shape[1] != experts.shape[0] or tokens.shape[1] != experts.shape[2]:
        raise VerifyException(
            f"{what}: sizes disagree: tokens {tokens.layout_str()}, scores {scores.layout_str()}, "
            f"expert buffers {experts.layout_str()}"
        )
    if tokens.splits[0] != scores.splits[0] or scores.splits[1]:
        raise VerifyException(
            f"{what}: scores must split tokens like the tokens do and keep every expert's column"
        )
    if experts.splits[0]:
        raise VerifyException(
            f"{what}: routing works on every expert's buffer locally; move experts across "
            "ranks with all_to_all"
        )
    if experts.splits[1] != tokens.splits[0] or experts.splits[2] != tokens.splits[1]:
        raise VerifyException(
            f"{what}: the capacity dim must be split like the tokens ({tokens.layout_str()}) "
            f"and hidden alike; got {experts.layout_str()}"
        )
    require_no_partial(what, scores, "scores")


class _MoeOp(ComputeOp):
    top_k = prop_def(IntegerAttr[I64])

    def _check_top_k(self, experts: Expr) -> None:
        k, e = self.top_k.value.data, experts.as_int()
        if k < 1 or (e is not None and k > e):
            raise VerifyException(
                f"'{self.name}': top_k = {k} must be in [1, {experts}] (the number of experts)"
            )


@irdl_op_definition
class MoeDispatchOp(_MoeOp):
    """Routes each token to its top-k experts' capacity buffers:
    tokens [T, H], scores [T, E] -> [E, C, H] (C = the capacity per expert)."""

    name = "stg.moe_dispatch"

    tokens = operand_def(TensorType)
    scores = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = (
        "$tokens `,` $scores `top_k` $top_k attr-dict `:` type($tokens) `,` type($scores) `->` type($result)"
    )

    def __init__(self, tokens, scores, top_k: int, result_type: TensorType):
        super().__init__(operands=[tokens, scores], result_types=[result_type], properties={"top_k": IntegerAttr(top_k, i64)})

    def verify_(self) -> None:
        out = _ty(self.result)
        _token_dims("moe_dispatch", _ty(self.tokens), _ty(self.scores), out)
        require_no_partial("moe_dispatch", _ty(self.tokens), "tokens")
        self._check_top_k(out.shape[0])
        require_no_partial("moe_dispatch", out, "result")

    def flops(self) -> Expr:
        return Expr.const(0)


@irdl_op_definition
class MoeCombineOp(_MoeOp):
    """Sums each token's top-k expert outputs weighted by its router scores:
    buffers [E, C, H], scores [T, E] -> [T, H]."""

    name = "stg.moe_combine"

    experts = operand_def(TensorType)
    scores = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = (
        "$experts `,` $scores `top_k` $top_k attr-dict `:` type($experts) `,` type($scores) `->` type($result)"
    )

    def __init__(self, experts, scores, top_k: int, result_type: TensorType):
        super().__init__(operands=[experts, scores], result_types=[result_type], properties={"top_k": IntegerAttr(top_k, i64)})

    def verify_(self) -> None:
        out, experts = _ty(self.result), _ty(self.experts)
        _token_dims("moe_combine", out, _ty(self.scores), experts)
        self._check_top_k(experts.shape[0])
        if out.partial_axes != experts.partial_axes:
            raise VerifyException("moe_combine: the result is a partial sum exactly where the expert outputs are")

    def flops(self) -> Expr:
        # a multiply-add per hidden element for each of a token's k experts
        return 2 * self.top_k.value.data * _ty(self.result).local_numel()


@irdl_op_definition
class OpaqueOp(ComputeOp):
    """A computation stg does not model, with user-given per-rank FLOPs and bytes:
    `stg.opaque "fused_kernel" (%a) flops <2*B*H> bytes <4*B*H> : (T) -> (T)`."""

    name = "stg.opaque"

    callee = prop_def(StringAttr)
    flop_count = prop_def(ExprAttr)
    byte_count = prop_def(ExprAttr)
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)

    assembly_format = (
        "$callee `(` $inputs `)` `flops` $flop_count `bytes` $byte_count attr-dict"
        " `:` `(` type($inputs) `)` `->` `(` type($outputs) `)`"
    )

    def __init__(self, callee: str, inputs, result_types, flops, bytes_):
        super().__init__(
            operands=[inputs],
            result_types=[result_types],
            properties={
                "callee": StringAttr(callee),
                "flop_count": ExprAttr.of(flops),
                "byte_count": ExprAttr.of(bytes_),
            },
        )

    def verify_(self) -> None:
        for role, attr in (("flops", self.flop_count), ("bytes", self.byte_count)):
            v = attr.data.as_int()
            if v is not None and v < 0:
                raise VerifyException(f"opaque '{self.callee.data}': {role} must not be negative, not {v}")

    def flops(self) -> Expr:
        return self.flop_count.data

    def bytes_moved(self) -> Expr:
        return self.byte_count.data
