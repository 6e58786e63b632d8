"""`stagec dse`'s parts: the Pareto front, the strategies' command lines, and the claim
that a pipeline's first and last stage bound its memory (what dse analyses)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from stagec.runtime.cost.hardware_description import load_hardware
from stagec.runtime.sim.dse import Point, Strategy, pareto_front
from stagec.runtime.sim.memory import class_timelines
from stagec.tools.stagec_cli import _parser, main
from stagec.tools.stagec_dse import evaluate
from stagec.tools.step import micro_batches_for, step_bindings, step_module


def point(label: str, seconds: float, gib: float, error: str | None = None) -> Point:
    return Point(Strategy(tp=int(label)), seconds * 1e9, None, int(gib * 2**30), error)


def test_pareto_front_keeps_what_nothing_beats_on_both_axes():
    # (time s, memory GiB): a (1, 50) and c (3, 20) and e (5, 10) are each best at their
    # memory; b (2, 60) is beaten by a on both, d (4, 25) by c, f errs.
    points = [point("1", 1, 50), point("2", 2, 60), point("3", 3, 20), point("4", 4, 25), point("5", 5, 10),
              point("6", 0.5, 5, error="refused")]
    front = pareto_front(points)
    assert [p.strategy.tp for p in front] == [5, 3, 1]


def test_a_strategy_is_the_command_line_that_reruns_it():
    s = Strategy(tp=4, pp=2, cp=2, data=8, fsdp=False, zero=1, recompute=True, micro_batch=2)
    assert s.label == "tp4+sp pp2 cp2 dp8 zero1 mbs2 recompute"
    args = _parser().parse_args(["simulate", "--model", "llama3-8b", *s.argv()])
    assert (args.tp, args.pp, args.cp, args.dp, args.fsdp, args.zero, args.recompute, args.micro_batch, args.sp) == \
        (4, 2, 2, 8, 1, 1, True, 2, True)


@pytest.mark.parametrize("argv", [
    ["--model", "llama3.2-1b", "--pp", "4", "--dp", "2", "--micro-batches", "8"],
    ["--model", "llama3.2-1b", "--pp", "4", "--tp", "2", "--sp", "--micro-batches", "6", "--recompute"],
    ["--model", "llama3.2-1b", "--pp", "4", "--micro-batches", "4", "--schedule", "gpipe"],
    ["--model", "mixtral-8x7b", "--pp", "4", "--ep", "2", "--micro-batches", "5"],
])
def test_the_first_and_last_stage_bound_every_stage(argv):
    args = _parser().parse_args(["simulate", *argv, "--seq", "512"])
    micro_batches = micro_batches_for(args)
    module = step_module(args, micro_batches)
    bindings = step_bindings(args, micro_batches)
    hardware = load_hardware("h100-sxm")
    every = class_timelines(module, bindings, hardware)
    outer = class_timelines(module, bindings, hardware, outer_stages=True)
    assert len(every) == 4 and len(outer) == 2
    assert max(c[1] for c in every) == max(c[1] for c in outer)  # live
    assert max(c[2] for c in every) == max(c[2] for c in outer)  # reserved


# tests/lit/tools/stagec/dse.mlir's tiny Llama: 4 query heads, 2 key/value heads, 2 layers
TINY = {"model_type": "llama", "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "intermediate_size": 24, "vocab_size": 32, "rope_theta": 10000.0,
        "rms_norm_eps": 1e-5}


@pytest.mark.parametrize("strategy", [
    Strategy(tp=2, pp=2, micro_batch=1),
    Strategy(pp=2, data=2, zero=1, recompute=True),
    Strategy(tp=2, data=2, fsdp=True, micro_batch=2),
], ids=lambda s: s.label)
def test_a_point_is_what_stagec_simulate_reports(strategy, tmp_path, capsys):
    """dse pauses the collector and analyses a pipeline's outer stages only: neither may
    change a number, so each point equals `stagec simulate` on its command line."""
    config = tmp_path / "tiny.json"
    config.write_text(json.dumps(TINY))
    base = ["--model", str(config), "--batch", "4", "--seq", "8", "--dtype", "bf16", "--hardware", "h100-sxm",
            "--quiet"]
    point = evaluate(base, "h100-sxm", 80 * 2**30, strategy)
    assert point.error is None
    assert main(["simulate", *base, *strategy.argv(), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert point.iteration_ns == report["iteration_ns"]
    assert point.live_bytes == report["peak_memory_bytes"]
    assert point.reserved_bytes == report["reserved_memory_bytes"]


def _where_evaluated(strategy: Strategy) -> Point:
    """A stand-in for evaluate: the strategy's tp as its time, and the process and
    collector state it ran under as its error text."""
    import gc
    import os

    return Point(strategy, iteration_ns=float(strategy.tp), error=f"{os.getpid()} {gc.isenabled()}")


def test_explore_runs_each_strategy_in_a_fresh_process_without_the_collector():
    """explore forks a process per strategy with the collector off (runtime/sim/dse.py),
    and returns the points in candidate order."""
    import os

    from stagec.runtime.sim.dse import explore

    candidates = [Strategy(tp=t) for t in (8, 1, 4, 2, 16)]
    done = []
    points = explore(_where_evaluated, candidates, jobs=2, progress=lambda d, t: done.append((d, t)))
    assert [p.iteration_ns for p in points] == [8.0, 1.0, 4.0, 2.0, 16.0]
    pids = [p.error.split()[0] for p in points]
    assert len(set(pids)) == 5 and str(os.getpid()) not in pids
    assert {p.error.split()[1] for p in points} == {"False"}
    assert done == [(i, 5) for i in range(1, 6)]
    sequential = explore(_where_evaluated, candidates, jobs=1)
    assert {p.error for p in sequential} == {f"{os.getpid()} True"}


def test_preload_imports_everything_a_strategy_needs():
    """Each forked worker inherits the parent's modules; one it imports itself costs it
    the import on every strategy. Evaluating a pipelined ZeRO strategy, a context-
    parallel FSDP one and an expert-parallel MoE one after preload() imports nothing."""
    script = (
        "import sys\n"
        "from stagec.tools.stagec_dse import preload, evaluate\n"
        "from stagec.runtime.sim.dse import Strategy\n"
        "preload()\n"
        "before = set(sys.modules)\n"
        "base = ['--batch', '16', '--seq', '1024', '--quiet']\n"
        "for model, s in [('llama3-8b', Strategy(tp=2, pp=2, data=2, zero=1, recompute=True)),\n"
        "                 ('llama3-8b', Strategy(tp=2, cp=2, data=2, fsdp=True)),\n"
        "                 ('mixtral-8x7b', Strategy(tp=2, ep=2, data=2, pp=2))]:\n"
        "    assert evaluate(['--model', model, *base], 'h100-sxm', 80 * 2**30, s).error is None\n"
        "print(sorted(set(sys.modules) - before))\n")
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, check=False)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.strip() == "[]"


def _killed_at_tp_two(strategy: Strategy) -> Point:
    import os
    import signal

    if strategy.tp == 2:
        os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's OOM killer would
    return Point(strategy, iteration_ns=float(strategy.tp))


def test_a_strategy_whose_process_is_killed_is_an_error_point_and_the_others_go_on():
    from stagec.runtime.sim.dse import explore

    points = explore(_killed_at_tp_two, [Strategy(tp=t) for t in (1, 2, 4)], jobs=2)
    assert [p.iteration_ns for p in points] == [1.0, None, 4.0]
    assert points[1].error == "its process ended without a result (killed by SIGKILL; out of memory?)"


def _started_at(strategy: Strategy) -> Point:
    import time

    started = time.monotonic_ns()
    time.sleep(0.5)  # so that the next ones can only start once one of these ended
    return Point(strategy, iteration_ns=started)


def test_explore_starts_the_most_expensive_strategies_first():
    """Longest-processing-time first: micro-batches per replica (pp / (data x ep x
    micro_batch) for one batch), then stages; the points still come back in candidate
    order, and a killed one is named by its own strategy."""
    from stagec.runtime.sim.dse import explore

    candidates = [Strategy(pp=1, data=8), Strategy(pp=4, data=1), Strategy(pp=2, data=2, micro_batch=2),
                  Strategy(pp=2, data=1), Strategy(pp=8, data=2, ep=2)]
    # relative costs: 1/8, 4, 1/2, 2, 2 (the stages break the tie: pp 8 before pp 2)
    assert sorted(range(5), key=lambda i: -candidates[i].relative_cost) == [1, 4, 3, 2, 0]
    points = explore(_started_at, candidates, jobs=2)
    assert [p.strategy for p in points] == candidates
    started = sorted(range(5), key=lambda i: points[i].iteration_ns)
    # two at a time: the two most expensive, then the next two, then the cheapest
    assert set(started[:2]) == {1, 4} and set(started[2:4]) == {2, 3} and started[4] == 0
    killed = explore(_killed_at_tp_two, [Strategy(tp=1), Strategy(tp=2, pp=4), Strategy(tp=4, pp=2)], jobs=2)
    assert [p.iteration_ns for p in killed] == [1.0, None, 4.0]
    assert killed[1].strategy == Strategy(tp=2, pp=4) and "SIGKILL" in killed[1].error
