"""Per-GPU operator counts of the emitted traces against stage.md Table VI's *measured*
column (the real 128-GPU NeMo traces, not STAGE's synthesized one): GeMM, Attn,
AllGather, ReduceScatter, AllToAll and P2P within 5%; AllReduce and ElementWise are
compared where the text below says why they differ.

The counts are those of the node stream the emitter writes for the GPU's rank class
(runtime/chakra/emit.py, GEMM fusion and FSDP units on, one iteration, optimizer
included); tests/unit/chakra/test_emit.py writes such traces and checks them.

Configurations (tests/unit/shard/test_table7_volumes.py derived most of them from
Table VI's own counts; where a row leaves a parameter unstated, its source is named):
- GPT-3 5B is NeMo's 5b config (24 layers, H 4096, S 2048); Llama-3 70B runs with
  32 layers (Table VI's TP=8 counts: 8192 attentions = 128 micro-batches x 2 x 32),
  S = 4096 (its Table VII volumes); Mixtral 8x7B is the named config (32 layers).
- "Micro Batch / Batch" is per data-parallel replica: micro-batches = batch /
  micro-batch, and FSDP=8 runs 16 micro-batches of 8 sequences on every rank.
  Llama-3 70B TP=4 PP=2 is listed "1 / 32", but its own counts say 128 micro-batches:
  4096 attentions = M x 16 layers x (forward + backward) and 24,576 GeMMs = M x 16 x
  12; with S = 4096 that is Table VII's send volume too (2^30 elements = 128 x
  [S/tp, H] = 128 x [1024, 8192]). test_table7_volumes reads the row as 32
  micro-batches of 16384 tokens, which moves the same volume.
- Mixtral EP=8 PP=4 (32 GPUs): ep splits the batch as well as the experts, so 8
  replicas of 128 / 8 = 16 micro-batches (256 attentions = 16 x 8 layers x 2). It
  trains with Megatron's distributed optimizer (stg-shard zero=1): the weights outside
  the experts are whole on the 8 ep ranks, so their gradients are reduce-scattered
  over ep and the updated weights all-gathered, once per step, in Megatron's buckets
  (max(40M, 1M x 8) elements): on the first stage one per layer (each layer's 42M
  attention and router weights fill one) and one for the embedding - the measured 9
  and 9. (Table VII lists no volume for them, where ours move 1.74 GiB and 111 MiB;
  its 8 replicas must sum those gradients somehow, so we compare the counts only.)
- Pipeline rows count the first stage's GPU (rank 0), as test_table7_volumes does.
- Counting: a GeMM is a GEMM node (the emitter fuses Q/K/V, gate/up and their
  gradients as Megatron's fused QKV and fc1 run them: 4 forward + 8 backward per dense
  layer); an expert's batched GEMM counts as one (Megatron runs each of the rank's
  experts; with EP=8 and 8 experts, one). P2P counts the GPU's sends, one activation
  per micro-batch on the first stage, as STAGE's synthesized column counts them; see
  test_p2p_measured_lies_between_sends_and_batched_calls for why no count fits every
  row.
"""

from __future__ import annotations

import re

import pytest

from stagec.dialects import make_context
from stagec.frontends.templates import build_model, load_config
from stagec.passes.schedule.pipeline import schedule
from stagec.passes.stg_autodiff import StgAutodiff
from stagec.runtime.chakra import emit as E
from stagec.runtime.chakra.schema import NodeType
from stagec.tools.pipeline_spec import build_pipeline

# name: (config, overrides, passes, micro-batches, bindings, Table VI measured counts)
ROWS = {
    "gpt3-5b tp=8 sp": (
        "gpt3-5b", {}, "stg-shard{tp=8 sp=true},stg-match-collectives", 128, {"B": 1, "S": 2048},
        {"gemm": 37248, "attention": 6144, "elementwise": 24832, "p2p": 0, "all_reduce": 514, "all_to_all": 0,
         "all_gather": 18816, "reduce_scatter": 12416},
    ),
    "gpt3-5b pp=8": (
        "gpt3-5b", {}, "stg-pipeline{pp=8}", 128, {"B": 1, "S": 2048},
        {"gemm": 4608, "attention": 768, "elementwise": 3072, "p2p": 136, "all_reduce": 2, "all_to_all": 0,
         "all_gather": 0, "reduce_scatter": 0},
    ),
    "gpt3-5b fsdp=8": (
        "gpt3-5b", {}, "stg-shard{fsdp=8},stg-match-collectives", 16, {"B": 64, "S": 2048},
        {"gemm": 4656, "attention": 768, "elementwise": 3104, "p2p": 0, "all_reduce": 17, "all_to_all": 0,
         "all_gather": 784, "reduce_scatter": 400},
    ),
    "llama3-70b tp=8": (
        "llama3-70b", {"num_hidden_layers": 32}, "stg-shard{tp=8},stg-match-collectives", 128, {"B": 1, "S": 4096},
        {"gemm": 49536, "attention": 8192, "elementwise": 24832, "p2p": 0, "all_reduce": 16897, "all_to_all": 0,
         "all_gather": 0, "reduce_scatter": 0},
    ),
    "llama3-70b tp=4 pp=2": (
        "llama3-70b", {"num_hidden_layers": 32},
        "stg-shard{tp=4 sp=true},stg-match-collectives,stg-pipeline{pp=2}", 128, {"B": 1, "S": 4096},
        {"gemm": 24576, "attention": 4096, "elementwise": 12288, "p2p": 130, "all_reduce": 2, "all_to_all": 0,
         "all_gather": 12416, "reduce_scatter": 8320},
    ),
    "mixtral-8x7b ep=8 pp=4": (
        "mixtral-8x7b", {}, "stg-shard{ep=8 zero=1},stg-match-collectives,stg-pipeline{pp=4}", 16, {"B": 8, "S": 4096},
        {"gemm": 1920, "attention": 256, "elementwise": 512, "p2p": 16, "all_reduce": 2, "all_to_all": 512,
         "all_gather": 9, "reduce_scatter": 9},
    ),
}

