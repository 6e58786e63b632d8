"""Accounting of a pipelined training step (stg-pipeline): one rank class per stage,
calls followed, the in-flight activations of each schedule in the memory timeline."""

import pytest

from stagec.dialects import make_context
from stagec.frontends.templates import build_model, load_config
from stagec.passes.analysis.accounting import account, module_bindings
from stagec.passes.analysis.calls import inline_calls
from stagec.passes.analysis.liveness import Evaluator
from stagec.passes.stg_autodiff import StgAutodiff
from stagec.passes.stg_pipeline import StgPipeline
from stagec.tools.pipeline_spec import build_pipeline

M = 4
BINDINGS = {"B": 2, "S": 64}
# 4 layers, so that pp = 2 and pp = 3 (uneven: 2 + 1 + 1) both slice the stack
LLAMA = {
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 160,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 4,
    "vocab_size": 96,
    "max_position_embeddings": 128,
}


def step(config=LLAMA, **autodiff):
    module = build_model(load_config(config), "bf16")
    StgAutodiff(optimizer="adamw", micro_batches=M, **autodiff).apply(make_context(), module)
    return module


def pipelined(module, **options):
    module = module.clone()
    StgPipeline(**options).apply(make_context(), module)
    return module


@pytest.fixture(scope="module")
def whole():
    return step()


@pytest.mark.parametrize("pp", [2, 3])
def test_stages_share_the_work_of_the_whole_step(whole, pp):
    flat = account(whole, BINDINGS)
    staged = account(pipelined(whole, pp=pp), BINDINGS)
    assert len(staged.rank_classes) == pp
    assert [rc.ranks for rc in staged.rank_classes] == [(k,) for k in range(pp)]
    # every matmul and attention of the step runs on exactly one stage
    for category in ("gemm", "attention"):
        assert sum(getattr(rc.flops, category) for rc in staged.rank_classes) == getattr(flat.rank_classes[0].flops, category)
    assert staged.params == flat.params
    assert staged.tokens == flat.tokens == M * BINDINGS["B"] * BINDINGS["S"]
    # each stage holds its layers, the first the embedding, the last the norm and head:
    # the untied model's parameters are split, none held twice
    assert sum(rc.params for rc in staged.rank_classes) == flat.params


def test_tied_weight_counts_once_globally_and_on_both_stages():
    tied = step(LLAMA | {"tie_word_embeddings": True})
    flat = account(tied, BINDINGS)
    staged = account(pipelined(tied, pp=2), BINDINGS)
    table = LLAMA["vocab_size"] * LLAMA["hidden_size"]
    assert staged.params == flat.params
    assert sum(rc.params for rc in staged.rank_classes) == flat.params + table


def test_ranks_of_each_stage_follow_the_mesh_order():
    module = step()
    pipeline = "builtin.module(stg-shard{dp=2},stg-match-collectives,stg-pipeline{pp=2})"
    build_pipeline(pipeline, mlir_syntax=True).apply(make_context(), module)
    # stg-pipeline puts pp first, mesh [pp = 2, dp = 2]: rank = c_pp * 2 + c_dp
    mesh = [op for op in module.ops if op.name == "stg.mesh"][0]
    assert mesh.axis_names == ("pp", "dp")
    staged = account(module, BINDINGS | {"B": 4})
    assert [rc.ranks for rc in staged.rank_classes] == [(0, 1), (2, 3)]


def test_gpipe_keeps_every_micro_batch_in_flight_1f1b_only_pp():
    """Stage 0 of pp = 2 with M = 4: 1F1B runs a backward with two forwards' saved
    activations live, GPipe its first backward with all four. The rest of the
    timeline at that point (states, the backward's own buffers, the micro-batches'
    ids, split from the step's input at its start) is the same, so the peaks differ
    by exactly two forwards' new results."""
    whole = step()
    one_f_one_b = pipelined(whole, pp=2, schedule="1f1b")
    gpipe = pipelined(whole, pp=2, schedule="gpipe")
    peak_1f1b = account(one_f_one_b, BINDINGS).rank_classes[0].memory
    peak_gpipe = account(gpipe, BINDINGS).rank_classes[0].memory
    forward = next(op for op in one_f_one_b.ops if getattr(op, "sym_name", None) and op.sym_name.data == "stage0_forward")
    ev = Evaluator(module_bindings(one_f_one_b, BINDINGS))
    saved = sum(ev.device_bytes(v.type) for v in _new_results(forward))
    assert peak_gpipe.peak_bytes - peak_1f1b.peak_bytes == 2 * saved
    assert peak_gpipe.peak_phase == peak_1f1b.peak_phase == "backward"


def test_inlined_schedule_has_no_calls_and_each_call_once(whole):
    module = pipelined(whole, pp=2)
    stage0 = next(op for op in module.ops if getattr(op, "sym_name", None) and op.sym_name.data == "train_step_stage0")
    flat = inline_calls(stage0)
    assert not [op for op in flat.walk() if op.name == "func.call"]
    # the original keeps its calls: one forward and one backward per micro-batch
    assert len([op for op in stage0.walk() if op.name == "func.call"]) == 2 * M
    sends = [op for op in flat.walk() if op.name == "stg.send"]
    assert len(sends) == M  # stage 0 sends one activation per micro-batch


def _new_results(function):
    """The values a function returns that it computes (not its arguments passed back)."""
    (ret,) = [op for op in function.body.block.ops if op.name == "func.return"]
    out = []
    for value in ret.operands:
        if value.owner.name == "stg.phase":
            value = value.owner.body.block.last_op.operands[value.index]
        if value not in function.body.block.args:
            out.append(value)
    return out
