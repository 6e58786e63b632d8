"""Chakra emission (runtime/chakra/emit.py): exact small traces, schedules, buckets,
stage placement, iterations, atomic writes. Every trace written here goes through
check_trace."""

from __future__ import annotations

import json
import os
import sys

import pytest
from xdsl.parser import Parser

from stagec.dialects import make_context
from stagec.frontends.templates import build_model, load_config
from stagec.passes.schedule.pipeline import schedule
from stagec.passes.stg_autodiff import StgAutodiff
from stagec.runtime.chakra import emit as E
from stagec.runtime.chakra.check import check_trace
from stagec.runtime.chakra.schema import CommType, NodeType
from stagec.runtime.chakra.wire import read_trace
from stagec.tools.pipeline_spec import build_pipeline
from tests.unit.templates.tiny_configs import TINY

# stage.md Table III's Megatron MLP on two tp ranks (the README's example)
MLP = """
stg.mesh @m [tp = 2]
func.func @mlp() {
  %x = stg.input "x" : !stg.tensor<[B, H], bf16>
  %w1 = stg.param "w1" : !stg.tensor<[H, 4*H/tp], bf16>
  %w2 = stg.param "w2" : !stg.tensor<[4*H/tp, H], bf16>
  %h = stg.einsum "bh,hf->bf" %x, %w1 : !stg.tensor<[B, H], bf16>, !stg.tensor<[H, 4*H/tp], bf16> -> !stg.tensor<[B, 4*H/tp], bf16>
  %a = stg.elementwise gelu %h : !stg.tensor<[B, 4*H/tp], bf16> -> !stg.tensor<[B, 4*H/tp], bf16>
  %y = stg.einsum "bf,fh->bh" %a, %w2 : !stg.tensor<[B, 4*H/tp], bf16>, !stg.tensor<[4*H/tp, H], bf16> -> !stg.tensor<[B, H] @tp, bf16>
  %z = stg.all_reduce %y on @m [tp] : !stg.tensor<[B, H] @tp, bf16> -> !stg.tensor<[B, H], bf16>
  func.return
}
"""


def checked(directory) -> dict:
    report = check_trace(str(directory))
    assert report.ok, "\n".join(report.defects[:20])
    return report.to_json()["ranks"]


def nodes(directory, rank: int, prefix: str = "trace"):
    return read_trace(os.path.join(directory, f"{prefix}.{rank}.et")).nodes


def attrs(node) -> dict:
    return {a.name: a.value for a in node.attrs}


def tiny_step(name="llama", micro_batches=2, passes="", scheduled=True, schedule_options=None, **config):
    module = build_model(load_config({**TINY[name], **config}), "bf16")
    StgAutodiff(micro_batches=micro_batches, optimizer="adamw").apply(make_context(), module)
    if passes:
        build_pipeline(f"builtin.module({passes})", mlir_syntax=True).apply(make_context(), module)
    return schedule(module, **(schedule_options or {})) if scheduled else module


# -- the 2-rank TP MLP, node by node -----------------------------------------------------


def test_two_rank_tp_mlp_exact_trace(tmp_path):
    module = Parser(make_context(), MLP).parse_module()
    report = E.emit_traces(module, str(tmp_path), {"B": 4, "H": 8})
    counts = checked(tmp_path)
    assert set(counts) == {"0", "1"}
    assert json.loads((tmp_path / "comm_group.json").read_text()) == {"1": [0, 1]}
    for rank in (0, 1):
        n = nodes(tmp_path, rank)
        assert [(x.id, NodeType(x.type).name) for x in n] == [
            (0, "COMP_NODE"), (1, "COMP_NODE"), (2, "COMP_NODE"), (3, "COMM_COLL_NODE"),
        ]
        # data deps follow use-def; the compute stream orders 0 -> 1 -> 2 by data already
        assert [list(x.data_deps) for x in n] == [[], [0], [1], [2]]
        assert [list(x.ctrl_deps) for x in n] == [[], [], [], []]
        # einsum [B, H] x [H, 4H/tp]: 2*B*H*(4H/2) = 2*4*8*16 FLOPs; bytes: x 64 + w1 256 + h 128
        assert attrs(n[0]) == {"num_ops": 1024, "tensor_size": 64 + 256 + 128}
        assert attrs(n[2])["num_ops"] == 2 * 4 * 16 * 8
        # the partial [B, H] bf16 buffer: 4*8*2 bytes, on group "1" = ranks {0, 1}
        assert attrs(n[3]) == {"comm_type": int(CommType.ALL_REDUCE), "comm_size": 64, "pg_name": "1"}
        assert all(x.duration_micros >= 1 for x in n)
        assert all(isinstance(v, int) for x in n for k, v in attrs(x).items() if k != "pg_name")
    assert report.files == 2


