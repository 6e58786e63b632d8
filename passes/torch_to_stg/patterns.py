"""The aten op patterns of convert-torch-to-stg: one function per torch op name, each
returning the stg form of the op's result (a `View`), or raising `Skip` with the reason
it cannot. Multi-op patterns (rotary embedding, decomposed RMSNorm) are tried first at
the op that ends them; plain per-op conversion is the fallback.

Supported (docs/torch-frontend.md lists them with their stg forms): linear, matmul,
mm, bmm, add/sub/mul/div (tensor and scalar), neg, exp, log, sqrt, rsqrt, reciprocal,
pow 2/0.5/-1, tanh, sigmoid, silu, gelu, relu, softmax, scaled_dot_product_attention
(causal, GQA), layer_norm, rms_norm and the decomposed RMSNorm, embedding (token and
position tables), cross_entropy_loss, view/reshape/unsqueeze/squeeze/flatten,
transpose/permute/t, expand, cat, slice, split, chunk, mean/sum/amax, dtype casts,
and the identities (clone, contiguous, detach, alias, dropout in eval).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import FloatAttr, f32, f64
from xdsl.ir import Operation, SSAValue

from stagec.dialects import stg
from stagec.dialects.stg import ElementwiseKind as EW
from stagec.dialects.stg import NormKind, ReduceKind, TensorType
from stagec.dialects.symbolic import Expr
from stagec.passes.torch_to_stg.context import View, identity
from stagec.passes.torch_to_stg.convert import Converter, Skip, product_of

Pattern = Callable[[Converter, Operation], object]
PATTERNS: dict[str, Pattern] = {}

HEADS = ("N", "KV")


def pattern(*names: str):
    def register(fn: Pattern) -> Pattern:
        for name in names:
            PATTERNS[f"torch.{name}"] = fn
        return fn

    return register


def _letter(dim: Expr, taken: str) -> str:
    from stagec.frontends.templates.blocks import _letter as template_letter

    return template_letter(dim, taken)


def _lead(rank: int) -> str:
    return {1: "", 2: "t", 3: "bs"}.get(rank) or "abcdgjkl"[:rank]


def _out_type(cv: Converter, op: Operation, dims: Sequence[Expr]) -> TensorType:
    return TensorType(list(dims), cv.element(op.results[0]))


def _dim(d: int, rank: int) -> int:
    return d + rank if d < 0 else d


# -- linear algebra ---------------------------------------------------------------------------


def _linear_out(cv: Converter, op: Operation, out: int) -> Expr:
    """The symbolic size of a linear layer's output features, read off its users: a
    view to [..., heads, D] makes it N*D (or KV*D), a router (softmax/topk) makes it E,
    a split into k equal pieces k times the pieces' width (GPT-2's fused c_attn: 3*N*D)."""
    return _width(cv, op.results[0], out, 0)


_SAME_LAST = ("torch.aten.view", "torch.aten.reshape", "torch.aten._unsafe_view", "torch.aten.to.dtype",
              "torch.aten._to_copy", "torch.aten.dropout", "torch.aten.contiguous", "torch.aten.clone")


def _width(cv: Converter, value: SSAValue, out: int, depth: int) -> Expr:
    users = cv.users(value)
    if depth < 6:
        for user in users:
            if user.name in ("torch.aten.split.Tensor", "torch.aten.split_with_sizes"):
                sizes = cv.ints_of(user.operands[1]) if user.name.endswith("sizes") else None
                step = cv.int_of(user.operands[1]) if sizes is None else None
                pieces = sizes or ([step] * (out // step) if step else [])
                if pieces and len(set(pieces)) == 1 and sum(pieces) == out:
                    unpack = [u for u in cv.users(user.results[0]) if u.name == "torch.prim.ListUnpack"]
                    if unpack:
                        piece = _width(cv, unpack[0].results[0], pieces[0], depth + 1)
                        return Expr.const(len(pieces)) * piece
            if user.name in ("torch.aten.view", "torch.aten.reshape", "torch.aten._unsafe_view"):
                shape = cv.torch_shape(user.results[0])
                if shape and shape[-1] == out:
                    return _width(cv, user.results[0], out, depth + 1)
            elif user.name in _SAME_LAST:
                return _width(cv, user.results[0], out, depth + 1)
    while len(users) == 1 and users[0].name in ("torch.aten.to.dtype", "torch.aten._to_copy"):
        users = cv.users(users[0].results[0])
    for user in users:
        if user.name in ("torch.aten.view", "torch.aten.reshape", "torch.aten._unsafe_view"):
            shape = cv.torch_shape(user.results[0])
            if len(shape) >= 2 and shape[-1] and shape[-2] and shape[-1] * shape[-2] == out:
                return cv.symbols.resolve(shape[-2], HEADS) * cv.symbols.resolve(shape[-1], ("D",))
        if user.name in ("torch.aten._softmax", "torch.aten.softmax.int", "torch.aten.topk"):
            return cv.symbols.resolve(out, ("E",))
    return cv.symbols.resolve(out)


@pattern("aten.linear")
def linear(cv: Converter, op: Operation):
    x = cv.view(op.operands[0])
    in_dim = x.dims()[-1]
    w_shape = cv.torch_shape(op.operands[1])
    if len(w_shape) != 2:
        raise Skip("a linear weight must be [out, in]")
    out_dim = _linear_out(cv, op, w_shape[0])
    w = cv.param(op.operands[1], [out_dim, in_dim]) if op.operands[1] in cv.arg_names else cv.materialize(cv.view(op.operands[1]))
    lead = _lead(x.rank)
    i = _letter(in_dim, lead)
    o = _letter(out_dim, lead + i)
    letters = lead + i
    sub = [""] * x.rank
    for k, p in enumerate(x.perm):
        sub[p] = letters[k]
    dims = [*x.dims()[:-1], w.type.shape[0]]
    y = cv.emit(stg.EinsumOp(f"{''.join(sub)},{o}{i}->{lead}{o}", [x.value, cv.cast(w, x.value.type.element_type)],
                             _out_type(cv, op, dims))).result
    if not cv.is_none(op.operands[2]):
        b = cv.param(op.operands[2], [w.type.shape[0]]) if op.operands[2] in cv.arg_names else cv.materialize(cv.view(op.operands[2]))
        y = cv.emit(stg.ElementwiseOp(EW.ADD, [y, b], y.type)).result
    return identity(y)


@pattern("aten.addmm")
def addmm(cv: Converter, op: Operation):
    """bias + x @ W with W [in, out] (HF's Conv1D: GPT-2's weights are stored transposed).
    An output split into k equal pieces (GPT-2's c_attn: q, k, v) keeps the pieces apart:
    the weight is declared [in, k, out/k] and the bias [k, out/k] (views of the stored
    tensors), so that tensor parallelism splits each piece's heads, not the fused dim."""
    bias, x_val, w_val = op.operands[:3]
    if any(cv.float_of(v) not in (1.0, None) for v in op.operands[3:5]):
        raise Skip("addmm with beta or alpha other than 1")
    x = cv.view(x_val)
    in_dim = x.dims()[-1]
    w_shape = cv.torch_shape(w_val)
    out_dim = _linear_out(cv, op, w_shape[1])
    xv = cv.materialize(x)
    k = _fused_pieces(out_dim)
    if k and w_val in cv.arg_names and bias in cv.arg_names:
        piece = out_dim / k
        w = cv.param(w_val, [in_dim, Expr.const(k), piece])
        b = cv.param(bias, [Expr.const(k), piece])
        i = _letter(in_dim, "tk")
        n = _letter(piece, "tk" + i)
        dims = [xv.type.shape[0], Expr.const(k), piece]
        y = cv.emit(stg.EinsumOp(f"t{i},{i}k{n}->tk{n}", [xv, cv.cast(w, xv.type.element_type)],
                                 _out_type(cv, op, dims))).result
        y = cv.emit(stg.ElementwiseOp(EW.ADD, [y, cv.cast(b, y.type.element_type)], y.type)).result
        merged = TensorType([xv.type.shape[0], out_dim], y.type.element_type)
        flat = cv.emit(stg.ReshapeOp(y, merged)).result
        cv.fused[flat] = y  # split.Tensor takes the pieces from y, and this reshape dies
        return identity(flat)
    w = cv.param(w_val, [in_dim, out_dim]) if w_val in cv.arg_names else cv.materialize(cv.view(w_val))
    i = _letter(in_dim, "t")
    o = _letter(out_dim, "t" + i)
    y = cv.emit(stg.EinsumOp(f"t{i},{i}{o}->t{o}", [xv, cv.cast(w, xv.type.element_type)],
                             _out_type(cv, op, [xv.type.shape[0], w.type.shape[1]]))).result
    b = cv.param(bias, [w.type.shape[1]]) if bias in cv.arg_names else cv.materialize(cv.view(bias))
    return identity(cv.emit(stg.ElementwiseOp(EW.ADD, [y, cv.cast(b, y.type.element_type)], y.type)).result)


def _fused_pieces(width: Expr) -> int | None:
    """k for a width k*X (a monomial with a constant factor k > 1): what `_linear_out`
    reads off an output split into k equal pieces (GPT-2's c_attn, 3*D*N)."""
    if width.is_constant or not width.is_monomial or not width.is_integral:
        return None
    k = width.subs({name: 1 for name in width.symbols}).as_int()
    return k if k is not None and k > 1 else None


@pattern("aten.matmul", "aten.mm", "aten.bmm")
def matmul(cv: Converter, op: Operation):
    a, b = cv.view(op.operands[0]), cv.view(op.operands[1])
    if a.rank < 2 or b.rank < 2:
        raise Skip("matmul of vectors")
    ad, bd = a.dims(), b.dims()
    batch = max(a.rank, b.rank) - 2
    letters = "abcdefgh"[:batch]
    m, k, n = "m", "k", "n"
    sa = letters[batch - (a.rank - 2):] + m + k
    sb = letters[batch - (b.rank - 2):] + k + n
    if ad[-1] != bd[-2]:
        raise Skip(f"contracted sizes {ad[-1]} and {bd[-2]} differ")
    batch_dims = (ad if a.rank >= b.rank else bd)[:batch]
    dims = [*batch_dims, ad[-2], bd[-1]]

    def subscript(v: View, torch_sub: str) -> str:
        sub = [""] * v.rank
        for pos, p in enumerate(v.perm):
            sub[p] = torch_sub[pos]
        return "".join(sub)

    eq = f"{subscript(a, sa)},{subscript(b, sb)}->{letters}{m}{n}"
    el = a.value.type.element_type
    y = cv.emit(stg.EinsumOp(eq, [a.value, cv.cast(b.value, el)], _out_type(cv, op, dims))).result
    return identity(y)


# -- elementwise ----------------------------------------------------------------------------------


def _broadcast(cv: Converter, views: Sequence[View]) -> tuple[list[SSAValue], list[Expr], tuple[int, ...]]:
    """The operands of an elementwise op in one dim order, and the result's sizes and
    permutation: views permuted alike (or of lower rank and unpermuted, broadcasting)
    keep their permutation, anything else is brought to torch order."""
    rank = max(v.rank for v in views)
    full = [v for v in views if v.rank == rank]
    perm = full[0].perm
    if not all(v.perm == perm for v in full) or any(v.rank < rank and not v.identity for v in views) or (
        any(v.rank < rank for v in views) and perm != tuple(range(rank))
    ):
        values = [cv.materialize(v) for v in views]
        perm = tuple(range(rank))
    else:
        values = [v.value for v in views]
    dims: list[Expr] = []
    for pos in range(rank):
        size = Expr.const(1)
        for val in values:
            shape = val.type.shape
            k = pos - (rank - len(shape))
            if k >= 0 and shape[k] != 1:
                size = shape[k]
        dims.append(size)
    return values, dims, perm


def _elementwise(cv: Converter, op: Operation, kind: EW, tensors: Sequence[SSAValue], scalar: float | None = None) -> View:
    views = [cv.view(t) for t in tensors]
    values, dims, perm = _broadcast(cv, views)
    element = cv.element(op.results[0])
    if kind != EW.ROTARY:
        values = [cv.cast(v, element) for v in values]
    out = TensorType(dims, element)
    return View(cv.emit(stg.ElementwiseOp(kind, values, out, scalar)).result, perm)


def _scalar_tensor(cv: Converter, value: float, like: View) -> View:
    el = like.value.type.element_type
    return identity(cv.emit(stg.FillOp(value, TensorType([], el))).result)


def _binary(kind: EW):
    def convert(cv: Converter, op: Operation):
        a, b = op.operands[0], op.operands[1]
        if kind in (EW.ADD, EW.SUB) and len(op.operands) > 2 and cv.float_of(op.operands[2]) not in (1.0, None):
            raise Skip("add/sub with alpha != 1")
        scalar = cv.float_of(b)
        if scalar is not None:
            x = cv.view(a)
            if kind == EW.MUL:
                return _scale(cv, op, x, scalar)
            if kind == EW.DIV:
                return _scale(cv, op, x, 1.0 / scalar)
            if kind in (EW.ADD, EW.SUB) and scalar == 0.0:
                return x
            c = _scalar_tensor(cv, scalar, x)
            return _elementwise_views(cv, op, kind, [x, c])
        return _elementwise(cv, op, kind, [a, b])

    return convert


def _elementwise_views(cv: Converter, op: Operation, kind: EW, views: Sequence[View], scalar: float | None = None) -> View:
    values, dims, perm = _broadcast(cv, views)
    element = cv.element(op.results[0])
    values = [cv.cast(v, element) for v in values]
    return View(cv.emit(stg.ElementwiseOp(kind, values, TensorType(dims, element), scalar)).result, perm)


def _scale(cv: Converter, op: Operation, x: View, factor: float) -> View:
    if factor == 1.0:
        return x
    return _elementwise_views(cv, op, EW.SCALE, [x], factor)


def _rotary_or_add(cv: Converter, op: Operation):
    try:
        return rotary(cv, op)
    except Skip:
        return _binary(EW.ADD)(cv, op)


PATTERNS["torch.aten.add.Tensor"] = _rotary_or_add
PATTERNS["torch.aten.add.Scalar"] = _binary(EW.ADD)
PATTERNS["torch.aten.sub.Tensor"] = PATTERNS["torch.aten.sub.Scalar"] = _binary(EW.SUB)
PATTERNS["torch.aten.div.Tensor"] = PATTERNS["torch.aten.div.Scalar"] = _binary(EW.DIV)
PATTERNS["torch.aten.div_.Tensor"] = _binary(EW.DIV)
PATTERNS["torch.aten.mul.Scalar"] = _binary(EW.MUL)


@pattern("aten.mul.Tensor")
def mul(cv: Converter, op: Operation):
    for decomposed in (rms_norm_decomposed, gelu_decomposed):
        try:
            return decomposed(cv, op)
        except Skip:
            pass
    return _binary(EW.MUL)(cv, op)


def _scalar_mul(cv: Converter, value: SSAValue) -> tuple[SSAValue, float] | None:
    m = _is(cv, value, "aten.mul.Scalar", "aten.mul.Tensor")
    if m is None:
        return None
    for x, c in ((m.operands[0], m.operands[1]), (m.operands[1], m.operands[0])):
        if (f := cv.float_of(c)) is not None:
            return x, f
    return None


def gelu_decomposed(cv: Converter, op: Operation):
    """0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))): GPT-2's gelu_new as torch
    ops (HF's NewGELUActivation) -> stg.elementwise gelu (the tanh form)."""
    for half, rest in ((op.operands[0], op.operands[1]), (op.operands[1], op.operands[0])):
        scaled = _scalar_mul(cv, half)
        one_plus = _is(cv, rest, "aten.add.Scalar")
        if not scaled or scaled[1] != 0.5 or not one_plus or cv.float_of(one_plus.operands[1]) != 1.0:
            continue
        x = scaled[0]
        tanh = _is(cv, one_plus.operands[0], "aten.tanh")
        inner = tanh and _scalar_mul(cv, tanh.operands[0])
        if not inner or not math.isclose(inner[1], math.sqrt(2 / math.pi), rel_tol=1e-6):
            continue
        poly = _is(cv, inner[0], "aten.add.Tensor")
        cubic = poly and _scalar_mul(cv, poly.operands[1])
        power = cubic and _is(cv, cubic[0], "aten.pow.Tensor_Scalar")
        if (poly and poly.operands[0] == x and cubic and math.isclose(cubic[1], 0.044715) and power
                and power.operands[0] == x and cv.float_of(power.operands[1]) == 3.0):
            return _elementwise(cv, op, EW.GELU, [x])
    raise Skip("not a tanh gelu")


def _unary(kind: EW):
    def convert(cv: Converter, op: Operation):
        return _elementwise(cv, op, kind, [op.operands[0]])

    return convert


for _name, _kind in {
    "neg": EW.NEG, "exp": EW.EXP, "log": EW.LOG, "sqrt": EW.SQRT, "rsqrt": EW.RSQRT,
    "reciprocal": EW.RECIPROCAL, "tanh": EW.TANH, "sigmoid": EW.SIGMOID, "silu": EW.SILU, "relu": EW.RELU,
}.items():
    PATTERNS[f"torch.aten.{_name}"] = _unary(_kind)


@pattern("aten.gelu")
def gelu(cv: Converter, op: Operation):
    # stg's gelu is the tanh form; torch's exact (erf) gelu differs from it by < 1e-3
    return _elementwise(cv, op, EW.GELU, [op.operands[0]])


@pattern("aten.pow.Tensor_Scalar")
def pow_scalar(cv: Converter, op: Operation):
    exponent = cv.float_of(op.operands[1])
    kinds = {2.0: EW.SQUARE, 0.5: EW.SQRT, -1.0: EW.RECIPROCAL}
    if exponent not in kinds:
        raise Skip(f"pow by {exponent}: only 2, 0.5 and -1 have stg forms")
    return _elementwise(cv, op, kinds[exponent], [op.operands[0]])


@pattern("aten.to.dtype", "aten._to_copy", "aten.to.dtype_layout", "aten.type_as")
def to_dtype(cv: Converter, op: Operation):
    x = cv.view(op.operands[0])
    return View(cv.cast(x.value, cv.element(op.results[0])), x.perm)


@pattern("aten.clone", "aten.contiguous", "aten.detach", "aten.alias", "aten.lift_fresh_copy")
def identity_op(cv: Converter, op: Operation):
    return cv.view(op.operands[0])


@pattern("aten.dropout")
def dropout(cv: Converter, op: Operation):
    p, train = cv.float_of(op.operands[1]), cv.bool_of(op.operands[2])
    if train and p:
        raise Skip("dropout in training mode: export the model in eval mode (model.eval())")
    return cv.view(op.operands[0])


# -- normalisation, softmax, reductions -----------------------------------------------------------


def _norm(cv: Converter, op: Operation, kind: NormKind, x: View, weight: SSAValue, bias: SSAValue | None, eps: float) -> View:
    xv = cv.materialize(x)
    size = xv.type.shape[-1]
    w = cv.param(weight, [size]) if weight in cv.arg_names else cv.materialize(cv.view(weight))
    b = None
    if bias is not None:
        b = cv.param(bias, [size]) if bias in cv.arg_names else cv.materialize(cv.view(bias))
    el = xv.type.element_type
    norm = stg.NormOp(kind, xv, cv.cast(w, el), None if b is None else cv.cast(b, el))
    norm.properties["eps"] = FloatAttr(eps, f64)
    y = cv.emit(norm).result
    return identity(cv.cast(y, cv.element(op.results[0])))


@pattern("aten.layer_norm")
def layer_norm(cv: Converter, op: Operation):
    x = cv.view(op.operands[0])
    if len(cv.ints_of(op.operands[1])) != 1:
        raise Skip("layer_norm over more than the last dim")
    if cv.is_none(op.operands[2]):
        raise Skip("layer_norm without a weight")
    bias = None if cv.is_none(op.operands[3]) else op.operands[3]
    return _norm(cv, op, NormKind.LAYER, x, op.operands[2], bias, cv.float_of(op.operands[4]) or 1e-5)


@pattern("aten.rms_norm")
def rms_norm(cv: Converter, op: Operation):
    x = cv.view(op.operands[0])
    if len(cv.ints_of(op.operands[1])) != 1 or cv.is_none(op.operands[2]):
        raise Skip("rms_norm over more than the last dim, or without a weight")
    eps = cv.float_of(op.operands[3]) if not cv.is_none(op.operands[3]) else 1e-6
    return _norm(cv, op, NormKind.RMS, x, op.operands[2], None, eps)


def _through_casts(cv: Converter, value: SSAValue) -> SSAValue:
    while (p := cv.producer(value)) is not None and p.name in ("torch.aten.to.dtype", "torch.aten._to_copy"):
        value = p.operands[0]
    return value


def _is(cv: Converter, value: SSAValue, *names: str) -> Operation | None:
    p = cv.producer(value)
    return p if p is not None and p.name in {f"torch.{n}" for n in names} else None


def rms_norm_decomposed(cv: Converter, op: Operation):
    """weight * cast(x * rsqrt(mean(x^2, -1, keepdim) + eps)): Llama's RMSNorm as torch
    writes it (HF's LlamaRMSNorm, with its float32 casts) -> stg.norm rms."""
    for w_arg, t in ((op.operands[0], op.operands[1]), (op.operands[1], op.operands[0])):
        if w_arg not in cv.arg_names or cv.arg_names[w_arg][1] != "parameter" or len(cv.torch_shape(w_arg)) != 1:
            continue
        normed = _is(cv, _through_casts(cv, t), "aten.mul.Tensor")
        if normed is None:
            continue
        for x, r in ((normed.operands[0], normed.operands[1]), (normed.operands[1], normed.operands[0])):
            rs = _is(cv, r, "aten.rsqrt")
            add = rs and _is(cv, rs.operands[0], "aten.add.Scalar", "aten.add.Tensor")
            mean = add and _is(cv, add.operands[0], "aten.mean.dim")
            sq = mean and _is(cv, mean.operands[0], "aten.pow.Tensor_Scalar", "aten.mul.Tensor")
            if not sq:
                continue
            eps = cv.float_of(add.operands[1])
            is_square = (sq.name.endswith("pow.Tensor_Scalar") and cv.float_of(sq.operands[1]) == 2.0) or (
                sq.name.endswith("mul.Tensor") and sq.operands[0] == sq.operands[1]
            )
            if eps is None or not is_square or sq.operands[0] != x or cv.ints_of(mean.operands[1]) not in ([-1], [len(cv.torch_shape(x)) - 1]):
                continue
            source = _through_casts(cv, x)
            return _norm(cv, op, NormKind.RMS, cv.view(source), w_arg, None, eps)
    raise Skip("not an RMSNorm")


@pattern("aten._softmax", "aten.softmax.int")
def softmax(cv: Converter, op: Operation):
    x = cv.view(op.operands[0])
    dim = _dim(cv.int_of(op.operands[1]), x.rank)
    value = cv.cast(x.value, cv.element(op.results[0]))
    return View(cv.emit(stg.SoftmaxOp(value, x.perm[dim])).result, x.perm)


def _reduce(kind: ReduceKind):
    def convert(cv: Converter, op: Operation):
        x = cv.view(op.operands[0])
        dims = cv.ints_of(op.operands[1]) if not cv.is_none(op.operands[1]) else list(range(x.rank))
        dims = sorted(_dim(d, x.rank) for d in dims)
        keep = cv.bool_of(op.operands[2]) if len(op.operands) > 2 else False
        xv = cv.materialize(x)
        xv = cv.cast(xv, cv.element(op.results[0]))
        kept = [d for i, d in enumerate(xv.type.shape) if i not in dims]
        y = cv.emit(stg.ReduceOp(kind, xv, dims, TensorType(kept, xv.type.element_type))).result
        if keep:
            full = [Expr.const(1) if i in dims else d for i, d in enumerate(xv.type.shape)]
            y = cv.emit(stg.ReshapeOp(y, TensorType(full, y.type.element_type))).result
        return identity(y)

    return convert


PATTERNS["torch.aten.mean.dim"] = _reduce(ReduceKind.MEAN)
PATTERNS["torch.aten.sum.dim_IntList"] = _reduce(ReduceKind.SUM)
PATTERNS["torch.aten.amax"] = _reduce(ReduceKind.MAX)


# -- attention, rotary ---------------------------------------------------------------------------


def _bsnd(cv: Converter, v: View) -> SSAValue:
    """A torch [B, heads, S, D] tensor as stg's [B, S, heads, D]."""
    return cv.materialize(v.permuted((0, 2, 1, 3)))


@pattern("aten.scaled_dot_product_attention")
def sdpa(cv: Converter, op: Operation):
    q, k, v = (cv.view(x) for x in op.operands[:3])
    args = list(op.operands[3:])
    mask, dropout_p, causal = args[0], cv.float_of(args[1]), cv.bool_of(args[2])
    scale = None if cv.is_none(args[3]) else cv.float_of(args[3])
    if not cv.is_none(mask):
        raise Skip("attention with an explicit mask: stg.attention is causal or full; pass is_causal=True")
    if dropout_p:
        raise Skip("attention dropout")
    if q.rank != 4:
        raise Skip("attention over tensors that are not [batch, heads, seq, head_dim]")
    qs, ks, vs = _bsnd(cv, q), _bsnd(cv, k), _bsnd(cv, v)
    head_dim = cv.evaluate(qs.type.shape[3])
    if scale is not None and not math.isclose(scale, 1 / math.sqrt(head_dim), rel_tol=1e-6):
        raise Skip(f"attention scale {scale} is not 1/sqrt(head_dim)")
    heads, kv_heads = qs.type.shape[2], ks.type.shape[2]
    el = qs.type.element_type
    out = TensorType([qs.type.shape[0], qs.type.shape[1], heads, vs.type.shape[3]], el)
    y = cv.emit(stg.AttentionOp(qs, cv.cast(ks, el), cv.cast(vs, el), out, heads, kv_heads, causal=bool(causal))).result
    y.name_hint = "attn"
    return View(y, (0, 2, 1, 3))


def _trig_source(cv: Converter, value: SSAValue, fn: str) -> SSAValue | None:
    """The argument of the cos/sin a rotary table comes from, through unsqueezes,
    casts, slices of its full length and multiplications by 1.0."""
    seen = 0
    while (p := cv.producer(value)) is not None and seen < 16:
        seen += 1
        if p.name == f"torch.aten.{fn}":
            return p.operands[0]
        if p.name in ("torch.aten.unsqueeze", "torch.aten.to.dtype", "torch.aten._to_copy", "torch.aten.slice.Tensor",
                      "torch.aten.expand", "torch.aten.clone", "torch.aten.contiguous"):
            value = p.operands[0]
        elif p.name in ("torch.aten.mul.Scalar", "torch.aten.mul.Tensor") and cv.float_of(p.operands[1]) == 1.0:
            value = p.operands[0]
        else:
            return None
    return None


def _rotate_half_of(cv: Converter, value: SSAValue) -> SSAValue | None:
    """x if value is cat(-x[..., D/2:], x[..., :D/2]) (HF's rotate_half)."""
    cat = _is(cv, value, "aten.cat")
    if cat is None:
        return None
    pieces = cv.list_items(cat.operands[0])
    if len(pieces) != 2:
        return None
    neg = _is(cv, pieces[0], "aten.neg")
    hi = neg and _is(cv, neg.operands[0], "aten.slice.Tensor")
    lo = _is(cv, pieces[1], "aten.slice.Tensor")
    if not (hi and lo) or hi.operands[0] != lo.operands[0]:
        return None
    x = lo.operands[0]
    size = cv.torch_shape(x)[-1]
    rank = len(cv.torch_shape(x))
    if size is None or _dim(cv.int_of(lo.operands[1]), rank) != rank - 1 or _dim(cv.int_of(hi.operands[1]), rank) != rank - 1:
        return None
    if cv.int_of(lo.operands[2]) != 0 or cv.int_of(lo.operands[3]) != size // 2 or cv.int_of(hi.operands[2]) != size // 2:
        return None
    return x


def rotary(cv: Converter, op: Operation):
    """x * cos(t) + rotate_half(x) * sin(t), cos/sin position-only -> stg.elementwise
    rotary(x, rope.angles): the angles become the `rope.angles` input [S, 1, D]
    (docs/training-ir.md), which the caller computes as the model does."""
    a, b = op.operands[0], op.operands[1]
    for first, second in ((a, b), (b, a)):
        m1, m2 = _is(cv, first, "aten.mul.Tensor"), _is(cv, second, "aten.mul.Tensor")
        if not (m1 and m2):
            continue
        for x, cos in ((m1.operands[0], m1.operands[1]), (m1.operands[1], m1.operands[0])):
            if cos not in cv.static or _trig_source(cv, cos, "cos") is None:
                continue
            for rh, sin in ((m2.operands[0], m2.operands[1]), (m2.operands[1], m2.operands[0])):
                if sin not in cv.static or _trig_source(cv, sin, "sin") != _trig_source(cv, cos, "cos"):
                    continue
                if _rotate_half_of(cv, rh) != x:
                    continue
                xv = cv.view(x)
                if xv.rank != 4:
                    raise Skip("rotary embedding of a tensor that is not [batch, heads, seq, head_dim]")
                stg_x = _bsnd(cv, xv)
                b_, s, n, d = stg_x.type.shape
                angles = cv.named_input("rope.angles", [s, 1, d], f32)
                el = stg_x.type.element_type
                y = cv.emit(stg.ElementwiseOp(EW.ROTARY, [stg_x, angles], TensorType([b_, s, n, d], el))).result
                return View(y, (0, 2, 1, 3))
    raise Skip("not a rotary embedding")


# -- embedding and loss ----------------------------------------------------------------------------


@pattern("aten.embedding")
def embedding(cv: Converter, op: Operation):
    table, ids = op.operands[0], op.operands[1]
    shape = cv.torch_shape(table)
    if ids in cv.static:
        # position ids computed from arange: the program's `position_ids` input [B, S]
        rows = cv.symbols.resolve(shape[0], ("P",))
        hidden = cv.symbols.resolve(shape[1], ("H",))
        idx = cv.named_input("position_ids", [cv.symbols.sym("B"), cv.symbols.sym("S")], cv.element(ids))
    else:
        iv = cv.view(ids)
        idx = cv.materialize(iv)
        rows = cv.symbols.resolve(shape[0], ("V",))
        hidden = cv.symbols.resolve(shape[1], ("H",))
    t = cv.param(table, [rows, hidden]) if table in cv.arg_names else cv.materialize(cv.view(table))
    out = TensorType([*idx.type.shape, t.type.shape[1]], t.type.element_type)
    y = cv.emit(stg.EmbeddingOp(t, idx, out)).result
    y.name_hint = "x"
    return identity(y)


def _unflatten(cv: Converter, value: SSAValue) -> SSAValue:
    """The [B, S, ...] value that reshapes to [B*S, ...] and casts (the logits'
    `.float()`: stg.cross_entropy computes in f32 whatever its input) came from."""
    while isinstance(op := value.owner, (stg.ReshapeOp, stg.ElementwiseOp)):
        if isinstance(op, stg.ElementwiseOp):
            if op.kind.data != EW.CAST:
                break
            value = op.inputs[0]
        else:
            value = op.input
    return value


@pattern("aten.cross_entropy_loss")
def cross_entropy(cv: Converter, op: Operation):
    logits, labels = cv.view(op.operands[0]), cv.view(op.operands[1])
    if not cv.is_none(op.operands[2]):
        raise Skip("cross_entropy with class weights")
    if cv.int_of(op.operands[3]) != 1:
        raise Skip("cross_entropy with a reduction other than mean")
    if len(op.operands) > 5 and cv.float_of(op.operands[5]):
        raise Skip("cross_entropy with label smoothing")
    lv, yv = cv.materialize(logits), cv.materialize(labels)
    # the template's form: logits [B, S, V] in the model's type against labels [B, S]
    l3, y3 = _unflatten(cv, lv), _unflatten(cv, yv)
    if l3.type.rank == y3.type.rank + 1 and list(l3.type.shape[:-1]) == list(y3.type.shape):
        lv, yv = l3, y3
    wide = f64 if cv.element(op.results[0]) == f64 else f32
    y = cv.emit(stg.CrossEntropyOp(lv, yv, TensorType([], wide))).result
    y.name_hint = "loss"
    return identity(y)


# -- shapes ------------------------------------------------------------------------------------


def reshape_dims(cv: Converter, src: Sequence[Expr], target: Sequence[Expr | int]) -> list[Expr]:
    """The symbolic sizes of a reshape of `src` to `target` (bound expressions for
    dynamic dims, ints for static ones): dims carried over or merged keep the source's
    expressions; a split dim's pieces are named by the model symbols (heads first) and
    checked to multiply back to the source."""
    ev = cv.evaluate
    s_vals = [ev(e) for e in src]
    t_vals = [ev(t) if isinstance(t, Expr) else t for t in target]
    out: list[Expr | None] = [None] * len(target)
    i = j = 0
    while i < len(src) or j < len(target):
        if j < len(target) and t_vals[j] == 1 and (i >= len(src) or s_vals[i] != 1):
            out[j] = Expr.const(1)
            j += 1
            continue
        if i < len(src) and s_vals[i] == 1 and (j >= len(target) or t_vals[j] != 1):
            i += 1
            continue
        if i >= len(src) or j >= len(target):
            raise Skip("reshape sizes do not line up")
        i0, j0 = i, j
        a, b = s_vals[i], t_vals[j]
        i, j = i + 1, j + 1
        while a != b:
            if a < b and i < len(src):
                a, i = a * s_vals[i], i + 1
            elif b < a and j < len(target):
                b, j = b * t_vals[j], j + 1
            else:
                raise Skip("reshape sizes do not line up")
        run = product_of(list(src[i0:i]))
        if j - j0 == 1:
            out[j0] = run
            continue
        pieces = [t if isinstance(t, Expr) else cv.symbols.resolve(t, (*HEADS, "D", "E")) for t in target[j0:j]]
        if product_of(pieces) != run:
            # name the last static piece by what is left of the source
            k = max(x for x in range(j0, j) if not isinstance(target[x], Expr))
            rest = product_of([p for x, p in zip(range(j0, j), pieces) if x != k])
            pieces[k - j0] = run / rest
        out[j0:j] = pieces
    return [o if o is not None else Expr.const(1) for o in out]


@pattern("aten.view", "aten.reshape", "aten._unsafe_view", "aten.unsqueeze", "aten.squeeze.dim", "aten.squeeze",
         "aten.flatten.using_ints", "aten.unflatten.int")
def reshape(cv: Converter, op: Operation):
    source = op.operands[0]
    if source in cv.arg_names and cv.arg_names[source][1] == "parameter" and source not in cv.params and all(
        u.operation is op for u in source.uses
    ):
        # a parameter used only through this view is declared in the viewed shape (as the
        # GPT template declares c_attn [3, N*D, H]): experts lead with E
        shape = cv.torch_shape(op.results[0])
        experts = len(shape) >= 3  # stacked expert weights: [E, ...], no attention sizes
        dims = [cv.symbols.resolve(s, ("E",) if i == 0 and experts else (), ("N", "KV", "D") if experts else ())
                for i, s in enumerate(shape)]
        return identity(cv.param(source, dims))
    x = cv.view(source)
    target = cv.torch_dims(op.results[0])
    xv = cv.materialize(x)
    dims = reshape_dims(cv, list(xv.type.shape), target)
    if dims == list(xv.type.shape):
        return identity(xv)
    return identity(cv.emit(stg.ReshapeOp(xv, TensorType(dims, xv.type.element_type))).result)


@pattern("aten.transpose.int")
def transpose(cv: Converter, op: Operation):
    x = cv.view(op.operands[0])
    d0, d1 = (_dim(cv.int_of(v), x.rank) for v in op.operands[1:3])
    p = list(range(x.rank))
    p[d0], p[d1] = p[d1], p[d0]
    return x.permuted(p)


@pattern("aten.permute")
def permute(cv: Converter, op: Operation):
    x = cv.view(op.operands[0])
    return x.permuted([_dim(d, x.rank) for d in cv.ints_of(op.operands[1])])


@pattern("aten.t", "aten.numpy_T")
def t(cv: Converter, op: Operation):
    x = cv.view(op.operands[0])
    return x.permuted(list(reversed(range(x.rank))))


@pattern("aten.expand")
def expand(cv: Converter, op: Operation):
    # broadcasting is implicit in stg's elementwise ops: the consumer reads the source
    return cv.view(op.operands[0])


@pattern("aten.cat")
def cat(cv: Converter, op: Operation):
    views = [cv.view(v) for v in cv.list_items(op.operands[0])]
    values = [cv.materialize(v) for v in views]
    dim = _dim(cv.int_of(op.operands[1]), values[0].type.rank)
    shape = list(values[0].type.shape)
    shape[dim] = sum((v.type.shape[dim] for v in values[1:]), shape[dim])
    el = cv.element(op.results[0])
    values = [cv.cast(v, el) for v in values]
    return identity(cv.emit(stg.ConcatOp(values, dim, TensorType(shape, el))).result)


def _split(cv: Converter, x: View, dim: int, sizes: Sequence[Expr]) -> list[View]:
    """One stg.split per value, dim and sizes: slices and selects of the same tensor
    (gate_up[0], gate_up[1]) share it."""
    xv = cv.materialize(x)
    key = (xv, dim, tuple(sizes))
    if key not in cv.splits:
        shape = list(xv.type.shape)
        types = [TensorType([*shape[:dim], s, *shape[dim + 1:]], xv.type.element_type) for s in sizes]
        cv.splits[key] = [identity(r) for r in cv.emit(stg.SplitOp(xv, dim, types)).outputs]
    return cv.splits[key]


def _piece_sizes(cv: Converter, whole: Expr, sizes: Sequence[int]) -> list[Expr]:
    total = cv.evaluate(whole)
    out = []
    for s in sizes:
        if s == total:
            out.append(whole)
        elif total % s == 0:
            out.append(whole / (total // s))
        else:
            out.append(cv.symbols.resolve(s))
    return out


@pattern("aten.slice.Tensor")
def slice_(cv: Converter, op: Operation):
    x = cv.view(op.operands[0])
    dims = x.dims()
    dim = _dim(cv.int_of(op.operands[1]), x.rank)
    start, end, step = (cv.int_of(v) if not cv.is_none(v) else None for v in op.operands[2:5])
    size = cv.torch_shape(op.operands[0])[dim]
    start = start or 0
    if step not in (None, 1):
        raise Skip("a strided slice")
    if start == 0 and (end is None or size is not None and end >= size or end >= 2**62):
        return x
    if size is None:
        raise Skip("a slice of a dynamic dim")
    end = min(end if end is not None else size, size)
    cuts = [c for c in (start, end - start, size - end) if c]
    pieces = _split(cv, x, dim, _piece_sizes(cv, dims[dim], cuts))
    return pieces[1 if start else 0]


def _split_sizes(cv: Converter, op: Operation) -> tuple[View, int, list[int]]:
    x = cv.view(op.operands[0])
    size = cv.torch_shape(op.operands[0])
    if op.name.endswith("split_with_sizes"):
        sizes = cv.ints_of(op.operands[1])
        dim = _dim(cv.int_of(op.operands[2]), x.rank)
    elif op.name.endswith("chunk"):
        dim = _dim(cv.int_of(op.operands[2]), x.rank)
        chunks = cv.int_of(op.operands[1])
        sizes = [size[dim] // chunks] * chunks
    else:
        dim = _dim(cv.int_of(op.operands[2]), x.rank)
        step = cv.int_of(op.operands[1])
        sizes = [step] * (size[dim] // step)
    if None in sizes or size[dim] is None or sum(sizes) != size[dim]:
        raise Skip("a split of a dynamic dim or into unequal static sizes")
    return x, dim, sizes


@pattern("aten.split.Tensor", "aten.split_with_sizes", "aten.chunk")
def split(cv: Converter, op: Operation):
    x, dim, sizes = _split_sizes(cv, op)
    if (pieces := _fused_split(cv, x, dim, sizes)) is not None:
        return pieces
    return _split(cv, x, dim, _piece_sizes(cv, x.dims()[dim], sizes))


def _fused_split(cv: Converter, x: View, dim: int, sizes: Sequence[int]) -> list[View] | None:
    """The last dim of a fused [.., k*w] output (reshaped from [T, k, w]) split into its k
    pieces: split the [T, k, w] value on k, then reshape each piece to the torch shape."""
    if not x.identity or dim != x.rank - 1:
        return None
    value = x.value
    while value not in cv.fused and isinstance(value.owner, stg.ReshapeOp):
        value = value.owner.input
    fused = cv.fused.get(value)
    if fused is None or len(sizes) != fused.type.shape[1].as_int():
        return None
    lead = list(x.value.type.shape[:-1])
    whole = cv.emit(stg.SplitOp(fused, 1, [TensorType([fused.type.shape[0], Expr.const(1), fused.type.shape[2]],
                                                      fused.type.element_type)] * len(sizes)))
    out = []
    for piece in whole.outputs:
        target = TensorType([*lead, fused.type.shape[2]], piece.type.element_type)
        out.append(identity(cv.emit(stg.ReshapeOp(piece, target)).result))
    return out


@pattern("prim.ListUnpack")
def list_unpack(cv: Converter, op: Operation):
    pieces = cv.values.get(op.operands[0])
    if not isinstance(pieces, list):
        raise Skip("unpacks a list that was not converted")
    return tuple(pieces)


# -- einsum, select ------------------------------------------------------------------------------


@pattern("aten.einsum")
def einsum(cv: Converter, op: Operation):
    eq_op = cv.producer(op.operands[0])
    if eq_op is None or eq_op.name != "torch.constant.str":
        raise Skip("an einsum equation that is not a constant")
    equation = eq_op.properties["value"].data.replace(" ", "")
    if "..." in equation or "->" not in equation:
        raise Skip(f"einsum '{equation}': only explicit equations without ellipses")
    lhs, out = equation.split("->")
    subs = lhs.split(",")
    views = [cv.view(v) for v in cv.list_items(op.operands[1])]
    if len(subs) != len(views):
        raise Skip(f"einsum '{equation}' has {len(subs)} operands, not {len(views)}")
    sizes: dict[str, Expr] = {}
    stg_subs = []
    for sub, v in zip(subs, views):
        if len(sub) != v.rank:
            raise Skip(f"einsum '{equation}': operand rank {v.rank} does not match '{sub}'")
        letters = [""] * v.rank
        for k, p in enumerate(v.perm):
            letters[p] = sub[k]
        stg_subs.append("".join(letters))
        for letter, size in zip(sub, v.dims()):
            sizes.setdefault(letter, size)
    el = cv.element(op.results[0])
    values = [cv.cast(v.value, el) for v in views]
    dims = [sizes[c] for c in out]
    y = cv.emit(stg.EinsumOp(f"{','.join(stg_subs)}->{out}", values, TensorType(dims, el))).result
    return identity(y)


def _param_view(cv: Converter, value: SSAValue) -> SSAValue | None:
    """The parameter argument `value` is a view of, if that view is its only use."""
    view = _is(cv, value, "aten.view", "aten.reshape")
    if view is None:
        return None
    source = view.operands[0]
    if source in cv.arg_names and cv.arg_names[source][1] == "parameter" and all(u.operation is view for u in source.uses):
        return source
    return None


@pattern("aten.select.int")
def select(cv: Converter, op: Operation):
    if (param := _param_view(cv, op.operands[0])) is not None and cv.int_of(op.operands[2]) is not None:
        # a slice of a fused weight (HF's experts.gate_up_proj viewed [E, 2, FE, H], [:, 0]):
        # a parameter of its own, `<name>[<index>]`, so its gradient is a weight's
        name, _ = cv.arg_names[param]
        key = f"{name}[{cv.int_of(op.operands[2])}]"
        if key not in cv.slices:
            shape = cv.torch_shape(op.results[0])
            experts = len(shape) >= 3
            dims = [cv.symbols.resolve(s, ("E",) if i == 0 and experts else (), ("N", "KV", "D") if experts else ())
                    for i, s in enumerate(shape)]
            ty = TensorType(dims, cv.element(op.results[0]))
            param_op = stg.ParamOp(key, ty)
            param_op.result.name_hint = name.rsplit(".", 1)[-1] + f"{cv.int_of(op.operands[2])}"
            cv.emit(param_op)
            cv.slices[key] = param_op.result
        return identity(cv.slices[key])
    x = cv.view(op.operands[0])
    dim = _dim(cv.int_of(op.operands[1]), x.rank)
    index = cv.int_of(op.operands[2])
    size = cv.torch_shape(op.operands[0])[dim]
    if index is None or size is None:
        raise Skip("select at a dynamic index or of a dynamic dim")
    index = index + size if index < 0 else index
    cuts = [c for c in (index, 1, size - index - 1) if c]
    dims = x.dims()
    pieces = _split(cv, x, dim, _piece_sizes(cv, dims[dim], cuts)) if len(cuts) > 1 else [identity(cv.materialize(x))]
    piece = cv.materialize(pieces[1 if index else 0])
    kept = [d for i, d in enumerate(piece.type.shape) if i != dim]
    return identity(cv.emit(stg.ReshapeOp(piece, TensorType(kept, piece.type.element_type))).result)


# -- MoE routing (frontends/torch/moe.py's custom ops) -------------------------------------------------


def _routing(cv: Converter, scores: SSAValue) -> tuple[View, int, bool]:
    """scores = scatter(zeros, 1, topk(P, k).indices, w) with w the top-k values, or
    them over their sum: the router's probabilities P, k and whether to normalize."""
    scatter = _is(cv, scores, "aten.scatter.src")
    if scatter is None or cv.int_of(scatter.operands[1]) not in (1, -1):
        raise Skip("MoE scores that are not the scatter of a top-k over the experts")
    index, values = scatter.operands[2], scatter.operands[3]
    topk = cv.producer(index)
    if topk is None or topk.name != "torch.aten.topk" or index is not topk.results[1]:
        raise Skip("MoE scores whose experts are not a topk")
    normalize = False
    if values is not topk.results[0]:
        div = _is(cv, values, "aten.div.Tensor", "aten.div_.Tensor")
        total = div and _is(cv, div.operands[1], "aten.sum.dim_IntList")
        if not (div and total and div.operands[0] is topk.results[0] and total.operands[0] is topk.results[0]):
            raise Skip("MoE weights that are neither the top-k probabilities nor them normalized")
        normalize = True
    return cv.view(topk.operands[0]), cv.int_of(topk.operands[1]), normalize


def _moe_dispatch(cv: Converter, op: Operation):
    tokens = cv.materialize(cv.view(op.operands[0]))
    scores, top_k, _ = _routing(cv, op.operands[1])
    probs = cv.materialize(scores)
    experts = probs.type.shape[1]
    capacity = cv.torch_dims(op.results[0])[1]
    if not isinstance(capacity, Expr):
        capacity = Expr.const(capacity)
    if experts.as_int() is None:
        # the template's form of C: capacity_factor * top_k * B * S / E
        capacity = capacity * cv.evaluate(experts) / experts
    out = TensorType([experts, capacity, tokens.type.shape[1]], tokens.type.element_type)
    y = cv.emit(stg.MoeDispatchOp(tokens, probs, top_k, out)).result
    y.name_hint = "dispatched"
    return identity(y)


def _moe_combine(cv: Converter, op: Operation):
    buffers = cv.materialize(cv.view(op.operands[0]))
    if cv.bool_of(op.operands[3]):
        raise Skip("moe_combine normalizing scores that are already a scatter of top-k weights")
    scores, top_k, normalize = _routing(cv, op.operands[1])
    probs = cv.materialize(scores)
    el = cv.element(op.results[0])
    out = TensorType([probs.type.shape[0], buffers.type.shape[2]], buffers.type.element_type)
    y = cv.emit(stg.MoeCombineOp(buffers, probs, top_k, out, normalize)).result
    y.name_hint = "combined"
    return identity(cv.cast(y, el))


CUSTOM_OPS = {"torch.stagec.moe_dispatch": _moe_dispatch, "torch.stagec.moe_combine": _moe_combine}


@pattern("operator")
def operator(cv: Converter, op: Operation):
    name = op.properties.get("name")
    fn = CUSTOM_OPS.get(name.data if name is not None else "")
    if fn is None:
        raise Skip(f"custom op '{name.data if name is not None else '?'}' has no pattern")
    return fn(cv, op)
