"""The accounting reads the scheduled form (docs/scheduled-ir.md): a tiny training
step accounted as stg-shard / stg-match-collectives / stg-pipeline left it and again
after `schedule(module)` (GEMM fusion, FSDP units, async collectives on streams with
their stg.waits) reports the same parameters, FLOPs by phase and category, and
communication ops and bytes by collective kind: grouping and issuing change when work
happens, not how much - but for the MoE backward's all-to-alls of saved tokens, which
the scheduled form does not send again (stg-reuse-exchanges). What the scheduled form adds is `calls`: a coalesced group is
one call of its kind (comm.py); before scheduling, calls equal ops.

Peak memory is equal where grouping moves no buffer's birth or death: async issue at
the op's place with the wait before the first use keeps every lifetime, and a GEMM
group stands where its first member stood, its members adjacent in these steps. An
FSDP unit differs, and the test says by how much and why."""

from __future__ import annotations

import pytest
from stagec.dialects import make_context
from stagec.dialects.stg.names import TRAIN_STEP_FUNCTION
from stagec.dialects.stg.schedule import GroupOp
from stagec.dialects.stg.structure import LoopOp
from stagec.frontends.templates import build_model, load_config
from stagec.passes.analysis.accounting import account, module_bindings
from stagec.passes.schedule.pipeline import schedule
from stagec.passes.stg_autodiff import StgAutodiff
from stagec.passes.stg_fuse_gemms import StgFuseGemms
from stagec.passes.stg_match_collectives import StgMatchCollectives
from stagec.passes.stg_pipeline import StgPipeline
from stagec.passes.stg_schedule import StgSchedule
from stagec.passes.stg_shard import StgShard
from xdsl.dialects import func

from tests.unit.templates.tiny_configs import TINY

M = 2
BINDINGS = {"B": 2, "S": 64, "M": M}
LLAMA = TINY["llama"]  # H = 16, V = 32, 2 layers
MOE = {**TINY["mixtral"], "capacity_factor": 2.0}

CASES = {
    "dp+tp+sp": (LLAMA, {"dp": 2, "tp": 2, "sp": True}, None),
    "tp": (LLAMA, {"tp": 2}, None),  # fused Q/K/V, gate/up and their input gradients
    "fsdp": (LLAMA, {"fsdp": 2}, None),
    "pp2-1f1b": (LLAMA, {"dp": 2}, {"pp": 2, "schedule": "1f1b"}),
    "zero1": (LLAMA, {"dp": 2, "zero": 1}, None),
    "ep": (MOE, {"ep": 2}, None),
}


def step(case):
    """The tiny step as stg-match-collectives / stg-pipeline leave it (unscheduled)."""
    config, strategy, pipeline = CASES[case]
    module = build_model(load_config(config), "bf16")
    passes = [StgAutodiff(optimizer="adamw", micro_batches=M), StgShard(**strategy), StgMatchCollectives()]
    passes += [StgPipeline(**pipeline)] if pipeline else []
    for p in passes:
        p.apply(make_context(), module)
    return module


def class_functions(module) -> list[str]:
    """The function each rank class runs, in the accounting's order."""
    stages = [f for f in module.ops if isinstance(f, func.FuncOp) and "stg.stage" in f.attributes]
    return [f.sym_name.data for f in stages] or [TRAIN_STEP_FUNCTION]


def grouped_members(module, function: str) -> int:
    """Communication ops a collective group issues beyond its first, over one step of
    `function`: each group's members but one, times the loop counts and calls around it."""
    env = module_bindings(module, BINDINGS)
    functions = {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)}

    def count(block, times: int) -> int:
        total = 0
        for op in block.ops:
            if isinstance(op, GroupOp) and op.collective_kind() is not None:
                total += times * (len(op.members()) - 1)
            elif isinstance(op, func.CallOp):
                total += count(functions[op.callee.root_reference.data].body.block, times)
            else:
                inner = times * op.count_expr.evaluate(env) if isinstance(op, LoopOp) else times
                total += sum(count(b, inner) for r in op.regions for b in r.blocks)
        return total

    return count(functions[function].body.block, 1)


def reused_exchanges(case: str) -> int:
    """All-to-alls stg-reuse-exchanges removes: under ep the backward sends the MoE
    dispatch's saved tokens and the experts' saved outputs again, 2 a layer a
    micro-batch, each the size of every other exchange of the tiny MoE; the scheduled
    form saves the forward's exchanged tensors instead (as Megatron keeps them)."""
    return 2 * MOE["num_hidden_layers"] * M if case == "ep" else 0


