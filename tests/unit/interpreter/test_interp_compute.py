"""Compute and shape ops, one IR snippet each, against torch computing the same thing."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from tests.unit.interpreter.interp_testing import close, rand, run, t

# -- einsum ------------------------------------------------------------------------------


def test_einsum_matmul_and_scalar_contraction():
    x, w, v = rand(3, 4, seed=1), rand(4, 5, seed=2), rand(4, seed=3)
    ir = f"""
    func.func @f(%x: {t("3, 4")}, %w: {t("4, 5")}, %v: {t("4")}) -> ({t("3, 5")}, {t("")}) {{
      %y = stg.einsum "bh,hf->bf" %x, %w : {t("3, 4")}, {t("4, 5")} -> {t("3, 5")}
      %s = stg.einsum "bh,bh,h->" %x, %x, %v : {t("3, 4")}, {t("3, 4")}, {t("4")} -> {t("")}
      func.return %y, %s : {t("3, 5")}, {t("")}
    }}"""
    y, s = run(ir, x, w, v)
    close(y, x @ w)
    close(s, (x * x * v).sum())


def test_einsum_accumulates_into_a_wider_result():
    x, w = rand(2, 4, seed=1).float(), rand(4, 3, seed=2).float()
    ir = f"""
    func.func @f(%x: {t("2, 4", "f32")}, %w: {t("4, 3", "f32")}) -> {t("2, 3")} {{
      %y = stg.einsum "bh,hf->bf" %x, %w : {t("2, 4", "f32")}, {t("4, 3", "f32")} -> {t("2, 3")}
      func.return %y : {t("2, 3")}
    }}"""
    (y,) = run(ir, x, w)
    assert y.dtype == torch.float64
    close(y, x.double() @ w.double())


def test_einsum_free_local_slice_over_tp():
    """x holds all of H, w splits H over tp: each rank cuts its block of x, and the
    contraction over the split H is a partial sum over tp."""
    x, w = rand(4, 6, seed=1), rand(6, 5, seed=2)
    ir = f"""
    stg.mesh @m [tp = 2]
    func.func @f(%x: {t("B, H")}, %w: {t("H/tp, F")}) -> {t("B, F", partial="tp")} {{
      %y = stg.einsum "bh,hf->bf" %x, %w : {t("B, H")}, {t("H/tp, F")} -> {t("B, F", partial="tp")}
      func.return %y : {t("B, F", partial="tp")}
    }}"""
    (y,) = run(ir, x, w, B=4, H=6, F=5)
    close(y, x @ w)


# -- elementwise -------------------------------------------------------------------------

UNARY_REFERENCE = {
    "neg": lambda x: -x,
    "copy": lambda x: x,
    "dropout": lambda x: x,
    "exp": torch.exp,
    "log": torch.log,
    "sqrt": torch.sqrt,
    "rsqrt": lambda x: 1 / torch.sqrt(x),
    "square": lambda x: x * x,
    "reciprocal": lambda x: 1 / x,
    "tanh": torch.tanh,
    "sigmoid": lambda x: 1 / (1 + torch.exp(-x)),
    "relu": lambda x: torch.where(x > 0, x, torch.zeros_like(x)),
    "gelu": lambda x: 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
    "silu": lambda x: x / (1 + torch.exp(-x)),
    "softplus": lambda x: torch.log1p(torch.exp(x)),
}
POSITIVE_INPUT = {"log", "sqrt", "rsqrt"}


def _unary_ir(kind: str, attrs: str = "") -> str:
    return f"""
    func.func @f(%x: {t("3, 4")}) -> {t("3, 4")} {{
      %y = stg.elementwise {kind} %x {attrs}: {t("3, 4")} -> {t("3, 4")}
      func.return %y : {t("3, 4")}
    }}"""


@pytest.mark.parametrize("kind", sorted(UNARY_REFERENCE))
def test_elementwise_unary(kind):
    x = rand(3, 4, seed=7)
    if kind in POSITIVE_INPUT:
        x = x.abs() + 0.5
    (y,) = run(_unary_ir(kind), x)
    close(y, UNARY_REFERENCE[kind](x))


def test_elementwise_scale_and_cast():
    x = rand(3, 4, seed=1)
    (y,) = run(_unary_ir("scale", "by 0.125 "), x)
    close(y, x * 0.125)
    ir = f"""
    func.func @f(%x: {t("3, 4")}) -> {t("3, 4", "f32")} {{
      %y = stg.elementwise cast %x : {t("3, 4")} -> {t("3, 4", "f32")}
      func.return %y : {t("3, 4", "f32")}
    }}"""
    (y,) = run(ir, x)
    assert y.dtype == torch.float32
    torch.testing.assert_close(y, x.float())


BINARY_REFERENCE = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "max": lambda a, b: torch.where(a > b, a, b),
    "min": lambda a, b: torch.where(a < b, a, b),
}


@pytest.mark.parametrize("kind", sorted(BINARY_REFERENCE))
def test_elementwise_binary_with_broadcast(kind):
    a, b = rand(2, 3, 4, seed=1), rand(4, seed=2)
    ir = f"""
    func.func @f(%a: {t("2, 3, 4")}, %b: {t("4")}) -> {t("2, 3, 4")} {{
      %y = stg.elementwise {kind} %a, %b : {t("2, 3, 4")}, {t("4")} -> {t("2, 3, 4")}
      func.return %y : {t("2, 3, 4")}
    }}"""
    (y,) = run(ir, a, b)
    close(y, BINARY_REFERENCE[kind](a, b))


def _hf_rotate_half(x):
    """transformers.models.llama.modeling_llama.rotate_half"""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def test_rotary_matches_hugging_face_apply_rotary_pos_emb():
    b, s, n, d = 2, 5, 3, 8
    q = rand(b, s, n, d, seed=1)
    inv_freq = 1.0 / (10000 ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    freqs = torch.outer(torch.arange(s, dtype=torch.float64), inv_freq)  # [S, D/2]
    emb = torch.cat((freqs, freqs), dim=-1)  # HF: theta[s, d] = s * inv_freq[d mod D/2]
    angles = emb.unsqueeze(1)  # [S, 1, D]
    ir = f"""
    func.func @f(%q: {t("B, S, N, D")}, %a: {t("S, 1, D")}) -> {t("B, S, N, D")} {{
      %y = stg.elementwise rotary %q, %a : {t("B, S, N, D")}, {t("S, 1, D")} -> {t("B, S, N, D")}
      func.return %y : {t("B, S, N, D")}
    }}"""
    (y,) = run(ir, q, angles, B=b, S=s, N=n, D=d)
    # HF applies cos/sin [B, S, D] unsqueezed at dim 2 to q [B, S, N, D] (our layout)
    cos, sin = emb.cos().unsqueeze(0).unsqueeze(2), emb.sin().unsqueeze(0).unsqueeze(2)
    close(y, q * cos + _hf_rotate_half(q) * sin)


FORWARD_OF_GRAD = {
    "relu_grad": torch.relu,
    "gelu_grad": lambda x: F.gelu(x, approximate="tanh"),
    "silu_grad": F.silu,
    "sigmoid_grad": torch.sigmoid,
    "tanh_grad": torch.tanh,
    "softplus_grad": F.softplus,
}


@pytest.mark.parametrize("kind", sorted(FORWARD_OF_GRAD))
def test_grad_kinds_match_autograd(kind):
    """k_grad(dy, x) = dy * k'(x), x being the forward input."""
    dy, x = rand(3, 4, seed=1), rand(3, 4, seed=2).requires_grad_()
    ir = f"""
    func.func @f(%dy: {t("3, 4")}, %x: {t("3, 4")}) -> {t("3, 4")} {{
      %g = stg.elementwise {kind} %dy, %x : {t("3, 4")}, {t("3, 4")} -> {t("3, 4")}
      func.return %g : {t("3, 4")}
    }}"""
    (g,) = run(ir, dy, x.detach())
    (expected,) = torch.autograd.grad(FORWARD_OF_GRAD[kind](x), x, dy)
    close(g, expected)


