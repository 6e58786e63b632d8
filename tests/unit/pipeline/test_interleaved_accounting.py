"""How the analyses read an interleaved pipeline rank (passes/analysis/accounting.py,
memory.py): a rank holds several slices of one layer stack (`stg.repeat L/4 offset 0
of L` and `offset L/2 of L`), whose per-layer states are distinct tensors under the
same names, and its schedule keeps (chunk, micro-batch) activations in flight."""

from __future__ import annotations

import pytest
from tests.unit.analysis.test_accounting_pipelined import BINDINGS, pipelined, step
from tests.unit.pipeline.test_schedules import live_forwards
from xdsl.dialects import func

from stagec.passes.analysis.accounting import account


@pytest.fixture(scope="module")
def modules():
    whole = step()  # Llama, 4 layers, M = 4, bf16, AdamW
    return (pipelined(whole, pp=2, schedule="1f1b"),
            pipelined(whole, pp=2, schedule="interleaved-1f1b", virtual_stages=2))


def test_a_rank_holds_the_layers_of_all_its_chunks(modules):
    # pp = 2: 1F1B's rank 0 holds layers 0-1, interleaved rank 0 layers 0 and 2 (chunks
    # 0.0 and 0.1): the same count, so the same parameters and persistent states -
    # counting one slice per name would halve the layers.
    plain, interleaved = (account(m, BINDINGS) for m in modules)
    assert interleaved.params == plain.params
    for a, b in zip(plain.rank_classes, interleaved.rank_classes):
        assert b.params == a.params
        assert b.memory.persistent == a.memory.persistent


def test_the_schedules_keep_their_chunk_micro_batches_in_flight(modules):
    # pp = 2, v = 2, M = 4: rank 0 warms up with 4 forwards and runs a 5th before its
    # first backward (5 chunk forwards live); rank 1: 2 warm-up forwards, then F B
    # pairs, but its chunk-0 forwards stay live: F0.0 F0.1 F1.0 B1.0 F1.1 B1.1 -> 3.
    _, interleaved = modules
    schedules = {op.sym_name.data: op for op in interleaved.ops if isinstance(op, func.FuncOp)}
    assert [live_forwards(schedules[f"train_step_stage{k}"]) for k in range(2)] == [5, 3]


def test_interleaving_costs_activation_memory_on_rank_0(modules):
    # 1F1B's rank 0 keeps 2 micro-batches of 2 layers (4 layer-micro-batches) in flight,
    # interleaved 5 chunk-micro-batches of 1 layer: at most 5/4 of 1F1B's activations
    # (the embedding's saved values are in both), and more.
    plain, interleaved = (account(m, BINDINGS).rank_classes[0].memory.breakdown["activations"] for m in modules)
    assert plain < interleaved <= plain * 5 / 4


def test_scheduled_and_data_parallel_too():
    # after stg-shard{dp=2} and the scheduling passes the gradient buckets read each
    # layer's gradient outside the slices ("layer 2 of 4"): such a mention must not
    # add to the slices' (one layer against the rank's two), nor halve them
    from stagec.dialects import make_context
    from stagec.passes.schedule.pipeline import schedule
    from stagec.tools.pipeline_spec import build_pipeline

    accounts = []
    for options in ("pp=2", "pp=2 schedule=interleaved-1f1b virtual_stages=2"):
        module = step()
        spec = f"builtin.module(stg-shard{{dp=2}},stg-match-collectives,stg-pipeline{{{options}}})"
        build_pipeline(spec, mlir_syntax=True).apply(make_context(), module)
        accounts.append(account(schedule(module), BINDINGS | {"B": 4}))
    plain, interleaved = accounts
    for a, b in zip(plain.rank_classes, interleaved.rank_classes, strict=True):
        assert (b.params, b.memory.persistent) == (a.params, a.memory.persistent)
