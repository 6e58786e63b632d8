"""Shape ops of the stg dialect: reshape, transpose, concat, split, and fill.

They move no arithmetic; their cost is the bytes they copy (a reshape is a view).
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, Float64Type, FloatAttr, I64, IntegerAttr, f64, i64
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, var_operand_def, var_result_def
from xdsl.utils.exceptions import VerifyException

from stagec.dialects.stg.attributes import DistributedTensorType, TensorType
from stagec.dialects.stg.compute import DataMovementOp, check_dims, dims_property, tensor_type
from stagec.dialects.stg.distribution import check_result
from stagec.dialects.stg.vjp import Cotangents, Emitter, VjpInterface, is_differentiable, like, zeros
from stagec.dialects.symbolic import Expr, sum_exprs


def _groups(src: tuple[Expr, ...], dst: tuple[Expr, ...]) -> list[tuple[range, range]] | None:
    """Pair up runs of dims with equal products: [B, S, H] -> [B*S, N, D] gives
    ([0,1] -> [0]), ([2] -> [1,2]). Size-1 dims left over at the end join the last run
    (or form one of their own). None if the shapes do not line up."""
    groups: list[tuple[range, range]] = []
    i = j = 0
    while i < len(src) and j < len(dst):
        i0, j0 = i, j
        a, b = src[i], dst[j]
        i, j = i + 1, j + 1
        while a != b:
            # Grow the side whose product is not yet a multiple of the other's.
            if b.divides(a) and j < len(dst):
                b, j = b * dst[j], j + 1
            elif i < len(src):
                a, i = a * src[i], i + 1
            elif j < len(dst):
                b, j = b * dst[j], j + 1
            else:
                return None
        groups.append((range(i0, i), range(j0, j)))
    if any(d != 1 for d in (*src[i:], *dst[j:])):
        return None
    if i < len(src) or j < len(dst):
        a, b = groups.pop() if groups else (range(i, i), range(j, j))
        groups.append((range(a.start, len(src)), range(b.start, len(dst))))
    return groups


def _leading(run: range, shape: tuple[Expr, ...]) -> int | None:
    """The dim of a run that may carry its split: the first one not of size 1."""
    return next((k for k in run if shape[k] != 1), run[0] if run else None)


def reshape_splits(
    src: DistributedTensorType, dst_shape: tuple[Expr, ...], groups: list[tuple[range, range]] | None = None
) -> list[tuple[str, ...]]:
    """The splits a reshape of `src` to `dst_shape` gives its result: each run's split
    moves from its leading dim to the result run's leading dim (size-1 dims aside).
    ValueError says why there is none."""
    groups = groups if groups is not None else _groups(src.shape, dst_shape)
    if groups is None:
        raise ValueError("the dims do not line up as runs of equal products")
    splits: list[tuple[str, ...]] = [()] * len(dst_shape)
    for a, b in groups:
        lead = _leading(a, src.shape)
        if any(src.splits[k] for k in a if k != lead):
            raise ValueError("only the leading dim of a merged run may be split")
        if lead is not None and src.splits[lead]:
            target = _leading(b, dst_shape)
            if target is None:
                raise ValueError("a split dim cannot disappear")
            splits[target] = src.splits[lead]
    return splits


@irdl_op_definition
class ReshapeOp(DataMovementOp, VjpInterface):
    """Reinterprets the global shape (same elements, same order).

    Dims regroup into runs with equal products (B, S, H -> B, S, heads, head_dim); in
    each run only the leading dim (size-1 dims aside) may be split, by the same axes on both sides, so
    every rank's shard stays one contiguous block.
    """

    name = "stg.reshape"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input, result_type: TensorType):
        super().__init__(operands=[input], result_types=[result_type])

    def verify_(self) -> None:
        what = "reshape"
        src, dst = tensor_type(self.input), tensor_type(self.result)
        if src.global_numel() != dst.global_numel():
            raise VerifyException(
                f"{what}: {src.layout_str()} has {src.global_numel()} elements but "
                f"{dst.layout_str()} has {dst.global_numel()}"
            )
        groups = _groups(src.shape, dst.shape)
        if groups is None:
            raise VerifyException(
                f"{what}: cannot match the dims of {src.layout_str()} with {dst.layout_str()} "
                "as runs of equal products"
            )
        try:
            splits = reshape_splits(src, dst.shape, groups)
        except ValueError as e:
            raise VerifyException(f"{what}: {e} ({src.layout_str()} -> {dst.layout_str()})") from None
        check_result(what, dst, dst.shape, splits, src.partial_axes)

    def bytes_moved(self) -> Expr:
        return Expr.const(0)

    def vjp(self, em: Emitter, cotangents: Cotangents) -> Cotangents:
        (ct,) = cotangents
        return [em.emit(ReshapeOp(ct, like(self.input.type))).results[0]]



@irdl_op_definition
class TransposeOp(DataMovementOp, VjpInterface):
    """Permutes dims: result dim i is input dim perm[i]."""

    name = "stg.transpose"

    perm = prop_def(ArrayAttr[IntegerAttr])
    input = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = "$input `perm` $perm attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input, perm: list[int], result_type: TensorType):
        super().__init__(operands=[input], result_types=[result_type], properties={"perm": dims_property(perm)})

    def verify_(self) -> None:
        src = tensor_type(self.input)
        perm = [p.value.data for p in self.perm.data]
        if sorted(perm) != list(range(src.rank)):
            raise VerifyException(f"transpose: perm {perm} is not a permutation of {src.rank} dims")
        check_result(
            "transpose", tensor_type(self.result), [src.shape[p] for p in perm], [src.splits[p] for p in perm], src.partial_axes
        )

    def vjp(self, em: Emitter, cotangents: Cotangents) -> Cotangents:
        (ct,) = cotangents
        perm = [p.value.data for p in self.perm.data]
        inverse = [perm.index(i) for i in range(len(perm))]
        return [em.emit(TransposeOp(ct, inverse, like(self.input.type))).results[0]]



def _check_pieces(what: str, whole: TensorType, pieces: list[TensorType], dim: int) -> None:
    check_dims(what, [dim], whole.rank)
    if whole.splits[dim]:
        raise VerifyException(
            f"{what}: dim {dim} of {whole.layout_str()} must not be split; all_gather it first"
        )
    for p in pieces:
        if p.rank != whole.rank or p.element_type != whole.element_type:
            raise VerifyException(f"{what}: every piece must have the rank and element type of {whole.layout_str()}")
        others = [i for i in range(whole.rank) if i != dim]
        if [p.shape[i] for i in others] != [whole.shape[i] for i in others] or p.splits != whole.splits or (
            p.partial_axes != whole.partial_axes
        ):
            raise VerifyException(
                f"{what}: piece {p.layout_str()} must match {whole.layout_str()} in every dim but {dim}"
            )
    total = sum_exprs(p.shape[dim] for p in pieces)
    if total != whole.shape[dim]:
        raise VerifyException(f"{what}: the pieces' dim {dim} adds up to {total}, not {whole.shape[dim]}")


@irdl_op_definition
class ConcatOp(DataMovementOp, VjpInterface):
    """Concatenates along a dim that no axis splits."""

    name = "stg.concat"

    dim = prop_def(IntegerAttr[I64])
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = "$inputs `dim` $dim attr-dict `:` type($inputs) `->` type($result)"

    def __init__(self, inputs, dim: int, result_type: TensorType):
        super().__init__(operands=[inputs], result_types=[result_type], properties={"dim": IntegerAttr(dim, i64)})

    def verify_(self) -> None:
        if not self.inputs:
            raise VerifyException("concat: needs at least one operand")
        _check_pieces("concat", tensor_type(self.result), [tensor_type(v) for v in self.inputs], self.dim.value.data)

    def vjp(self, em: Emitter, cotangents: Cotangents) -> Cotangents:
        (ct,) = cotangents
        pieces = em.emit(SplitOp(ct, self.dim.value.data, [like(v.type) for v in self.inputs])).results
        return [p if is_differentiable(v) else None for p, v in zip(pieces, self.inputs)]



@irdl_op_definition
class SplitOp(DataMovementOp, VjpInterface):
    """Splits a dim that no axis splits into consecutive pieces (the results' sizes)."""

    name = "stg.split"

    dim = prop_def(IntegerAttr[I64])
    input = operand_def(TensorType)
    outputs = var_result_def(TensorType)

    assembly_format = "$input `dim` $dim attr-dict `:` type($input) `->` type($outputs)"

    def __init__(self, input, dim: int, result_types: list[TensorType]):
        super().__init__(operands=[input], result_types=[result_types], properties={"dim": IntegerAttr(dim, i64)})

    def verify_(self) -> None:
        if not self.outputs:
            raise VerifyException("split: needs at least one result")
        _check_pieces("split", tensor_type(self.input), [tensor_type(v) for v in self.outputs], self.dim.value.data)

    def vjp(self, em: Emitter, cotangents: Cotangents) -> Cotangents:
        pieces = [ct if ct is not None else zeros(em, r.type) for ct, r in zip(cotangents, self.outputs)]
        return [em.emit(ConcatOp(pieces, self.dim.value.data, like(self.input.type))).results[0]]




@irdl_op_definition
class FillOp(DataMovementOp):
    """A tensor of one value: `%z = stg.fill 0.0 : T` (zeroed gradient buffers). Zeros
    may be typed as a partial sum: each rank's share is 0 (a lazily reduced gradient
    buffer starts so)."""

    name = "stg.fill"

    # a constant: it has no operands a gradient could flow to
    NO_GRADIENT: ClassVar = "a constant has no operands"

    value = prop_def(FloatAttr[Float64Type])
    result = result_def(TensorType)

    assembly_format = "$value attr-dict `:` type($result)"

    def __init__(self, value: float, result_type: TensorType):
        super().__init__(result_types=[result_type], properties={"value": FloatAttr(value, f64)})

    def verify_(self) -> None:
        # zeros are a partial sum (every rank's share 0); no other value is
        if tensor_type(self.result).partial_axes and self.value.value.data != 0.0:
            raise VerifyException("fill: only zeros can be a partial sum (every rank holds 0)")

    def bytes_moved(self) -> Expr:
        return tensor_type(self.result).local_bytes()