WITHIN_5_PERCENT = ("gemm", "attention", "all_gather", "reduce_scatter", "all_to_all", "p2p")

# Where a required count cannot match, and why (checked exactly instead, so a change
# shows up here).
EXPLAINED = {
    # The first stage sends 128 activations; the measured 136 is nearer its 135 batched
    # p2p calls (Megatron's 1F1B: 7 warm-up sends, 121 send+recv pairs, 7 cool-down
    # recvs). Counting calls instead puts Mixtral's row at 19 against 16 (18.8%): the
    # measured pipeline rows contradict each other (test below).
    ("gpt3-5b pp=8", "p2p"): 128,
}


def p2p_calls(program) -> int:
    """Megatron's p2p calls: a send and a recv issued together (no compute node between
    them in the schedule) are one batched call (batch_isend_irecv), as 1F1B's
    send_forward_recv_backward is."""
    calls, in_run = 0, False
    for s in program.node_static:
        kind = program.statics[s].type
        if kind in (NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE):
            calls += not in_run
            in_run = True
        elif kind == NodeType.COMP_NODE:
            in_run = False
    return calls


def first_stage(config: str, overrides: dict, passes: str, micro_batches: int, bindings: dict):
    """The emitted program of the first GPU (rank 0)."""
    from stagec.frontends.templates.named import NAMED_CONFIGS

    named = {k: v for k, v in NAMED_CONFIGS[config].items() if not k.startswith("_")}
    module = build_model(load_config({**named, **overrides}), "bf16")
    # bf16 gradient buffers as Megatron keeps them (test_table7_volumes)
    StgAutodiff(micro_batches=micro_batches, optimizer="adamw", grad_dtype="param").apply(make_context(), module)
    build_pipeline(f"builtin.module({passes})", mlir_syntax=True).apply(make_context(), module)
    programs, _ = E.build_programs(schedule(module), bindings)
    return next(p for p in programs if 0 in p.ranks)


def counts(config: str, overrides: dict, passes: str, micro_batches: int, bindings: dict) -> dict[str, int]:
    program = first_stage(config, overrides, passes, micro_batches, bindings)
    out = dict(program.counts())
    out["p2p"] = out.get("send", 0)
    return out


@pytest.fixture(scope="module", params=sorted(ROWS))
def row(request):
    *setup, measured = ROWS[request.param]
    return request.param, counts(*setup), measured


def test_key_counts_within_5_percent_of_measured(row):
    name, ours, measured = row
    for kind in WITHIN_5_PERCENT:
        got = ours.get(kind, 0)
        if (name, kind) in EXPLAINED:
            assert got == EXPLAINED[name, kind], (kind, got)
            continue
        assert abs(got - measured[kind]) <= 0.05 * measured[kind], (kind, got, measured[kind])


def test_sends_are_one_per_micro_batch_on_pipeline_rows(row):
    name, ours, measured = row
    if "pp=" in name:
        micro_batches = ROWS[name][3]
        assert ours["send"] == ours["recv"] == micro_batches


# Table VI's other pipeline rows, p2p only: (config, overrides, passes, micro-batches,
# bindings, measured P2P). Megatron pads GPT-3's vocabulary to a multiple of 128 x tp.
P2P_ONLY_ROWS = {
    "llama3-70b tp=4 dp=2 pp=2": (
        "llama3-70b", {"num_hidden_layers": 32}, "stg-shard{dp=2 tp=4},stg-match-collectives,stg-pipeline{pp=2}",
        64, {"B": 2, "S": 4096}, 65,
    ),
    "gpt3-175b tp=4 dp=2 pp=8 sp": (
        "gpt3-175b", {"vocab_size": 50688}, "stg-shard{dp=2 tp=4 sp=true},stg-match-collectives,stg-pipeline{pp=8}",
        64, {"B": 2, "S": 2048}, 67,
    ),
    "mixtral-8x7b tp=4 ep=8 pp=4 sp": (
        "mixtral-8x7b", {}, "stg-shard{ep=8 tp=4 sp=true},stg-match-collectives,stg-pipeline{pp=4}",
        16, {"B": 8, "S": 4096}, 16,
    ),
}


