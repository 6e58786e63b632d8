"""Peak device memory per GPU against stage.md Table V's *measured* column.

The GPT-3 5B runs are Table VII's (tests/unit/shard/test_table7_volumes.py derives
them from Table VI's counts): GPT-3 5B (NeMo's 5b config: 24 layers, H 4096,
vocabulary 51200, sequence 2048) on one 8-GPU node; FSDP=8 with 8 sequences per
micro-batch on every rank, TP=8 with sequence parallelism and PP=8 (1F1B) with one
sequence per micro-batch. All three train in bf16 with full activation recompute of
each layer (NeMo's activations_checkpoint_granularity=full) and Megatron's mixed
precision: bf16 weights, fp32 gradients, fp32 master weights and Adam states, 18 bytes
per parameter.

Llama-3 70B TP=16 is Table I's run: 16 GPUs (two nodes), a batch of 32 sequences of
8192 tokens, so with tp=16 alone 32 micro-batches of one sequence; sequence parallel,
the same mixed precision, and no recompute (see below). Llama-3 70B has 8 key/value
heads, so tp = 16 holds each one on 2 ranks (stg-shard's tp_kv = 8 x tp_q = 2).

Table V's measured peak includes what no trace has: PyTorch's CUDA context (about
1 GB, the paper's footnote) and the caching allocator's slack. stagec's peak is the
live tensors' bytes (STAGE's own definition, §V-B), so it should come in somewhat
below the measured value, as STAGE's synthesized column does. The reserved peak
(passes/analysis/reserved.py, h100-sxm) adds them: a replay of the step through the
caching-allocator model, the CUDA context, cuBLAS workspaces and NCCL's buffers, with
the same parameters for every row (docs/memory.md).

How far ours is from measured (GB = 1e9 bytes). The live peak follows the memory
model's rules (passes/analysis/memory.py); two of them are what these frameworks do
and change these rows: FSDP's mixed precision keeps a parameter only as its fp32
master (16 bytes per parameter: NeMo's FSDP strategy turns megatron_amp_O2 off and
PyTorch FSDP casts a bf16 shard before each all-gather), and a bf16 gradient is
added into the fp32 one without an fp32 copy (Megatron's `main_grad.add_(grad)`):

| run                 | measured | STAGE synthesized | stagec live | live vs measured |
|---------------------|----------|-------------------|-------------|------------------|
| GPT-3 5B FSDP=8     | 18.1     | 16.1              | 16.99       | -6.1%            |
| GPT-3 5B TP=8       | 15.4     | 13.7              | 11.71       | -24.0%           |
| GPT-3 5B PP=8       | 17.5     | 15.2              | 15.71       | -10.2%           |
| Llama-3 70B TP=16   | 94.3     | 92.1              | 95.29       | +1.0%            |

The reserved peak (GB; parts: allocator slack + 0.035 workspaces + 1.0 context + NCCL):

| run               | measured | live  | slack | NCCL  | reserved | vs measured |
|-------------------|----------|-------|-------|-------|----------|-------------|
| GPT-3 5B FSDP=8   | 18.1     | 16.99 | 1.81  | 0.252 | 20.09    | +11.0%      |
| GPT-3 5B TP=8     | 15.4     | 11.71 | 0.27  | 0.252 | 13.26    | -13.9%      |
| GPT-3 5B PP=8     | 17.5     | 15.71 | 0.66  | 0.587 | 17.98    | +2.8%       |
| Llama-3 70B TP=16 | 94.3     | 95.29 | 0.16  | 0.503 | 96.99    | +2.9%       |

PP=8 and Llama-3 70B are within 5%; FSDP=8 and TP=8 are not, and docs/memory.md
("Why two rows miss") says why, with what each would need: FSDP=8's live bytes
alone (16.99) exceed what measured leaves after the context and NCCL (16.8) under
this file's reading of 8 sequences per rank, while Table VIII's compute times say 1
sequence per rank, and then the run's recompute setting decides (-19% or +14%);
TP=8 misses 2.1 GB that nothing in the program or the runtime model holds.

Llama-3 70B: 4.49 B parameters per rank hold 80.9 GB of persistent states, so the
measured 94.3 GB leaves 13.4 GB for activations - one sequence's saved activations
of all 80 layers (14.2 GB here). With full recompute the peak would be 82.37 GB,
12.7% below measured, more than the CUDA context and allocator slack explain, so the
run stored its activations; the test pins both.
"""

from __future__ import annotations

import pytest

from stagec.dialects import make_context
from stagec.frontends.templates import build_model, load_config
from stagec.passes.analysis.accounting import account
from stagec.passes.analysis.reserved import replay, reserved_memory
from stagec.passes.stg_autodiff import StgAutodiff
from stagec.runtime.cost.hardware_description import load_hardware
from stagec.tools.pipeline_spec import build_pipeline

