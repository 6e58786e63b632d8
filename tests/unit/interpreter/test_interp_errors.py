"""What the interpreter says when a program cannot run: each message is pinned."""

from __future__ import annotations

import re

import pytest
import torch

from stagec.runtime.interpreter import Interpreter, InterpreterError, StateStore

from tests.unit.interpreter.interp_testing import interpreter, parse, rand, run, t


def _raises(message: str):
    return pytest.raises(InterpreterError, match="^" + re.escape(message) + "$")


def test_missing_param_says_how_to_provide_it():
    ir = f"""
    func.func @f() -> {t("H")} {{
      %z = stg.fill 0.0 : {t("H")}
      %y = stg.repeat L carry(%h = %z : {t("H")}) {{
        %w = stg.param "model.layers.mlp.up_proj.weight" : {t("H")}
        stg.yield %w : {t("H")}
      }}
      func.return %y : {t("H")}
    }}"""
    with _raises(
        "'stg.param' (%w) in @f [layer 0 of 4]: param \"model.layers.mlp.up_proj.weight\" is not in the "
        "state store; pass it as StateStore(params={\"model.layers.mlp.up_proj.weight\": "
        "<torch.float64 tensor [4, 8]>}) (stacked per layer of the enclosing stg.repeat)"
    ):
        run(ir, L=4, H=8)


def test_missing_input():
    ir = f"""
    func.func @f() -> {t("B, S", "i64")} {{
      %ids = stg.input "input_ids" : {t("B, S", "i64")}
      func.return %ids : {t("B, S", "i64")}
    }}"""
    with _raises(
        "'stg.input' (%ids) in @f: input \"input_ids\" is not in the state store; pass it as "
        "StateStore(inputs={\"input_ids\": <torch.int64 tensor [2, 3]>})"
    ):
        run(ir, B=2, S=3)


def test_stored_tensor_of_the_wrong_shape():
    ir = f"""
    func.func @f() -> {t("H")} {{
      %w = stg.param "w" : {t("H")}
      func.return %w : {t("H")}
    }}"""
    with _raises(
        "'stg.param' (%w) in @f: param \"w\" is [5] in the state store, but the program reads it as [4] "
        "([H] under H=4)"
    ):
        run(ir, store=StateStore(params={"w": rand(5)}), H=4)


def test_unbound_symbol_says_how_to_bind_it():
    ir = f"""
    func.func @f() -> {t("B, S")} {{
      %z = stg.fill 0.0 : {t("B, S")}
      func.return %z : {t("B, S")}
    }}"""
    with _raises(
        "'stg.fill' (%z) in @f: the per-rank size of [B, S]: S has no value: symbol S is unbound; "
        "give it in Interpreter(module, bindings={'S': ...}) or the module's stg.config"
    ):
        run(ir, B=2)


def test_stg_config_binds_symbols_and_bindings_override_it():
    ir = f"""
    builtin.module attributes {{stg.config = {{H = 3 : i64, B = 7 : i64}}}} {{
      func.func @f() -> {t("B, H")} {{
        %z = stg.fill 1.0 : {t("B, H")}
        func.return %z : {t("B, H")}
      }}
    }}"""
    (z,) = run(ir, B=2)
    assert z.shape == (2, 3)


def test_result_shape_mismatch_names_the_op_and_both_shapes():
    """A wrong result type (as a buggy pass might write) fails at the op that shows it."""
    ir = f"""
    stg.mesh @m [tp = 2]
    func.func @f(%x: {t("B, H")}, %w: {t("H, F/tp")}) -> {t("B, F/tp")} {{
      %y = stg.einsum "bh,hf->bf" %x, %w : {t("B, H")}, {t("H, F/tp")} -> {t("B, H/tp")} loc("mlp.py":12:3)
      func.return %y : {t("B, H/tp")}
    }}"""
    interp = Interpreter(parse(ir), {"B": 2, "H": 4, "F": 6}, verify=False)
    with _raises(
        "'stg.einsum' (%y) at loc(\"mlp.py\":12:3) in @f: result #0 on rank 0 is [2, 3] torch.float64, but "
        "its type [B, H/tp] f64 means [2, 2] torch.float64 per rank under B=2, H=4, tp=2"
    ):
        interp.run("f", None, [rand(2, 4), rand(4, 6)])


def test_opaque_op_cannot_be_executed():
    ir = f"""
    func.func @f(%x: {t("4")}) -> {t("4")} {{
      %y = stg.opaque "fused_kernel"(%x) flops <8> bytes <64> : ({t("4")}) -> ({t("4")})
      func.return %y : {t("4")}
    }}"""
    with _raises(
        "'stg.opaque' (%y) in @f: stg.opaque \"fused_kernel\" cannot be executed: it carries only FLOP and "
        "byte counts, not a computation; write it as stg ops to interpret the program"
    ):
        run(ir, rand(4))


def test_use_after_release():
    ir = f"""
    func.func @f(%x: {t("4")}) -> {t("4")} {{
      %h = stg.offload %x : {t("4")} -> !stg.host<[4], f64>
      stg.release %x : {t("4")}
      %d = stg.reload %h : !stg.host<[4], f64> -> {t("4")}
      %y = stg.elementwise neg %x : {t("4")} -> {t("4")}
      func.return %y : {t("4")}
    }}"""
    with _raises("'stg.elementwise' (%y) in @f: %x is used after 'stg.release' in @f released it"):
        run(ir, rand(4))
    ok = ir.replace("stg.elementwise neg %x", "stg.elementwise neg %d")
    torch.testing.assert_close(run(ok, rand(4, seed=3))[0], -rand(4, seed=3))


def test_symbolic_mesh_axis_needs_a_binding():
    ir = f"""
    stg.mesh @m [dp, tp = 2]
    func.func @f() -> {t("4/dp")} {{
      %z = stg.fill 0.0 : {t("4/dp")}
      func.return %z : {t("4/dp")}
    }}"""
    with _raises("mesh @m axis 'dp' has no size: give it in Interpreter(module, bindings={'dp': ...})"):
        interpreter(ir)
    assert interpreter(ir, dp=2).mesh.num_ranks == 4


def test_unknown_function():
    with _raises("the module has no function @g (it has @f)"):
        interpreter("func.func @f() {\n func.return\n }").run("g")


def test_a_collective_inside_a_vjp_body_is_refused():
    X = t("2", partial="tp")
    Y = t("2")
    ir = f"""
    stg.mesh @m [tp = 2]
    func.func @f(%x: {X}, %dy: {Y}) -> {X} {{
      %dx = stg.vjp(%x) wrt [0] cotangents(%dy : {Y}) {{
      ^bb0(%a : {X}):
        %r = stg.all_reduce %a on @m [tp] : {X} -> {Y}
        stg.yield %r : {Y}
      }} : ({X}) -> ({X})
      func.return %dx : {X}
    }}"""
    with _raises(
        "'stg.vjp' (%dx) in @f: a stg.vjp body runs rank-locally, but it holds 'stg.all_reduce'; "
        "move communication out of the differentiated body"
    ):
        run(ir, rand(2), rand(2))