def test_elementwise_broadcasts_to_a_result_larger_than_every_operand():
    """stg-autodiff seeds a sum's cotangent as `copy %ones : [1, 1] -> [B, H]`."""
    ones = torch.ones(1, 1, dtype=torch.float64)
    ir = f"""
    func.func @f(%o: {t("1, 1")}) -> {t("B, H")} {{
      %y = stg.elementwise copy %o : {t("1, 1")} -> {t("B, H")}
      func.return %y : {t("B, H")}
    }}"""
    close(run(ir, ones, B=2, H=3)[0], torch.ones(2, 3, dtype=torch.float64))


def test_elementwise_slices_a_whole_operand_to_the_result_split():
    a, c = rand(4, 6, seed=1), rand(6, seed=2)
    ir = f"""
    stg.mesh @m [tp = 2]
    func.func @f(%a: {t("4, 6/tp")}, %c: {t("6")}) -> {t("4, 6/tp")} {{
      %y = stg.elementwise add %a, %c : {t("4, 6/tp")}, {t("6")} -> {t("4, 6/tp")}
      func.return %y : {t("4, 6/tp")}
    }}"""
    (y,) = run(ir, a, c)
    close(y, a + c)


# -- reductions and normalisations -----------------------------------------------------


@pytest.mark.parametrize(
    "kind, reference",
    [("sum", lambda x: x.sum((0, 2))), ("mean", lambda x: x.mean((0, 2))),
     ("max", lambda x: x.amax((0, 2))), ("min", lambda x: x.amin((0, 2)))],
)
def test_reduce(kind, reference):
    x = rand(2, 3, 4, seed=5)
    ir = f"""
    func.func @f(%x: {t("2, 3, 4")}) -> {t("3")} {{
      %y = stg.reduce {kind} %x dims [0, 2] : {t("2, 3, 4")} -> {t("3")}
      func.return %y : {t("3")}
    }}"""
    (y,) = run(ir, x)
    close(y, reference(x))


