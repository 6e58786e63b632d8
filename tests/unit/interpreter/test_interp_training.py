"""stg.vjp against torch.autograd, and stg.adam / stg.sgd against torch.optim over
three steps, the states living in the StateStore between steps."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from stagec.runtime.interpreter import StateStore

from tests.unit.interpreter.interp_testing import close, interpreter, rand, run, t

Q, KV = t("B, S, N, D"), t("B, S, KV, D")


def test_vjp_of_gqa_attention_matches_autograd():
    b, s, n, kv, d = 2, 4, 4, 2, 3
    q, k, v, do = rand(b, s, n, d, seed=1), rand(b, s, kv, d, seed=2), rand(b, s, kv, d, seed=3), rand(b, s, n, d, seed=4)
    ir = f"""
    func.func @f(%q: {Q}, %k: {KV}, %v: {KV}, %do: {Q}) -> ({Q}, {KV}, {KV}) {{
      %dq, %dk, %dv = stg.vjp(%q, %k, %v) wrt [0, 1, 2] cotangents(%do : {Q}) {{
      ^bb0(%a : {Q}, %bk : {KV}, %c : {KV}):
        %o = stg.attention %a, %bk, %c heads N kv_heads KV causal : {Q}, {KV}, {KV} -> {Q}
        stg.yield %o : {Q}
      }} : ({Q}, {KV}, {KV}) -> ({Q}, {KV}, {KV})
      func.return %dq, %dk, %dv : {Q}, {KV}, {KV}
    }}"""
    dq, dk, dv = run(ir, q, k, v, do, B=b, S=s, N=n, KV=kv, D=d)
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]
    out = F.scaled_dot_product_attention(*(x.transpose(1, 2) for x in leaves), is_causal=True, enable_gqa=True)
    expected = torch.autograd.grad(out.transpose(1, 2), leaves, do)
    for got, want in zip((dq, dk, dv), expected):
        close(got, want)


def test_vjp_of_rms_norm_matches_autograd_and_unused_primals_get_zeros():
    x, w, unused, dy = rand(2, 3, 5, seed=1), rand(5, seed=2), rand(5, seed=3), rand(2, 3, 5, seed=4)
    X, W = t("2, 3, 5"), t("5")
    ir = f"""
    func.func @f(%x: {X}, %w: {W}, %u: {W}, %dy: {X}) -> ({X}, {W}, {W}) {{
      %dx, %dw, %du = stg.vjp(%x, %w, %u) wrt [0, 1, 2] cotangents(%dy : {X}) {{
      ^bb0(%a : {X}, %b : {W}, %c : {W}):
        %y = stg.norm rms %a, %b {{eps = 1.0e-6 : f64}} : {X}, {W} -> {X}
        stg.yield %y : {X}
      }} : ({X}, {W}, {W}) -> ({X}, {W}, {W})
      func.return %dx, %dw, %du : {X}, {W}, {W}
    }}"""
    dx, dw, du = run(ir, x, w, unused, dy)
    xl, wl = x.clone().requires_grad_(), w.clone().requires_grad_()
    y = xl * torch.rsqrt(xl.pow(2).mean(-1, keepdim=True) + 1e-6) * wl
    ex, ew = torch.autograd.grad(y, (xl, wl), dy)
    close(dx, ex)
    close(dw, ew)
    close(du, torch.zeros(5, dtype=torch.float64))


def test_vjp_of_a_weight_used_by_split_tokens_is_a_partial_sum():
    """dp-split tokens, duplicated weight: each rank's gradient is its tokens' share."""
    x, w, dy = rand(4, 3, seed=1), rand(3, 2, seed=2), rand(4, 2, seed=3)
    X, W, Y = t("4/dp, 3"), t("3, 2"), t("4/dp, 2")
    ir = f"""
    stg.mesh @m [dp = 2]
    func.func @f(%x: {X}, %w: {W}, %dy: {Y}) -> {t("3, 2", partial="dp")} {{
      %dw = stg.vjp(%x, %w) wrt [1] cotangents(%dy : {Y}) {{
      ^bb0(%a : {X}, %b : {W}):
        %y = stg.einsum "bh,hf->bf" %a, %b : {X}, {W} -> {Y}
        %z = stg.elementwise tanh %y : {Y} -> {Y}
        stg.yield %z : {Y}
      }} : ({X}, {W}) -> ({t("3, 2", partial="dp")})
      func.return %dw : {t("3, 2", partial="dp")}
    }}"""
    (dw,) = run(ir, x, w, dy)
    wl = w.clone().requires_grad_()
    (expected,) = torch.autograd.grad(torch.tanh(x @ wl), wl, dy)
    close(dw, expected)


# -- optimizers --------------------------------------------------------------------------

P = t("3, 4")


def _adam_ir(weight_decay: float, decoupled: bool) -> str:
    return f"""
    func.func @step() {{
      %w = stg.param "w" : {P}
      %g = stg.optimizer_state "grad" of "w" : {P}
      %m = stg.optimizer_state "exp_avg" of "w" : {P}
      %v = stg.optimizer_state "exp_avg_sq" of "w" : {P}
      %t = stg.optimizer_state "step" of "w" : {t("")}
      %w2, %m2, %v2, %t2 = stg.adam %w, %g, %m, %v, %t lr 1.0e-02 betas 0.9, 0.95 eps 1.0e-08 weight_decay {weight_decay} {"decoupled" if decoupled else ""} : {P}, {P}, {P}, {P}, {t("")} -> {P}, {P}, {P}, {t("")}
      stg.assign %w2 to "w" : {P}
      stg.assign %m2 to "exp_avg" of "w" : {P}
      stg.assign %v2 to "exp_avg_sq" of "w" : {P}
      stg.assign %t2 to "step" of "w" : {t("")}
      func.return
    }}"""


def _three_steps(ir: str, optimizer_class, **hyper):
    w = rand(3, 4, seed=1)
    store = StateStore(params={"w": w.clone()})
    reference = torch.nn.Parameter(w.clone())
    optimizer = optimizer_class([reference], **hyper)
    interp = interpreter(ir)
    for step in range(3):
        grad = rand(3, 4, seed=10 + step)
        store.states[("grad", "w")] = grad.clone()
        interp.run("step", store)
        reference.grad = grad.clone()
        optimizer.step()
        close(store.params["w"], reference.detach())
    return store, optimizer, reference


@pytest.mark.parametrize(
    "decoupled, optimizer_class", [(True, torch.optim.AdamW), (False, torch.optim.Adam)]
)
def test_adam_matches_torch_optim_over_three_steps(decoupled, optimizer_class):
    store, optimizer, reference = _three_steps(
        _adam_ir(0.1, decoupled), optimizer_class, lr=1e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1
    )
    state = optimizer.state[reference]
    close(store.states[("exp_avg", "w")], state["exp_avg"])
    close(store.states[("exp_avg_sq", "w")], state["exp_avg_sq"])
    assert store.states[("step", "w")].item() == 3


def test_sgd_with_momentum_matches_torch_optim_over_three_steps():
    ir = f"""
    func.func @step() {{
      %w = stg.param "w" : {P}
      %g = stg.optimizer_state "grad" of "w" : {P}
      %b = stg.optimizer_state "momentum" of "w" : {P}
      %w2, %b2 = stg.sgd %w, %g momentum %b by 0.9 : {P} lr 0.05 weight_decay 0.01 : {P}, {P} -> {P}, {P}
      stg.assign %w2 to "w" : {P}
      stg.assign %b2 to "momentum" of "w" : {P}
      func.return
    }}"""
    store, optimizer, reference = _three_steps(ir, torch.optim.SGD, lr=0.05, momentum=0.9, weight_decay=0.01)
    close(store.states[("momentum", "w")], optimizer.state[reference]["momentum_buffer"])


def test_plain_sgd_matches_torch_optim():
    ir = f"""
    func.func @step() {{
      %w = stg.param "w" : {P}
      %g = stg.optimizer_state "grad" of "w" : {P}
      %w2 = stg.sgd %w, %g lr 0.05 weight_decay 0.0 : {P}, {P} -> {P}
      stg.assign %w2 to "w" : {P}
      func.return
    }}"""
    _three_steps(ir, torch.optim.SGD, lr=0.05)