def test_p2p_measured_lies_between_sends_and_batched_calls():
    """Table VI's measured P2P column cannot be one count of the first stage. Per row:
    micro-batches M, stages pp, measured, our sends (M) and batched calls (1F1B's
    M + pp - 1):

        GPT-3 5B PP=8            M=128 pp=8   136   sends 128 (5.9%)   calls 135 (0.7%)
        Llama-3 70B TP=4 PP=2    M=128 pp=2   130   sends 128 (1.5%)   calls 129 (0.8%)
        Mixtral EP=8 PP=4        M=16  pp=4    16   sends 16  (0%)     calls 19 (18.8%)
        Llama-3 70B TP4 DP2 PP2  M=64  pp=2    65   sends 64  (1.5%)   calls 65  (0%)
        GPT-3 175B TP4 DP2 PP8   M=64  pp=8    67   sends 64  (4.5%)   calls 71  (6.0%)
        Mixtral TP4 EP8 PP4      M=16  pp=4    16   sends 16  (0%)     calls 19 (18.8%)

    Every measured value lies between the two counts, but neither is within 5% on all
    rows, and no other stage of Megatron's 1F1B does better (its last stage makes
    M + 1 calls and M sends, a middle one about 2M of each). Sends fit five of the six
    rows, so the P2P column above counts them."""
    rows = {name: (*setup[:5], setup[5]["p2p"]) for name, setup in ROWS.items() if "pp=" in name}
    rows |= P2P_ONLY_ROWS
    fits = {"sends": 0, "calls": 0}
    for name, (*setup, measured) in rows.items():
        program = first_stage(*setup)
        sends, calls = program.counts()["send"], p2p_calls(program)
        micro_batches, pp = setup[3], int(re.search(r"pp=(\d+)", setup[2])[1])
        assert (sends, calls) == (micro_batches, micro_batches + pp - 1), name
        assert 0.95 * sends <= measured <= 1.05 * calls, name
        fits["sends"] += abs(sends - measured) <= 0.05 * measured
        fits["calls"] += abs(calls - measured) <= 0.05 * measured
    assert fits == {"sends": 5, "calls": 3}, fits  # of 6 rows: neither fits all


def test_all_reduce_counts_and_why_they_differ(row):
    """AllReduce per GPU. Ours = the per-micro-batch collectives the IR has, plus the
    step's gradient buckets:
    - the vocab-parallel loss: 3 all-reduces per micro-batch (max, sum of
      exponentials, target logit; Megatron's vocab_parallel_cross_entropy), where the
      vocabulary is split over tp;
    - TP without SP: 4 a layer (2 forward, 2 backward) and the embedding's;
    - the mean loss over data-parallel ranks: stg-autodiff reduces it per
      micro-batch, Megatron once per step for logging (its measured 2 on pipeline
      rows: that and the tied-embedding or norm reduction);
    - DDP gradient buckets (25 MiB); Mixtral's run uses the distributed optimizer
      instead, whose buckets are reduce-scatters and all-gathers (module doc).
    """
    name, ours, measured = row
    got = ours.get("all_reduce", 0)
    expected = {
        # GPT TP=8 SP, 128 micro-batches: embedding 1 + loss 3 per micro-batch, and one
        # bucket of the tp-partial norm and bias gradients: 513 vs 514 measured
        "gpt3-5b tp=8 sp": 128 * 4 + 1,
        # the first stage: the tied embedding's gradient with the last stage, once
        "gpt3-5b pp=8": 1,
        # Llama TP=8: 32 layers x 4 + embedding 1 + head input gradient 1 + loss 3, per
        # micro-batch; no gradient needs reducing (dp=1, no SP): 17,024 vs 16,897 (0.8%)
        "llama3-70b tp=8": 128 * (32 * 4 + 1 + 1 + 3),
        "llama3-70b tp=4 pp=2": 1,
        # Mixtral's first stage: no tied weight, no tp, its gradients reduce-scattered;
        # the measured 2 come from outside the training step stg builds (Megatron's
        # step bookkeeping, e.g. the gradient norm of clipping)
        "mixtral-8x7b ep=8 pp=4": 0,
    }
    if name in expected:
        assert got == expected[name], got
        if measured["all_reduce"] >= 100:
            assert abs(got - measured["all_reduce"]) <= 0.05 * measured["all_reduce"]
    else:
        assert got > 0


def test_elementwise_counts_exceed_the_fused_kernels(row):
    """ElementWise: stg keeps every elementwise op (norms, activations, residual adds,
    rotary, casts and fp32 gradient accumulation, the Adam update per tensor) as its own
    node; the measured traces fuse them into fewer kernels (stage.md §V-C: "usually
    fused together, or with other compute operators"), e.g. Megatron accumulates
    weight gradients inside the GEMM (gradient_accumulation_fusion) and fuses
    bias-GeLU and SwiGLU. So ours is larger, never smaller."""
    name, ours, measured = row
    assert ours["elementwise"] >= measured["elementwise"]