@pytest.mark.parametrize("case", list(CASES))
def test_scheduled_account_equals_unscheduled(case):
    module = step(case)
    before = account(module, BINDINGS)
    # gradients whose reductions are in flight hold memory of their own: the rule of
    # test_gradient_waits_memory.py, left out here
    scheduled = schedule(module.clone(), defer_gradient_waits=False)
    after = account(scheduled, BINDINGS)
    assert any(isinstance(op, GroupOp) for op in scheduled.walk())
    assert after.params == before.params
    assert len(after.rank_classes) == len(before.rank_classes)
    functions = class_functions(scheduled)
    for a, b, function in zip(before.rank_classes, after.rank_classes, functions, strict=True):
        merged = grouped_members(scheduled, function)
        assert b.ranks == a.ranks and b.params == a.params
        assert b.flops_by_phase == a.flops_by_phase
        reused = reused_exchanges(case)
        want = a.comm.as_dict()
        if reused:
            exchanges = want["all_to_all"]
            per_exchange = exchanges["bytes"] // exchanges["ops"]
            want["all_to_all"] = {"ops": exchanges["ops"] - reused, "bytes": exchanges["bytes"] - reused * per_exchange}
        assert b.comm.as_dict() == want
        assert +a.comm.calls == +a.comm.ops  # unscheduled: one call per op
        assert sum(b.comm.calls.values()) == sum(a.comm.ops.values()) - merged - reused
        assert b.memory.persistent == a.memory.persistent
        if case != "fsdp":
            assert b.peak_memory_bytes == a.peak_memory_bytes
            moved = reused and b.memory.breakdown["communication"] - a.memory.breakdown["communication"]
            # the saved exchanged tokens are an all-to-all's results now: the same bytes,
            # counted as communication rather than activations
            assert (moved > 0) == bool(reused)
            assert b.memory.breakdown == {**a.memory.breakdown,
                                          "communication": a.memory.breakdown["communication"] + moved,
                                          "activations": a.memory.breakdown["activations"] - moved}


def test_fsdp_units_are_one_call_each_and_gather_the_root_unit_sooner():
    """FSDP on the tiny Llama (L = 2, M = 2 micro-batches): per micro-batch the forward
    all-gathers the root unit (embedding, final norm, head) and each layer's unit, the
    backward gathers them again and reduce-scatters each unit's gradients; the loss
    all-reduce stays one call per micro-batch."""
    module = step("fsdp")
    before = account(module, BINDINGS).rank_classes[0]
    after = account(schedule(module.clone()), BINDINGS).rank_classes[0]
    L, units = 2, 1 + 2
    assert after.comm.calls == {"all_gather": M * 2 * units, "reduce_scatter": M * units, "all_reduce": M}
    # a layer unit holds 9 tensors (q, k, v, o, gate, up, down, two norms), the root 3
    assert after.comm.ops == before.comm.ops == {
        "all_gather": M * 2 * (9 * L + 3), "reduce_scatter": M * (9 * L + 3), "all_reduce": M}
    # Without units (fusion and async issue only) the peak is the same...
    fused_only = module.clone()
    for p in (StgFuseGemms(), StgSchedule()):
        p.apply(make_context(), fused_only)
    assert account(fused_only, BINDINGS).rank_classes[0].peak_memory_bytes == before.peak_memory_bytes
    # ...with them the backward gathers the root unit whole where the head's gather
    # stood, so at the head's weight-gradient GEMM the gathered embedding table and
    # final-norm weight are live already (FSDP's flat parameter: its cost), and the
    # step's peak moves there from the loss's backward.
    V, H, bf16 = 32, 16, 2
    head, table, norm = V * H * bf16, V * H * bf16, H * bf16
    assert after.memory.peak_op == "stg.einsum" and after.memory.peak_phase == "backward"
    assert after.memory.breakdown["communication"] == head + table + norm
    timeline = account(module, BINDINGS).rank_classes[0].memory.timeline
    at_head = [e for e in timeline.entries() if e.op == "stg.einsum" and e.phase == "backward"][0]
    assert sum(at_head.bytes.values()) + table + norm == after.peak_memory_bytes
    assert after.peak_memory_bytes > before.peak_memory_bytes


def test_stats_accounts_the_scheduled_form(capsys, tmp_path):
    """`stagec stats` runs the scheduling passes before the accounting, as `stagec
    trace` does: --fsdp 2 with 4 sequences of 64 tokens, one per replica and
    micro-batch, is the fsdp case above (B = 2 per micro-batch, M = 2)."""
    import json

    from stagec.tools import stagec_cli

    config = tmp_path / "config.json"
    config.write_text(json.dumps(LLAMA))
    code = stagec_cli.main(["stats", "--model", str(config), "--fsdp", "2", "--batch", "4", "--micro-batch", "1",
                            "--seq", "64", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    (rc,) = json.loads(out)["rank_classes"]
    module = step("fsdp")
    before = account(module, BINDINGS).rank_classes[0]
    after = account(schedule(module.clone()), BINDINGS).rank_classes[0]
    assert rc["communication"] == before.comm.as_dict()
    assert rc["communication_calls"] == after.comm.calls_dict() == {"all_reduce": 2, "all_gather": 12, "reduce_scatter": 6}
    assert rc["peak_memory_bytes"] == after.peak_memory_bytes != before.peak_memory_bytes
    assert rc["flops"] == before.flops.as_dict()
