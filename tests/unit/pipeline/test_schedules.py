"""The micro-batch schedules: call orders, and the activations each stage keeps alive.

1F1B (PipeDream-flush, Narayanan et al. 2021 §2.2) keeps at most pp - k micro-batches'
activations on stage k; GPipe keeps all M. The schedules pass each forward's results
straight to its backward call, so this shows in the IR as the number of forward
calls whose results are still to be used.
"""

from __future__ import annotations

import pytest
from tests.unit.pipeline.pipeline_testing import TINY, pipelined, train_step
from xdsl.dialects import func

from stagec.passes.pipeline.schedule import Step, gpipe, in_flight, one_f_one_b, schedule


def order(steps) -> str:
    return " ".join(map(str, steps))


def test_1f1b_orders_of_two_stages_and_four_micro_batches():
    assert order(one_f_one_b(0, 2, 4)) == "F0 F1 B0 F2 B1 F3 B2 B3"
    assert order(one_f_one_b(1, 2, 4)) == "F0 B0 F1 B1 F2 B2 F3 B3"


def test_1f1b_of_four_stages_warms_up_with_pp_minus_k_minus_1_forwards():
    assert order(one_f_one_b(0, 4, 8)) == "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7"
    assert order(one_f_one_b(2, 4, 8)) == "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7"
    # fewer micro-batches than stages: every forward is warm-up
    assert order(one_f_one_b(0, 4, 2)) == "F0 F1 B0 B1"


def test_gpipe_runs_every_forward_then_every_backward_last_first():
    assert order(gpipe(4)) == "F0 F1 F2 F3 B3 B2 B1 B0"
    assert schedule("gpipe", 1, 2, 4) == gpipe(4)


@pytest.mark.parametrize("pp, m", [(2, 4), (4, 8), (4, 3), (8, 8)])
def test_every_schedule_runs_each_micro_batch_once_forward_before_backward(pp, m):
    for name in ("1f1b", "gpipe"):
        for k in range(pp):
            steps = schedule(name, k, pp, m)
            assert sorted(steps) == sorted([Step("F", i) for i in range(m)] + [Step("B", i) for i in range(m)])
            assert all(steps.index(Step("F", i)) < steps.index(Step("B", i)) for i in range(m))
            assert in_flight(steps) == (min(pp - k, m) if name == "1f1b" else m)


def live_forwards(schedule_function: func.FuncOp) -> int:
    """The most forward calls of the schedule with results still to be used."""
    ops = list(schedule_function.body.block.ops)
    position = {op: i for i, op in enumerate(ops)}
    last_use = {}
    forwards = []
    for op in ops:
        if isinstance(op, func.CallOp) and op.callee.root_reference.data.endswith("_forward"):
            forwards.append(op)
            last_use[op] = max(
                (position[use.operation] for r in op.results for use in r.uses if use.operation in position),
                default=position[op],
            )
    peak = 0
    for op in ops:
        if isinstance(op, func.CallOp):
            here = position[op]
            peak = max(peak, sum(1 for f in forwards if position[f] <= here < last_use[f]))
    return peak


@pytest.mark.parametrize("name, expected", [("1f1b", lambda pp, k, m: pp - k), ("gpipe", lambda pp, k, m: m)])
def test_the_schedules_keep_the_activations_their_schedule_promises(name, expected):
    pp, m = 4, 8
    module = pipelined(train_step({**TINY["llama"], "num_hidden_layers": 4}, micro_batches=m), pp=pp, schedule=name)
    schedules = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    for k in range(pp):
        assert live_forwards(schedules[f"train_step_stage{k}"]) == expected(pp, k, m), k
