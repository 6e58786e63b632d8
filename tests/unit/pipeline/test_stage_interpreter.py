"""What the reference interpreter gives pipelined programs: func.call, a repeat over a
slice of a layer stack, stg.all_reduce_stages, a memory per program (the store takes
every program's writes at the end, and copies of a state on two stages must agree),
and an error for a message nobody receives."""

from __future__ import annotations

import pytest
import torch

from stagec.runtime.interpreter import Interpreter, InterpreterError, StateStore
from tests.unit.interpreter.interp_testing import close, interpreter, parse, rand, t


def test_call_runs_the_callee_in_its_own_scope_each_time():
    ir = f"""
    func.func @double(%x: {t("3")}) -> {t("3")} {{
      %y = stg.elementwise add %x, %x : {t("3")}, {t("3")} -> {t("3")}
      func.return %y : {t("3")}
    }}
    func.func @f(%x: {t("3")}) -> ({t("3")}, {t("3")}) {{
      %a = func.call @double(%x) : ({t("3")}) -> {t("3")}
      %b = func.call @double(%a) : ({t("3")}) -> {t("3")}
      func.return %a, %b : {t("3")}, {t("3")}
    }}"""
    x = rand(3)
    a, b = interpreter(ir).run("f", None, [x])
    close(a, 2 * x)
    close(b, 4 * x)


def test_a_callee_in_a_repeat_does_not_index_state_by_the_callers_layer():
    ir = f"""
    func.func @bias() -> {t("3")} {{
      %b = stg.param "bias" : {t("3")}
      func.return %b : {t("3")}
    }}
    func.func @f(%x: {t("3")}) -> {t("3")} {{
      %y = stg.repeat 2 carry(%h = %x : {t("3")}) {{
        %w = stg.param "layers.w" : {t("3")}
        %b = func.call @bias() : () -> {t("3")}
        %s = stg.elementwise add %h, %w : {t("3")}, {t("3")} -> {t("3")}
        %r = stg.elementwise add %s, %b : {t("3")}, {t("3")} -> {t("3")}
        stg.yield %r : {t("3")}
      }}
      func.return %y : {t("3")}
    }}"""
    x, w, b = rand(3), rand(2, 3, seed=1), rand(3, seed=2)
    (y,) = interpreter(ir).run("f", StateStore(params={"layers.w": w, "bias": b}), [x])
    close(y, x + w[0] + w[1] + 2 * b)


def test_call_checks_its_arguments_against_the_callee():
    ir = f"""
    func.func @g(%x: {t("4")}) {{
      func.return
    }}
    func.func @f(%x: {t("3")}) {{
      func.call @g(%x) : ({t("3")}) -> ()
      func.return
    }}"""
    # (the verifier rejects this too; the interpreter checks what it is given)
    with pytest.raises(InterpreterError, match=r"argument #0 of @g is \[3\] torch.float64, but its type \[4\]"):
        Interpreter(parse(ir), verify=False).run("f", None, [rand(3)])


SLICE = f"""
func.func @f(%x: {t("3")}) -> ({t("3")}, {t("2, 3")}) {{
  %y, %seen = stg.repeat 2 offset 2 of 4 carry(%h = %x : {t("3")}) {{
    %w = stg.param "layers.w" : {t("3")}
    %g = stg.optimizer_state "grad" of "layers.w" : {t("3")}
    %r = stg.elementwise add %h, %w : {t("3")}, {t("3")} -> {t("3")}
    %g2 = stg.elementwise add %g, %r : {t("3")}, {t("3")} -> {t("3")}
    stg.assign %g2 to "grad" of "layers.w" : {t("3")}
    stg.yield %r, %w : {t("3")}, {t("3")}
  }}
  func.return %y, %seen : {t("3")}, {t("2, 3")}
}}"""


def test_a_slice_of_a_stack_reads_and_writes_its_own_layers():
    """`stg.repeat 2 offset 2 of 4`: iterations 0 and 1 are layers 2 and 3 of the
    [4, ...] stacked state; the per-iteration output stays [2, ...]; a state missing
    from the store is created whole ([4, ...]) with only these layers written."""
    x, w = rand(3), rand(4, 3, seed=1)
    store = StateStore(params={"layers.w": w})
    y, seen = interpreter(SLICE).run("f", store, [x])
    close(seen, w[2:])
    close(y, x + w[2] + w[3])
    grad = store.states[("grad", "layers.w")]
    assert grad.shape == (4, 3)
    close(grad[:2], torch.zeros(2, 3, dtype=torch.float64))
    close(grad[2], x + w[2])
    close(grad[3], x + w[2] + w[3])


