"""stg.elementwise swiglu, end to end (docs/adding-an-op.md): the interpreter against
torch, its VJP against torch.autograd (float64), stg-shard's tensor parallelism on the
ffn dim, and its cost derived by hand."""

from __future__ import annotations

import copy

import torch
from xdsl.parser import Parser

from stagec.dialects import make_context
from stagec.dialects.stg import ElementwiseKind, ElementwiseOp
from stagec.dialects.stg.cost import flop_category
from stagec.dialects.symbolic import Expr
from stagec.passes.stg_autodiff import StgAutodiff
from stagec.runtime.interpreter import Interpreter, StateStore
from stagec.tools.pipeline_spec import build_pipeline

B, H, F = 4, 6, 8
SIZES = {"B": B, "H": H, "F": F}

# Llama's MLP on x [B, H]: down(silu(gate(x)) * up(x)), summed to a scalar loss.
FORWARD = """
func.func @forward() -> !stg.tensor<[], f64> {
  %x = stg.input "x" : !stg.tensor<[B, H], f64>
  %wg = stg.param "mlp.gate_proj.weight" : !stg.tensor<[F, H], f64>
  %wu = stg.param "mlp.up_proj.weight" : !stg.tensor<[F, H], f64>
  %wd = stg.param "mlp.down_proj.weight" : !stg.tensor<[H, F], f64>
  %g = stg.einsum "bh,fh->bf" %x, %wg : !stg.tensor<[B, H], f64>, !stg.tensor<[F, H], f64> -> !stg.tensor<[B, F], f64>
  %u = stg.einsum "bh,fh->bf" %x, %wu : !stg.tensor<[B, H], f64>, !stg.tensor<[F, H], f64> -> !stg.tensor<[B, F], f64>
  %a = stg.elementwise swiglu %g, %u : !stg.tensor<[B, F], f64>, !stg.tensor<[B, F], f64> -> !stg.tensor<[B, F], f64>
  %y = stg.einsum "bf,hf->bh" %a, %wd : !stg.tensor<[B, F], f64>, !stg.tensor<[H, F], f64> -> !stg.tensor<[B, H], f64>
  %y2 = stg.elementwise square %y : !stg.tensor<[B, H], f64> -> !stg.tensor<[B, H], f64>
  %loss = stg.reduce sum %y2 dims [0, 1] : !stg.tensor<[B, H], f64> -> !stg.tensor<[], f64>
  func.return %loss : !stg.tensor<[], f64>
}
"""


def parse(text: str):
    return Parser(make_context(), text).parse_module()


def state(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    params = {
        "mlp.gate_proj.weight": torch.randn(F, H, generator=g, dtype=torch.float64),
        "mlp.up_proj.weight": torch.randn(F, H, generator=g, dtype=torch.float64),
        "mlp.down_proj.weight": torch.randn(H, F, generator=g, dtype=torch.float64),
    }
    return params, {"x": torch.randn(B, H, generator=g, dtype=torch.float64)}


def train_step():
    module = parse(FORWARD)
    StgAutodiff(optimizer="none").apply(make_context(), module)
    module.verify()
    return module


def run(module, params, inputs, bindings=SIZES):
    store = StateStore(params=copy.deepcopy(params), inputs=dict(inputs))
    (loss,) = Interpreter(module, bindings).run("train_step", store)
    return loss, store


def swiglus(module) -> list[ElementwiseOp]:
    return [op for op in module.walk() if isinstance(op, ElementwiseOp) and op.kind.data == ElementwiseKind.SWIGLU]


def test_interpreter_matches_torch():
    text = """
    func.func @f(%g: !stg.tensor<[B, F], f64>, %u: !stg.tensor<[B, F], f64>) -> !stg.tensor<[B, F], f64> {
      %a = stg.elementwise swiglu %g, %u : !stg.tensor<[B, F], f64>, !stg.tensor<[B, F], f64> -> !stg.tensor<[B, F], f64>
      func.return %a : !stg.tensor<[B, F], f64>
    }
    """
    g = torch.randn(B, F, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    u = torch.randn(B, F, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    (a,) = Interpreter(parse(text), SIZES).run("f", None, [g, u])
    torch.testing.assert_close(a, torch.nn.functional.silu(g) * u, rtol=1e-12, atol=0)


def test_vjp_matches_torch_autograd():
    params, inputs = state()
    module = train_step()
    loss, store = run(module, params, inputs)

    leaves = {k: v.clone().requires_grad_(True) for k, v in params.items()}
    x = inputs["x"]
    gate, up = x @ leaves["mlp.gate_proj.weight"].T, x @ leaves["mlp.up_proj.weight"].T
    y = (torch.nn.functional.silu(gate) * up) @ leaves["mlp.down_proj.weight"].T
    want = (y * y).sum()
    want.backward()
    torch.testing.assert_close(loss, want.detach(), rtol=1e-12, atol=0)
    for name, leaf in leaves.items():
        torch.testing.assert_close(store.states[("grad", name)], leaf.grad, rtol=1e-10, atol=1e-12, msg=name)


def test_tensor_parallel_on_the_ffn_dim():
    """Megatron's column-parallel gate and up feed swiglu locally: both halves and the
    result are split over tp on F, with no collective before it, and the step computes
    the same loss and gradients as the unsharded one."""
    params, inputs = state(3)
    module = train_step()
    sharded = module.clone()
    build_pipeline("builtin.module(stg-shard{tp=2},stg-match-collectives)", mlir_syntax=True).apply(make_context(), sharded)
    sharded.verify()
    (op,) = swiglus(sharded)  # the forward's (its gradient uses silu, silu_grad and mul)
    for ty in (*(v.type for v in op.inputs), op.result.type):
        assert ty.layout_str() == "[B, F/tp]", ty.layout_str()
        assert not ty.partial_axes
    want_loss, want = run(module, params, inputs)
    loss, got = run(sharded, params, inputs, {**SIZES, "tp": 2})
    torch.testing.assert_close(loss, want_loss, rtol=1e-12, atol=0)
    for key, value in want.states.items():
        torch.testing.assert_close(got.states[key], value, rtol=1e-10, atol=1e-12, msg=str(key))


def test_cost_derived_by_hand():
    """On [B/dp, S, F/tp] bf16 with B=8, S=16, F=64, dp=2, tp=4 a rank holds
    4 * 16 * 16 = 1024 elements of each tensor: silu (4 FLOPs) and the product (1) are
    5 * 1024 = 5120 FLOPs; it reads gate and up and writes the result, 3 * 1024 * 2 B
    = 6144 bytes."""
    text = """
    stg.mesh @m [dp, tp]
    func.func @f(%g: !stg.tensor<[B/dp, S, F/tp], bf16>, %u: !stg.tensor<[B/dp, S, F/tp], bf16>) {
      %a = stg.elementwise swiglu %g, %u : !stg.tensor<[B/dp, S, F/tp], bf16>, !stg.tensor<[B/dp, S, F/tp], bf16> -> !stg.tensor<[B/dp, S, F/tp], bf16>
      func.return
    }
    """
    (op,) = swiglus(parse(text))
    env = {"B": 8, "S": 16, "F": 64, "dp": 2, "tp": 4}
    assert op.flops().evaluate(env) == 5120
    assert op.bytes_moved().evaluate(env) == 6144
    assert op.flops() == 5 * Expr.sym("B") * Expr.sym("S") * Expr.sym("F") / (Expr.sym("dp") * Expr.sym("tp"))
    assert flop_category(op) == "elementwise"