GB = 1e9
# GPT-3 5B (NeMo): 24 layers of 12 H^2 + 13 H parameters, tied V x H embedding, P x H positions
H, L, V, P = 4096, 24, 51200, 2048
PER_LAYER = 12 * H * H + 13 * H
PARAMS = V * H + P * H + L * PER_LAYER + 2 * H
BYTES_PER_PARAM = 2 + 4 + 4 + 4 + 4  # bf16 weight, fp32 grad, master, exp_avg, exp_avg_sq

ROWS = {
    # name: (passes, micro-batches, bindings, measured GB, stagec GB)
    "fsdp=8": ("stg-shard{fsdp=8},stg-match-collectives", 16, {"B": 64, "S": 2048}, 18.1, 16.99),
    "tp=8": ("stg-shard{tp=8 sp=true},stg-match-collectives", 128, {"B": 1, "S": 2048}, 15.4, 11.71),
    "pp=8": ("stg-pipeline{pp=8}", 8, {"B": 1, "S": 2048}, 17.5, 15.71),
}


def peak_rank(passes: str, micro_batches: int, bindings: dict):
    module = build_model(load_config("gpt3-5b"), "bf16")
    StgAutodiff(micro_batches=micro_batches, optimizer="adamw", recompute=True).apply(make_context(), module)
    build_pipeline(f"builtin.module({passes})", mlir_syntax=True).apply(make_context(), module)
    result = account(module, bindings)
    assert result.params == PARAMS == 5_051_228_160
    return max(result.rank_classes, key=lambda rc: rc.memory.peak_bytes), result


@pytest.mark.parametrize("row", ROWS)
def test_gpt3_5b_peak_memory_against_table5(row):
    passes, micro_batches, bindings, measured, ours = ROWS[row]
    rank, _ = peak_rank(passes, micro_batches, bindings)
    mem = rank.memory
    # the persistent states are the rank's parameters at 18 bytes each - 16 under
    # FSDP, whose bf16 shard is a transient cast of the fp32 master (memory.py) - and
    # Adam's step counter of each parameter tensor (a few kB)
    per_param = BYTES_PER_PARAM - 2 if row == "fsdp=8" else BYTES_PER_PARAM
    assert 0 < sum(mem.persistent.values()) - per_param * rank.params < 10_000
    if row == "fsdp=8":
        assert mem.persistent["weights"] == 0
    # the values in the module docstring's table, and how far they are from measured
    assert mem.peak_bytes / GB == pytest.approx(ours, abs=0.005)
    assert abs(mem.peak_bytes / GB - measured) / measured < 0.25


def test_local_parameters_of_each_run():
    fsdp, _ = peak_rank(*ROWS["fsdp=8"][:3])
    assert fsdp.params == PARAMS // 8  # every tensor has a dim that 8 divides
    # stage 0 of 8: the embedding and positions, and 24 / 8 = 3 layers
    first, result = peak_rank(*ROWS["pp=8"][:3])
    assert result.rank_classes[0] is first
    assert first.params == V * H + P * H + 3 * PER_LAYER


def test_1f1b_peak_does_not_grow_with_more_micro_batches():
    """Stage 0 holds at most pp forwards in flight: 8 or 16 micro-batches peak alike
    but for the step's input ids and labels ([M, B, S] i64 each), so Table VII's 128
    need not be unrolled."""
    passes, _, bindings, _, _ = ROWS["pp=8"]
    eight, _ = peak_rank(passes, 8, bindings)
    sixteen, _ = peak_rank(passes, 16, bindings)
    inputs = 2 * (16 - 8) * bindings["B"] * bindings["S"] * 8
    assert sixteen.memory.peak_bytes - eight.memory.peak_bytes == inputs


# Llama-3 70B: 80 layers, H 8192, 64 query heads and 8 key/value heads of 128, ffn
# 28672, untied vocabulary 128256
L70, H70, N70, KV70, D70, F70, V70 = 80, 8192, 64, 8, 128, 28672, 128256
TP = 16


def llama70b_tp16(recompute: bool):
    module = build_model(load_config("llama3-70b"), "bf16")
    StgAutodiff(micro_batches=32, optimizer="adamw", recompute=recompute).apply(make_context(), module)
    build_pipeline("builtin.module(stg-shard{tp=16 sp=true},stg-match-collectives)", mlir_syntax=True).apply(
        make_context(), module
    )
    result = account(module, {"B": 1, "S": 8192})
    assert result.params == 70_553_706_496
    (rank,) = result.rank_classes
    assert len(rank.ranks) == TP
    return rank


def test_llama3_70b_tp16_peak_memory_against_table5():
    rank = llama70b_tp16(recompute=False)
    # each rank: 1/16 of the query heads, ffn and vocabulary; one whole key/value head
    # (k and v rows of 8 / 8 heads, not 8 / 16); the norms whole
    per_layer = 2 * H70 * N70 * D70 // TP + 2 * H70 * D70 * KV70 // KV70 + 3 * H70 * F70 // TP + 2 * H70
    assert rank.params == 2 * V70 * H70 // TP + L70 * per_layer + H70 == 4_494_729_216
    mem = rank.memory
    assert 0 < sum(mem.persistent.values()) - BYTES_PER_PARAM * rank.params < 10_000
    assert mem.peak_bytes / GB == pytest.approx(95.29, abs=0.005)
    assert abs(mem.peak_bytes / GB - 94.3) / 94.3 < 0.011
    # what the run stores besides its states: one sequence's activations of 80 layers
    assert mem.breakdown["activations"] / GB == pytest.approx(14.25, abs=0.01)