def test_reduce_mean_over_a_split_dim_is_a_partial_sum_of_the_global_mean():
    x = rand(4, 3, seed=5)
    ir = f"""
    stg.mesh @m [dp = 2]
    func.func @f(%x: {t("4/dp, 3")}) -> {t("3", partial="dp")} {{
      %y = stg.reduce mean %x dims [0] : {t("4/dp, 3")} -> {t("3", partial="dp")}
      func.return %y : {t("3", partial="dp")}
    }}"""
    (y,) = run(ir, x)
    close(y, x.mean(0))


def test_reduce_over_no_dims_is_the_identity():
    x = rand(2, 3, seed=5)
    ir = f"""
    func.func @f(%x: {t("2, 3")}) -> {t("2, 3")} {{
      %y = stg.reduce sum %x dims [] : {t("2, 3")} -> {t("2, 3")}
      func.return %y : {t("2, 3")}
    }}"""
    close(run(ir, x)[0], x)


def test_softmax():
    x = rand(2, 3, 5, seed=3)
    ir = f"""
    func.func @f(%x: {t("2, 3, 5")}) -> {t("2, 3, 5")} {{
      %y = stg.softmax %x dim 1 : {t("2, 3, 5")} -> {t("2, 3, 5")}
      func.return %y : {t("2, 3, 5")}
    }}"""
    e = torch.exp(x - x.amax(1, keepdim=True))
    close(run(ir, x)[0], e / e.sum(1, keepdim=True))


def test_rms_norm_with_eps_attribute_and_default():
    x, w = rand(2, 3, 8, seed=1), rand(8, seed=2)
    ir = f"""
    func.func @f(%x: {t("2, 3, 8")}, %w: {t("8")}) -> ({t("2, 3, 8")}, {t("2, 3, 8")}) {{
      %y = stg.norm rms %x, %w {{eps = 1.0e-2 : f64}} : {t("2, 3, 8")}, {t("8")} -> {t("2, 3, 8")}
      %z = stg.norm rms %x, %w : {t("2, 3, 8")}, {t("8")} -> {t("2, 3, 8")}
      func.return %y, %z : {t("2, 3, 8")}, {t("2, 3, 8")}
    }}"""
    y, z = run(ir, x, w)
    close(y, x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-2) * w)
    close(z, x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-5) * w)


def test_layer_norm_with_and_without_bias():
    x, w, b = rand(2, 3, 8, seed=1), rand(8, seed=2), rand(8, seed=3)
    ir = f"""
    func.func @f(%x: {t("2, 3, 8")}, %w: {t("8")}, %b: {t("8")}) -> ({t("2, 3, 8")}, {t("2, 3, 8")}) {{
      %y = stg.norm layer %x, %w, %b {{eps = 1.0e-3 : f64}} : {t("2, 3, 8")}, {t("8")}, {t("8")} -> {t("2, 3, 8")}
      %z = stg.norm layer %x, %w : {t("2, 3, 8")}, {t("8")} -> {t("2, 3, 8")}
      func.return %y, %z : {t("2, 3, 8")}, {t("2, 3, 8")}
    }}"""
    y, z = run(ir, x, w, b)
    mean, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)
    close(y, (x - mean) / torch.sqrt(var + 1e-3) * w + b)
    close(z, (x - mean) / torch.sqrt(var + 1e-5) * w)