# -- a sharded training step -----------------------------------------------------------------


def test_dp_tp_sp_step_groups_and_counts(tmp_path):
    module = tiny_step(passes="stg-shard{dp=2 tp=2 sp=true},stg-match-collectives")
    E.emit_traces(module, str(tmp_path), {"B": 2, "S": 8})
    counts = checked(tmp_path)
    assert len(counts) == 4 and len({json.dumps(c, sort_keys=True) for c in counts.values()}) == 1
    groups = json.loads((tmp_path / "comm_group.json").read_text())
    # tp pairs, dp pairs, and dp x tp (the sequence-parallel norm gradients)
    assert sorted(groups.values()) == [[0, 1], [0, 1, 2, 3], [0, 2], [1, 3], [2, 3]]
    (program,), _ = E.build_programs(module, {"B": 2, "S": 8})
    c = program.counts()
    # per micro-batch: 2 layers x (4 forward + 8 backward GEMMs) + the head's 3 (Q/K/V and
    # gate/up fused as the frameworks run them)
    assert c["gemm"] == 2 * (2 * 12 + 3)
    assert c["attention"] == 2 * 2 * 2
    # sequence parallel: 2 forward + 4 backward all-gathers a layer, 3 around head and embedding
    assert c["all_gather"] == 2 * (2 * 6 + 3)
    assert c["reduce_scatter"] == 2 * (2 * 4 + 2)


def test_gradient_all_reduce_once_per_iteration_in_buckets():
    passes = "stg-shard{dp=2},stg-match-collectives"
    bindings = {"B": 2, "S": 8}
    (one,), _ = E.build_programs(tiny_step(micro_batches=4, passes=passes), bindings)
    per_grad_step = tiny_step(micro_batches=4, passes=passes, schedule_options={"bucket_mb": 0})
    (per_grad,), _ = E.build_programs(per_grad_step, bindings)
    grads = 2 * 9 + 3  # 9 tensors per layer, embedding, final norm, head
    loss = 4  # the per-micro-batch loss all-reduce over dp (a scalar)
    assert per_grad.counts()["all_reduce"] == grads + loss
    assert one.counts()["all_reduce"] == 1 + loss  # the tiny model's gradients fit one bucket
    bucket = next(i for i, s in enumerate(one.node_static) if one.statics[s].label.startswith("opt.all_reduce_bucket"))
    # it waits for the last micro-batch's gradient accumulation, not for the first
    last_mb_nodes = [i for i, c in enumerate(one.node_ctx) if ".mb3" in one.contexts[c]]
    assert max(one.node_data[bucket]) >= min(last_mb_nodes)
    assert one.totals()["all_reduce_bytes"] - 4 * 4 == per_grad.totals()["all_reduce_bytes"] - 4 * 4


