"""Rank-local arithmetic: einsum, elementwise, reduce, softmax and norm.

Each runs on one rank's locals. Where an operand holds the whole of a dim that another
operand (or the result) splits, it is first cut to this rank's block - stage.md Fig. 6's
free local slice, which distribution.unify_letters allows. Everything is differentiable
torch code without in-place updates, so stg.vjp can differentiate it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F

from stagec.dialects.stg.compute import (
    EinsumOp,
    ElementwiseKind,
    ElementwiseOp,
    NormKind,
    NormOp,
    ReduceKind,
    ReduceOp,
    SoftmaxOp,
    parse_equation,
)
from stagec.runtime.interpreter.errors import InterpreterError
from stagec.runtime.interpreter.registry import Rank, per_op, per_rank
from stagec.runtime.interpreter.tensor_types import compute_dtype, torch_dtype

E = ElementwiseKind

# (operand, dim, axes): cut operand's whole dim to this rank's block over axes.
LocalSlices = list[tuple[int, int, tuple[str, ...]]]


def apply_slices(rank: Rank, inputs: Sequence[torch.Tensor], slices: LocalSlices) -> list[torch.Tensor]:
    out = list(inputs)
    for i, dim, axes in slices:
        out[i] = rank.part(out[i], dim, axes)
    return out


# -- einsum ------------------------------------------------------------------------------


@per_op
def einsum_slices(op: EinsumOp) -> LocalSlices:
    types = [v.type for v in op.inputs]
    subs, _ = parse_equation(op.equation.data, [t.rank for t in types])
    split_of = {letter: split for sub, t in zip(subs, types) for letter, split in zip(sub, t.splits) if split}
    return [
        (i, dim, split_of[letter])
        for i, (sub, t) in enumerate(zip(subs, types))
        for dim, (letter, split) in enumerate(zip(sub, t.splits))
        if not split and letter in split_of
    ]


@per_rank(EinsumOp)
def einsum(op: EinsumOp, rank: Rank, *inputs: torch.Tensor) -> torch.Tensor:
    dtype = torch_dtype(op.result.type.element_type)
    inputs = apply_slices(rank, inputs, einsum_slices(op))
    # an einsum may accumulate into a wider result (bf16 operands, f32 result)
    if dtype.is_floating_point:
        inputs = [x.to(dtype) for x in inputs]
    return torch.einsum(op.equation.data, *inputs).to(dtype)


# -- elementwise -------------------------------------------------------------------------


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """cat(-x2, x1) of the last dim's halves (Hugging Face's convention)."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rotary(x: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    return x * torch.cos(theta) + rotate_half(x) * torch.sin(theta)


_GELU_C = math.sqrt(2.0 / math.pi)


def gelu(x: torch.Tensor) -> torch.Tensor:
    """The tanh approximation (Hugging Face's gelu_new / gelu_pytorch_tanh)."""
    return F.gelu(x, approximate="tanh")


def gelu_derivative(x: torch.Tensor) -> torch.Tensor:
    u = _GELU_C * (x + 0.044715 * x**3)
    t = torch.tanh(u)
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * _GELU_C * (1 + 3 * 0.044715 * x * x)


def silu_derivative(x: torch.Tensor) -> torch.Tensor:
    s = torch.sigmoid(x)
    return s * (1 + x * (1 - s))


def sigmoid_derivative(x: torch.Tensor) -> torch.Tensor:
    s = torch.sigmoid(x)
    return s * (1 - s)


def tanh_derivative(x: torch.Tensor) -> torch.Tensor:
    t = torch.tanh(x)
    return 1 - t * t