def test_element_types():
    """bf16, f16, f32, f64, i64, i32 and i1 values, cast to f64."""
    ir = "func.func @f(%a: {ta}) -> {tf} {{\n  %y = stg.elementwise cast %a : {ta} -> {tf}\n  func.return %y : {tf}\n}}"
    for element, dtype in [("bf16", torch.bfloat16), ("f16", torch.float16), ("f32", torch.float32),
                           ("f64", torch.float64), ("i64", torch.int64), ("i32", torch.int32), ("i1", torch.bool)]:
        x = (rand(3, seed=1) * 4).to(dtype)
        (y,) = run(ir.format(ta=t("3", element), tf=t("3")), x)
        close(y, x.double())


def test_bf16_rms_norm_computes_in_fp32_and_rounds_once():
    x, w = rand(2, 8, seed=1).bfloat16(), rand(8, seed=2).float()
    ir = f"""
    func.func @f(%x: {t("2, 8", "bf16")}, %w: {t("8", "f32")}) -> {t("2, 8", "bf16")} {{
      %y = stg.norm rms %x, %w {{eps = 1.0e-6 : f64}} : {t("2, 8", "bf16")}, {t("8", "f32")} -> {t("2, 8", "bf16")}
      func.return %y : {t("2, 8", "bf16")}
    }}"""
    (y,) = run(ir, x, w)
    xf = x.float()
    expected = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w).bfloat16()
    assert y.dtype == torch.bfloat16
    torch.testing.assert_close(y, expected, atol=0, rtol=0)


# -- shape ops ---------------------------------------------------------------------------


def test_reshape_transpose_concat_split_fill():
    x, k = rand(2, 3, 8, seed=1), rand(2, 3, 2, seed=2)
    ir = f"""
    func.func @f(%x: {t("B, S, H")}, %k: {t("B, S, KV")}) -> ({t("B, N, S, (H/N)")}, {t("B, S, (H + 2*KV)")}, {t("B, S, KV")}, {t("B, S, H")}, {t("B, S")}) {{
      %r = stg.reshape %x : {t("B, S, H")} -> {t("B, S, N, (H/N)")}
      %p = stg.transpose %r perm [0, 2, 1, 3] : {t("B, S, N, (H/N)")} -> {t("B, N, S, (H/N)")}
      %c = stg.concat %x, %k, %k dim 2 : {t("B, S, H")}, {t("B, S, KV")}, {t("B, S, KV")} -> {t("B, S, (H + 2*KV)")}
      %q2, %k2, %v2 = stg.split %c dim 2 : {t("B, S, (H + 2*KV)")} -> {t("B, S, H")}, {t("B, S, KV")}, {t("B, S, KV")}
      %z = stg.fill 2.5 : {t("B, S")}
      func.return %p, %c, %v2, %q2, %z : {t("B, N, S, (H/N)")}, {t("B, S, (H + 2*KV)")}, {t("B, S, KV")}, {t("B, S, H")}, {t("B, S")}
    }}"""
    p, c, v2, q2, z = run(ir, x, k, B=2, S=3, H=8, N=4, KV=2)
    close(p, x.reshape(2, 3, 4, 2).permute(0, 2, 1, 3))
    close(c, torch.cat([x, k, k], dim=2))
    close(v2, k)
    close(q2, x)
    close(z, torch.full((2, 3), 2.5, dtype=torch.float64))


def test_reshape_of_a_split_leading_dim():
    x = rand(4, 3, 2, seed=1)
    ir = f"""
    stg.mesh @m [dp = 2]
    func.func @f(%x: {t("B/dp, S, H")}) -> {t("B*S/dp, H")} {{
      %r = stg.reshape %x : {t("B/dp, S, H")} -> {t("B*S/dp, H")}
      func.return %r : {t("B*S/dp, H")}
    }}"""
    close(run(ir, x, B=4, S=3, H=2)[0], x.reshape(12, 2))