def test_llama3_70b_tp16_with_full_recompute_is_far_below_measured():
    """The reason the table's run is taken without recompute (module docstring)."""
    peak = llama70b_tp16(recompute=True).memory.peak_bytes / GB
    assert peak == pytest.approx(82.37, abs=0.005)
    assert (94.3 - peak) / 94.3 > 0.12


# -- the reserved peak (passes/analysis/reserved.py) ----------------------------------------

H100 = load_hardware("h100-sxm")
MIB = 1 << 20
# what every row adds beyond the allocator: 1 GB CUDA context (stage.md §V-B) and
# cuBLAS 32 MiB + cuBLASLt 1 MiB workspaces (through the allocator)
CONTEXT, WORKSPACES = 1_000_000_000, 33 * MIB
RING = 24 * 10 * MIB  # one collective communicator: 24 channels x 10 MiB
P2P_PEER = 32 * 10 * MIB  # one point-to-point peer: 32 channels x 10 MiB

RESERVED = {
    # name: (reserved GB, allocator slack GB, NCCL bytes, measured GB)
    # FSDP=8 and TP=8: the fsdp (tp) communicator of 8
    "fsdp=8": (20.09, 1.81, RING, 18.1),
    "tp=8": (13.26, 0.27, RING, 15.4),
    # PP=8 stage 0: the tied embedding's all-reduce with stage 7, and sends and
    # receives to stage 1 only (one peer)
    "pp=8": (17.98, 0.66, RING + P2P_PEER, 17.5),
}


def reserved_peak(passes: str, micro_batches: int, bindings: dict):
    _, result = peak_rank(passes, micro_batches, bindings)
    peaks = [reserved_memory(rc.memory, H100) for rc in result.rank_classes]
    return max(peaks, key=lambda r: r.peak_bytes), result


@pytest.mark.parametrize("row", RESERVED)
def test_gpt3_5b_reserved_peak_against_table5(row):
    peak, _ = reserved_peak(*ROWS[row][:3])
    ours, slack, nccl, measured = RESERVED[row]
    assert peak.cuda_context_bytes == CONTEXT and peak.library_workspace_bytes == WORKSPACES
    assert peak.nccl_bytes == nccl
    assert peak.allocator_slack_bytes / GB == pytest.approx(slack, abs=0.005)
    # the parts add up; the allocator holds at least the live peak
    assert peak.peak_bytes == peak.live_peak_bytes + peak.allocator_slack_bytes + WORKSPACES + CONTEXT + nccl
    assert peak.allocator_slack_bytes > 0
    assert peak.peak_bytes / GB == pytest.approx(ours, abs=0.005)
    # the module docstring's table: PP=8 within 5% of measured, FSDP=8 and TP=8 not
    # (docs/memory.md "Why two rows miss")
    error = (peak.peak_bytes / GB - measured) / measured
    assert error == pytest.approx({"fsdp=8": 0.110, "tp=8": -0.139, "pp=8": 0.028}[row], abs=0.001)


def test_llama3_70b_tp16_reserved_peak_within_5_percent():
    peak = reserved_memory(llama70b_tp16(recompute=False).memory, H100)
    # tp = 16 over query heads, and the key/value heads' pairs of 2 ranks (tp_q = 2)
    assert sorted(c.ranks for c in peak.communicators) == [2, 16]
    assert peak.nccl_bytes == 2 * RING
    assert peak.allocator_slack_bytes / GB == pytest.approx(0.16, abs=0.005)
    assert peak.peak_bytes / GB == pytest.approx(96.99, abs=0.005)
    assert abs(peak.peak_bytes / GB - 94.3) / 94.3 < 0.05


def test_one_replayed_step_is_the_steady_state():
    """reserved.REPLAY_STEPS = 1: a second and a third step add no segment (FSDP=8
    and PP=8 here; TP=8 and Llama-3 70B in the scale test below)."""
    for row in ("fsdp=8", "pp=8"):
        _, result = peak_rank(*ROWS[row][:3])
        for rc in result.rank_classes:
            one = replay(rc.memory.allocations, (WORKSPACES,), steps=1)
            assert replay(rc.memory.allocations, (WORKSPACES,), steps=3).reserved == one.reserved


@pytest.mark.scale
def test_one_replayed_step_is_the_steady_state_at_scale():
    rank, _ = peak_rank(*ROWS["tp=8"][:3])
    seventy = llama70b_tp16(recompute=False)
    for rc in (rank, seventy):
        one = replay(rc.memory.allocations, (WORKSPACES,), steps=1)
        assert replay(rc.memory.allocations, (WORKSPACES,), steps=3).reserved == one.reserved