def test_zero1_buckets_follow_megatrons_rule(tmp_path):
    """stg-shard zero=1: the step's gradient reduce-scatters and the updated
    parameters' all-gathers in Megatron's distributed-optimizer buckets. The tiny
    Llama's 21 gradients (H 16, F 24, 2 layers) become ready as layer 1's (down, up,
    gate 384 elements each, a norm 16, o 256, v and k 128, q 256, a norm 16: 1952),
    layer 0's, then the head 512, the final norm 16 and the embedding 512. With buckets
    closing at 2000 elements: layer 1 and layer 0's down (2336), the rest of layer 0
    and the head (2080), the final norm and the embedding (528)."""
    module = tiny_step(micro_batches=2, passes="stg-shard{dp=2 zero=1},stg-match-collectives",
                       schedule_options={"zero_bucket_elements": 2000})
    options = E.EmitOptions(iterations=2)
    (program,), _ = E.build_programs(module, {"B": 2, "S": 8}, options=options)
    statics = [program.statics[s] for s in program.node_static]
    scatter = [(i, s) for i, s in enumerate(statics) if s.label.startswith("opt.reduce_scatter_bucket")]
    gather = [(i, s) for i, s in enumerate(statics) if s.label.startswith("opt.all_gather_bucket")]
    # per iteration: the fp32 gradients whole (4 bytes an element) ...
    assert [s.size // 4 for _, s in scatter] == [2336, 2080, 528] * 2
    assert [s.label.split(".")[2] for _, s in scatter][:3] == ["x10", "x9", "x2"]
    # ... and each rank's bf16 half of the same parameters (2 bytes x 1/2), issued as
    # the last of their updates is done: the final norm and embedding's first
    assert sorted(s.size for _, s in gather) == sorted([2336, 2080, 528] * 2)
    assert program.counts()["all_reduce"] == 2 * 2  # only the per-micro-batch loss
    for i, s in gather:
        deps = [statics[d] for d in program.node_data[i]]
        assert len(deps) == int(s.label.split(".")[2][1:])  # one update (cast) per member
        assert all(d.type == NodeType.COMP_NODE for d in deps)
    # the second iteration's forward reads the gathered parameters
    second = {i for i, c in enumerate(program.node_ctx) if program.contexts[c].startswith("it1")}
    first_gathers = {i for i, _ in gather[:3]}
    assert any(first_gathers & set(program.node_data[i]) for i in second)
    E.emit_traces(module, str(tmp_path), {"B": 2, "S": 8}, options=options)
    checked(tmp_path)


def test_no_optimizer_keeps_gradient_reduction(tmp_path):
    module = tiny_step(passes="stg-shard{dp=2},stg-match-collectives")
    E.emit_traces(module, str(tmp_path), {"B": 2, "S": 8}, options=E.EmitOptions(optimizer=False))
    checked(tmp_path)
    n = nodes(tmp_path, 0)
    assert not any(".adam" in x.name or x.name.startswith("opt.adam") for x in n)
    assert any(x.name.startswith("opt.all_reduce_bucket") for x in n)


def test_adam_is_the_real_arithmetic():
    module = tiny_step(micro_batches=1)
    (program,), _ = E.build_programs(module, {"B": 1, "S": 8})
    adam = [program.statics[s] for s in program.node_static if program.statics[s].label.startswith("opt.adam")]
    from stagec.passes.analysis.accounting import account

    params = account(module, {"B": 1, "S": 8}).params
    # one node per parameter tensor; 14 FLOPs per element (stg.adam: torch's _single_tensor_adam)
    assert len(adam) == 2 * 9 + 3
    assert sum(s.num_ops for s in adam) == 14 * params


def test_attention_flops_have_the_s_squared_term():
    module = tiny_step(micro_batches=1)
    small, _ = E.build_programs(module, {"B": 1, "S": 8})
    large, _ = E.build_programs(module, {"B": 1, "S": 16})

    def attention(programs):
        p = programs[0]
        return sum(p.statics[s].num_ops for s in p.node_static if p.statics[s].category == "attention")

    assert attention(large) == 4 * attention(small)


# -- pipelines -------------------------------------------------------------------------------


def _compute_order(program) -> list[str]:
    """The micro-batch calls in the order the compute stream runs them."""
    seen: list[str] = []
    for s, c in zip(program.node_static, program.node_ctx):
        if program.statics[s].type != NodeType.COMP_NODE:
            continue
        parts = [p for p in program.contexts[c].split(".") if p.startswith(("forward", "backward"))]
        if parts and (not seen or seen[-1] != parts[0]):
            seen.append(parts[0])
    return seen


@pytest.mark.parametrize("schedule, stage0, stage1", [
    ("1f1b", "F0 F1 B0 F2 B1 F3 B2 B3", "F0 B0 F1 B1 F2 B2 F3 B3"),
    ("gpipe", "F0 F1 F2 F3 B3 B2 B1 B0", "F0 F1 F2 F3 B3 B2 B1 B0"),
])
def test_pipeline_schedule_is_the_compute_stream_order(tmp_path, schedule, stage0, stage1):
    module = tiny_step(micro_batches=4, passes=f"stg-shard{{tp=2}},stg-match-collectives,stg-pipeline{{pp=2 schedule={schedule}}}")
    programs, _ = E.build_programs(module, {"B": 1, "S": 8})
    for program, want in zip(programs, (stage0, stage1)):
        got = " ".join(p.replace("forward", "F").replace("backward", "B") for p in _compute_order(program))
        assert got == want
        comp = [i for i, s in enumerate(program.node_static) if program.statics[s].type == NodeType.COMP_NODE]
        for a, b in zip(comp, comp[1:]):  # one compute stream
            assert a in program.node_ctrl[b] or a in program.node_data[b]
    E.emit_traces(module, str(tmp_path), {"B": 1, "S": 8}, programs=(programs, _))
    counts = checked(tmp_path)
    assert counts["0"]["SEND"]["count"] == 4 and counts["2"]["RECV"]["count"] == 4
    tags = [attrs(x)["comm_tag"] for x in nodes(tmp_path, 0) if x.type in (5, 6)]
    assert len(tags) == len(set(tags))  # one tag per micro-batch and direction
    peers = {(attrs(x)["comm_src"], attrs(x)["comm_dst"]) for x in nodes(tmp_path, 1) if x.type in (5, 6)}
    assert peers == {(1, 3), (3, 1)}


def test_head_and_loss_on_the_last_stage_when_pp_does_not_divide_layers():
    # 3 layers on 2 stages: the first takes 2 (docs/pipeline.md), the last 1 and the head
    module = tiny_step(micro_batches=2, passes="stg-pipeline{pp=2}", num_hidden_layers=3)
    first, last = E.build_programs(module, {"B": 1, "S": 8})[0]
    assert first.counts()["attention"] == 2 * 2 * 2 and last.counts()["attention"] == 2 * 2 * 1
    heads = [p for p in (first, last) if any("cross_entropy" in s.label for s in p.statics)]
    assert heads == [last]
    # 12 GEMMs a layer per micro-batch; the head's 3 on the last stage only
    assert first.counts()["gemm"] == 2 * 2 * 12
    assert last.counts()["gemm"] == 2 * (1 * 12 + 3)


def test_iterations_chain_through_the_weights():
    module = tiny_step(micro_batches=1)
    (one,), _ = E.build_programs(module, {"B": 1, "S": 8})
    (two,), _ = E.build_programs(module, {"B": 1, "S": 8}, options=E.EmitOptions(iterations=2))
    assert len(two) == 2 * len(one)
    first_of_second = len(one)
    # the second iteration's first GEMM reads weights the first iteration's optimizer wrote
    second_gemm = next(i for i in range(first_of_second, len(two))
                       if two.statics[two.node_static[i]].category == "gemm")
    optimizer_nodes = {i for i in range(first_of_second) if two.statics[two.node_static[i]].label.startswith("opt.")}
    assert set(two.node_data[second_gemm]) & optimizer_nodes


def test_fsdp_all_gathers_wait_for_their_place_in_the_program(tmp_path):
    module = tiny_step(micro_batches=2, passes="stg-shard{fsdp=2},stg-match-collectives")
    (program,), _ = E.build_programs(module, {"B": 2, "S": 8})
    first_comp = next(i for i, s in enumerate(program.node_static) if program.statics[s].type == NodeType.COMP_NODE)
    gathers = [i for i, s in enumerate(program.node_static) if program.statics[s].category == "all_gather"]
    assert gathers
    for i in gathers:
        if i > first_comp:  # only what precedes all compute may start at t=0
            assert program.node_data[i] or program.node_ctrl[i]
    E.emit_traces(module, str(tmp_path), {"B": 2, "S": 8}, programs=E.build_programs(module, {"B": 2, "S": 8}))
    checked(tmp_path)


# -- writing ---------------------------------------------------------------------------------


def test_a_failed_write_leaves_no_partial_file(tmp_path, monkeypatch):
    module = Parser(make_context(), MLP).parse_module()
    real = E.rank_bytes
    calls = []

    def failing(encoded, table):
        real(encoded, table)
        calls.append(1)
        raise RuntimeError("killed")

    monkeypatch.setattr(E, "rank_bytes", failing)
    with pytest.raises(RuntimeError):
        E.emit_traces(module, str(tmp_path), {"B": 4, "H": 8}, options=E.EmitOptions(prefix="p"))
    assert calls and os.listdir(tmp_path) == []


def test_a_killed_run_leaves_no_result(tmp_path):
    """The files are written into a staging directory beside --out that becomes --out
    only when complete: SIGKILL (no cleanup runs) leaves no --out at all, and the next
    run removes the dead run's staging directory (tests/unit/cli/test_trace_signals.py
    for Ctrl-C and SIGTERM)."""
    import signal
    import subprocess
    import time

    config = tmp_path / "tiny.json"
    config.write_text(json.dumps(TINY["llama"]))
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "stagec.tools.stagec_trace", "--model", str(config), "--dp", "128", "--tp", "2",
           "--pp", "2", "--batch", "256", "--seq", "8", "--quiet", "--workers", "1", "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    staging = tmp_path / f".out.stagec-{proc.pid}.tmp"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if staging.is_dir() and len([n for n in os.listdir(staging) if n.endswith(".et")]) >= 20:
            break
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    if proc.returncode == 0:  # it finished first: the whole result, and nothing else
        assert sorted(os.listdir(tmp_path)) == ["out", "tiny.json"]
        assert len([n for n in os.listdir(out) if n.endswith(".et")]) == 512
        return
    assert not out.exists() and staging.is_dir()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, timeout=120)
    assert sorted(os.listdir(tmp_path)) == ["out", "tiny.json"]
    for rank in range(512):  # every file whole
        read_trace(str(out / f"trace.{rank}.et"))


