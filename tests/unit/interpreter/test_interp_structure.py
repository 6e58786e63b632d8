"""Structure, state and memory: stg.repeat over stacked parameters (forward and reverse,
nested), stg.microbatch, stg.phase, stg.assign into plain and stacked states, and
offload/reload with async tokens."""

from __future__ import annotations

import torch

from stagec.runtime.interpreter import StateStore

from tests.unit.interpreter.interp_testing import close, interpreter, rand, run, t

LAYER = f"""
      %w = stg.param "layers.w" : {t("H, H")}
      %z = stg.einsum "bh,hk->bk" %h, %w : {t("B, H")}, {t("H, H")} -> {t("B, H")}
      %a = stg.elementwise tanh %z : {t("B, H")} -> {t("B, H")}
      stg.yield %a, %z : {t("B, H")}, {t("B, H")}
"""


def _repeat_ir(reverse: bool) -> str:
    return f"""
    func.func @f(%x: {t("B, H")}) -> ({t("B, H")}, {t("L, B, H")}) {{
      %y, %zs = stg.repeat L carry(%h = %x : {t("B, H")}) {"reverse" if reverse else ""} {{{LAYER}    }}
      func.return %y, %zs : {t("B, H")}, {t("L, B, H")}
    }}"""


def _reference_layers(x, w, order):
    h, zs = x, [None] * w.shape[0]
    for layer in order:
        zs[layer] = h @ w[layer]
        h = torch.tanh(zs[layer])
    return h, torch.stack(zs)


def test_repeat_reads_stacked_params_by_layer_and_stacks_outputs():
    x, w = rand(2, 3, seed=1), rand(4, 3, 3, seed=2)
    store = StateStore(params={"layers.w": w})
    y, zs = run(_repeat_ir(False), x, store=store, B=2, H=3, L=4)
    ey, ezs = _reference_layers(x, w, range(4))
    close(y, ey)
    close(zs, ezs)


def test_reverse_repeat_walks_layers_backwards_and_stacks_at_the_layer_index():
    x, w = rand(2, 3, seed=1), rand(4, 3, 3, seed=2)
    store = StateStore(params={"layers.w": w})
    y, zs = run(_repeat_ir(True), x, store=store, B=2, H=3, L=4)
    ey, ezs = _reference_layers(x, w, reversed(range(4)))
    close(y, ey)
    close(zs, ezs)


def test_repeat_scans_per_layer_inputs():
    x, xs = rand(2, 3, seed=1), rand(3, 2, 3, seed=2)
    ir = f"""
    func.func @f(%x: {t("B, H")}, %xs: {t("3, B, H")}) -> ({t("B, H")}, {t("3, B, H")}) {{
      %y, %seen = stg.repeat 3 carry(%h = %x : {t("B, H")}) scan(%s = %xs : {t("3, B, H")}) reverse {{
        %n = stg.elementwise mul %h, %s : {t("B, H")}, {t("B, H")} -> {t("B, H")}
        stg.yield %n, %h : {t("B, H")}, {t("B, H")}
      }}
      func.return %y, %seen : {t("B, H")}, {t("3, B, H")}
    }}"""
    y, seen = run(ir, x, xs, B=2, H=3)
    close(y, x * xs[2] * xs[1] * xs[0])
    close(seen, torch.stack([x * xs[2] * xs[1], x * xs[2], x]))


def test_nested_repeats_stack_outer_first():
    x, w = rand(2, 3, seed=1), rand(2, 3, 3, 3, seed=2)
    ir = f"""
    func.func @f(%x: {t("B, H")}) -> {t("B, H")} {{
      %y = stg.repeat 2 carry(%o = %x : {t("B, H")}) {{
        %i = stg.repeat 3 carry(%h = %o : {t("B, H")}) {{
          %w = stg.param "w" : {t("H, H")}
          %z = stg.einsum "bh,hk->bk" %h, %w : {t("B, H")}, {t("H, H")} -> {t("B, H")}
          stg.yield %z : {t("B, H")}
        }}
        stg.yield %i : {t("B, H")}
      }}
      func.return %y : {t("B, H")}
    }}"""
    (y,) = run(ir, x, store=StateStore(params={"w": w}), B=2, H=3)
    expected = x
    for outer in range(2):
        for inner in range(3):
            expected = expected @ w[outer, inner]
    close(y, expected)