UNARY: dict[ElementwiseKind, Callable[[torch.Tensor], torch.Tensor]] = {
    E.NEG: torch.neg,
    E.CAST: lambda x: x,
    E.COPY: torch.clone,
    # The interpreter runs dropout as the identity (evaluation mode), so that a
    # transformed program compares exactly with the original.
    E.DROPOUT: lambda x: x,
    E.EXP: torch.exp,
    E.LOG: torch.log,
    E.SQRT: torch.sqrt,
    E.RSQRT: torch.rsqrt,
    E.SQUARE: torch.square,
    E.RECIPROCAL: torch.reciprocal,
    E.TANH: torch.tanh,
    E.SIGMOID: torch.sigmoid,
    E.RELU: torch.relu,
    E.GELU: gelu,
    E.SILU: F.silu,
    E.SOFTPLUS: F.softplus,
}
BINARY: dict[ElementwiseKind, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    E.ADD: torch.add,
    E.SUB: torch.sub,
    E.MUL: torch.mul,
    E.DIV: torch.div,
    E.MAX: torch.maximum,
    E.MIN: torch.minimum,
    E.ROTARY: rotary,
    E.SWIGLU: lambda gate, up: F.silu(gate) * up,
}
# k_grad(dy, x) = dy * k'(x), x being the forward input.
DERIVATIVE: dict[ElementwiseKind, Callable[[torch.Tensor], torch.Tensor]] = {
    E.RELU_GRAD: lambda x: (x > 0).to(x.dtype),
    E.GELU_GRAD: gelu_derivative,
    E.SILU_GRAD: silu_derivative,
    E.SIGMOID_GRAD: sigmoid_derivative,
    E.TANH_GRAD: tanh_derivative,
    E.SOFTPLUS_GRAD: torch.sigmoid,
}


@per_op
def elementwise_slices(op: ElementwiseOp) -> LocalSlices:
    """Operands broadcast against the result's trailing dims; a whole operand dim the
    result splits is cut to this rank's block."""
    out = op.result.type
    slices: LocalSlices = []
    for i, value in enumerate(op.inputs):
        ty = value.type
        offset = out.rank - ty.rank
        for dim, (size, split) in enumerate(zip(ty.shape, ty.splits)):
            target_split = out.splits[dim + offset]
            if not split and target_split and size == out.shape[dim + offset]:
                slices.append((i, dim, target_split))
    return slices


@per_rank(ElementwiseOp)
def elementwise(op: ElementwiseOp, rank: Rank, *inputs: torch.Tensor) -> torch.Tensor:
    kind = op.kind.data
    dtype = torch_dtype(op.result.type.element_type)
    inputs = apply_slices(rank, inputs, elementwise_slices(op))
    if kind == E.SCALE:
        result = inputs[0] * op.scalar_value
    elif kind in UNARY:
        result = UNARY[kind](inputs[0])
    elif kind in BINARY:
        if kind == E.ROTARY and op.inputs[0].type.splits[-1]:
            raise InterpreterError("rotary needs the whole last dim of its input (it rotates its halves)")
        result = BINARY[kind](*inputs)
    else:
        dy, x = inputs
        result = dy * DERIVATIVE[kind](x)
    # operands broadcast to the result's shape, which may be larger than all of them
    # (`copy %ones : [1, 1] -> [B, H]`)
    return result.to(dtype).expand(rank.sizes.local_shape(op.result.type))


# -- reductions and normalisations -----------------------------------------------------


@per_rank(ReduceOp)
def reduce(op: ReduceOp, rank: Rank, x: torch.Tensor) -> torch.Tensor:
    dims, kind = op.dim_list, op.kind.data
    dtype = torch_dtype(op.result.type.element_type)
    if not dims:
        return x.clone().to(dtype)
    if kind == ReduceKind.SUM:
        result = x.sum(dims)
    elif kind == ReduceKind.MEAN:
        # over a split dim each rank holds a partial sum of the global mean
        shape = rank.sizes.global_shape(op.input.type)
        result = x.sum(dims) / math.prod(shape[d] for d in dims)
    elif kind == ReduceKind.MAX:
        result = x.amax(dims)
    else:
        result = x.amin(dims)
    return result.to(dtype)


@per_rank(SoftmaxOp)
def softmax(op: SoftmaxOp, rank: Rank, x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.to(compute_dtype(x.dtype)), dim=op.dim.value.data).to(x.dtype)


DEFAULT_NORM_EPS = 1e-5


@per_rank(NormOp)
def norm(op: NormOp, rank: Rank, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """RMSNorm (x / sqrt(mean(x^2) + eps) * w) or LayerNorm over the last dim, in fp32
    for half-precision inputs, like Hugging Face's Llama RMSNorm."""
    eps = op.eps.value.data if op.eps is not None else DEFAULT_NORM_EPS
    acc = compute_dtype(x.dtype)
    xf, w = x.to(acc), weight.to(acc)
    if op.kind.data == NormKind.RMS:
        result = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w
    else:
        b = bias.to(acc) if bias is not None else None
        result = F.layer_norm(xf, (xf.shape[-1],), w, b, eps)
    return result.to(torch_dtype(op.result.type.element_type))