def test_write_atomic_removes_its_temporary_file(tmp_path):
    path = tmp_path / "x.et"
    with pytest.raises(TypeError):
        E.write_atomic(str(path), object())  # type: ignore[arg-type]
    assert os.listdir(tmp_path) == []
    E.write_atomic(str(path), b"ok")
    assert path.read_bytes() == b"ok" and os.listdir(tmp_path) == ["x.et"]


def test_reshard_left_is_an_error():
    module = tiny_step(micro_batches=1, passes="stg-shard{tp=2}", scheduled=False)
    with pytest.raises(E.EmitError, match="stg-match-collectives"):
        E.build_programs(module, {"B": 1, "S": 8})


# -- every strategy through `stagec trace` ----------------------------------------------------


@pytest.mark.parametrize("model, args", [
    ("llama", ["--cp", "2"]),
    ("llama", ["--fsdp", "2", "--pp", "2"]),
    ("llama", ["--dp", "2", "--tp", "2", "--recompute"]),
    ("llama", ["--tp", "2", "--pp", "2", "--schedule", "gpipe", "--iterations", "2"]),
    ("mixtral", ["--ep", "2", "--pp", "2"]),
    ("llama", ["--dp", "2", "--no-optimizer", "--bucket-mb", "0"]),
    ("llama", ["--fsdp", "2", "--tp", "2", "--sp"]),
    ("gpt", ["--tp", "2", "--pp", "2"]),
])
def test_stagec_trace_strategies_pass_check_trace(tmp_path, capsys, model, args):
    from stagec.tools import stagec_trace

    config = tmp_path / "config.json"
    config.write_text(json.dumps(TINY[model]))
    out = tmp_path / "out"
    code = stagec_trace.main(["--model", str(config), *args, "--batch", "8", "--seq", "8", "--quiet", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    counts = checked(out)
    world = 1
    for flag in ("--cp", "--fsdp", "--pp", "--dp", "--tp", "--ep"):
        if flag in args:
            world *= int(args[args.index(flag) + 1])
    assert len(counts) == world
    assert "wrote" in capsys.readouterr().out