def test_microbatch_scans_inputs_and_does_not_index_state():
    xs, w = rand(3, 2, 4, seed=1), rand(4, seed=2)
    ir = f"""
    func.func @f() -> {t("")} {{
      %xs = stg.input "x" : {t("M, B, H")}
      %zero = stg.fill 0.0 : {t("")}
      %total = stg.microbatch M carry(%acc = %zero : {t("")}) scan(%x = %xs : {t("M, B, H")}) {{
        %w = stg.param "w" : {t("H")}
        %s = stg.einsum "bh,h->" %x, %w : {t("B, H")}, {t("H")} -> {t("")}
        %a = stg.elementwise add %acc, %s : {t("")}, {t("")} -> {t("")}
        stg.yield %a : {t("")}
      }}
      func.return %total : {t("")}
    }}"""
    store = StateStore(params={"w": w}, inputs={"x": xs})
    (total,) = run(ir, store=store, M=3, B=2, H=4)
    close(total, (xs @ w).sum())


def test_phases_pass_values_through_their_yields():
    x = rand(3, seed=1)
    ir = f"""
    func.func @f(%x: {t("3")}) -> {t("3")} {{
      %a, %b = stg.phase forward {{
        %e = stg.elementwise exp %x : {t("3")} -> {t("3")}
        stg.yield %e, %x : {t("3")}, {t("3")}
      }}
      %c = stg.phase backward {{
        %m = stg.elementwise mul %a, %b : {t("3")}, {t("3")} -> {t("3")}
        stg.yield %m : {t("3")}
      }}
      func.return %c : {t("3")}
    }}"""
    close(run(ir, x)[0], x.exp() * x)


def test_assign_writes_params_and_later_reads_see_it():
    w = rand(3, seed=1)
    ir = f"""
    func.func @f() -> ({t("3")}, {t("3")}) {{
      %w = stg.param "w" : {t("3")}
      %w2 = stg.elementwise scale %w by 2.0 : {t("3")} -> {t("3")}
      stg.assign %w2 to "w" : {t("3")}
      %again = stg.param "w" : {t("3")}
      func.return %w, %again : {t("3")}, {t("3")}
    }}"""
    store = StateStore(params={"w": w})
    before, after = run(ir, store=store)
    close(before, w)
    close(after, 2 * w)
    close(store.params["w"], 2 * w)


def test_assign_into_stacked_state_creates_it_and_keeps_the_callers_tensor():
    w = rand(4, 3, seed=1)
    ir = f"""
    func.func @f() {{
      stg.repeat L {{
        %w = stg.param "layers.w" : {t("H")}
        %g = stg.optimizer_state "grad" of "layers.w" : {t("H")}
        %g2 = stg.elementwise add %g, %w : {t("H")}, {t("H")} -> {t("H")}
        stg.assign %g2 to "grad" of "layers.w" : {t("H")}
        %w2 = stg.elementwise neg %w : {t("H")} -> {t("H")}
        stg.assign %w2 to "layers.w" : {t("H")}
        stg.yield
      }}
      func.return
    }}"""
    store = StateStore(params={"layers.w": w})
    interp = interpreter(ir, L=4, H=3)
    interp.run("f", store)
    close(store.states[("grad", "layers.w")], w)  # missing state started at zero
    close(store.params["layers.w"], -w)
    close(w, rand(4, 3, seed=1))  # the caller's tensor is untouched
    interp.run("f", store)  # the second step accumulates into the stored gradient
    close(store.states[("grad", "layers.w")], torch.zeros_like(w))
    close(store.params["layers.w"], w)


def test_inputs_read_inside_a_repeat_may_be_shared_by_every_layer():
    x, angles = rand(2, 3, seed=1), rand(3, seed=2)
    ir = f"""
    func.func @f(%x: {t("B, H")}) -> {t("B, H")} {{
      %y = stg.repeat 2 carry(%h = %x : {t("B, H")}) {{
        %a = stg.input "angles" : {t("H")}
        %z = stg.elementwise mul %h, %a : {t("B, H")}, {t("H")} -> {t("B, H")}
        stg.yield %z : {t("B, H")}
      }}
      func.return %y : {t("B, H")}
    }}"""
    (y,) = run(ir, x, store=StateStore(inputs={"angles": angles}), B=2, H=3)
    close(y, x * angles * angles)


def test_offload_reload_and_async_tokens_copy_values():
    x = rand(4, seed=1)
    H = "!stg.host<[4], f64>"
    ir = f"""
    func.func @f(%x: {t("4")}) -> ({t("4")}, {t("4")}) {{
      %h = stg.offload %x async : {t("4")} -> !stg.token<{H}>
      %hw = stg.wait %h : !stg.token<{H}>
      %d = stg.reload %hw async : {H} -> !stg.token<{t("4")}>
      %y = stg.wait %d : !stg.token<{t("4")}>
      %s = stg.reload %hw : {H} -> {t("4")}
      func.return %y, %s : {t("4")}, {t("4")}
    }}"""
    y, s = run(ir, x)
    close(y, x)
    close(s, x)