def test_a_slice_needs_the_whole_stack_in_the_store():
    with pytest.raises(InterpreterError, match=r'param "layers.w" is \[2, 3\] in the state store, but the program reads it as \[4, 3\]'):
        interpreter(SLICE).run("f", StateStore(params={"layers.w": rand(2, 3)}), [rand(3)])


def test_a_reversed_slice_walks_its_layers_down():
    ir = f"""
    func.func @f(%x: {t("3")}) -> {t("2, 3")} {{
      %y, %order = stg.repeat 2 offset 1 of 3 carry(%h = %x : {t("3")}) reverse {{
        %w = stg.param "layers.w" : {t("3")}
        %r = stg.elementwise mul %h, %w : {t("3")}, {t("3")} -> {t("3")}
        stg.yield %r, %h : {t("3")}, {t("3")}
      }}
      func.return %order : {t("2, 3")}
    }}"""
    x, w = rand(3), rand(3, 3, seed=1)
    (order,) = interpreter(ir).run("f", StateStore(params={"layers.w": w}), [x])
    close(order[1], x)  # iteration 0 is layer 2, stacked at index 1
    close(order[0], x * w[2])  # then layer 1


STAGES = f"""
stg.mesh @m [pp = 3, tp = 2]
func.func @stage0() -> {t("4/tp")} {{
  %g = stg.param "a" : {t("4/tp")}
  %s = stg.all_reduce_stages %g on @m [pp] among [0, 2] : {t("4/tp")} -> {t("4/tp")}
  func.return %s : {t("4/tp")}
}}
func.func @stage1() -> {t("4/tp")} {{
  %g = stg.param "b" : {t("4/tp")}
  func.return %g : {t("4/tp")}
}}
func.func @stage2() -> {t("4/tp")} {{
  %g = stg.param "c" : {t("4/tp")}
  %s = stg.all_reduce_stages %g on @m [pp] among [0, 2] : {t("4/tp")} -> {t("4/tp")}
  func.return %s : {t("4/tp")}
}}"""


def test_all_reduce_stages_sums_among_the_listed_stages_only():
    a, b, c = rand(4), rand(4, seed=1), rand(4, seed=2)
    results = interpreter(STAGES).run_programs(
        {f"stage{k}": {"pp": k} for k in range(3)}, StateStore(params={"a": a, "b": b, "c": c})
    )
    close(results["stage0"][0], a + c)  # each tp rank with its own shard
    close(results["stage2"][0], a + c)
    close(results["stage1"][0], b)


def test_programs_write_their_own_memory_and_the_store_merges_it():
    """Stage programs write different layers of one stacked state: both land. Copies
    of one state written by two programs must be equal."""
    ir = f"""
    stg.mesh @m [pp = 2]
    func.func @stage0(%v: {t("3")}) {{
      stg.repeat 1 offset 0 of 2 {{
        stg.assign %v to "layers.w" : {t("3")}
        stg.yield
      }}
      stg.assign %v to "shared" : {t("3")}
      func.return
    }}
    func.func @stage1(%v: {t("3")}) {{
      %twice = stg.elementwise add %v, %v : {t("3")}, {t("3")} -> {t("3")}
      stg.repeat 1 offset 1 of 2 {{
        stg.assign %twice to "layers.w" : {t("3")}
        stg.yield
      }}
      stg.assign %v to "shared" : {t("3")}
      func.return
    }}"""
    x, y = rand(3), rand(3, seed=1)
    store = StateStore()
    stages = {"stage0": {"pp": 0}, "stage1": {"pp": 1}}
    interpreter(ir).run_programs(stages, store, {"stage0": [x], "stage1": [x]})
    close(store.params["shared"], x)
    close(store.params["layers.w"], torch.stack([x, 2 * x]))
    with pytest.raises(InterpreterError, match='@stage0 and @stage1 both write param "shared" with different values'):
        interpreter(ir).run_programs(stages, StateStore(), {"stage0": [x], "stage1": [y]})


def test_a_message_nobody_receives_is_an_error():
    ir = f"""
    stg.mesh @m [pp = 2]
    func.func @stage0(%x: {t("3")}) {{
      stg.send %x to @m[pp = 1] tag 7 : {t("3")}
      func.return
    }}
    func.func @stage1() {{
      func.return
    }}"""
    with pytest.raises(InterpreterError, match="messages nobody received: 1 from rank 0 to rank 1 with tag 7"):
        interpreter(ir).run_programs({"stage0": {"pp": 0}, "stage1": {"pp": 1}}, args={"stage0": [rand(3)]})
