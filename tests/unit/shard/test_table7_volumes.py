"""Per-GPU communication volume by collective type, against stage.md Table VII's
*measured* values (within 5%).

Units: Table VII's "MB" are millions of elements ('.' is a thousands separator in the
paper's tables); stagec counts bytes, and with bf16 training every collective here
moves bf16, so bytes / 2 / 1e6 is the table's unit. A collective's volume is its
input buffer on the rank (Chakra's comm_size): an all-gather's shard, a
reduce-scatter's whole buffer.

Reading the runs (documented, not fitted to the volumes):
- "Micro Batch / Batch" is per data-parallel replica: the FSDP=8 row runs 128 / 8 = 16
  micro-batches of 8 sequences on every rank (global batch 1024). Table VI agrees:
  768 attentions = 16 micro-batches x 24 layers x (forward + backward).
- GPT-3 5B is NeMo's 5b config (24 layers, H 4096, sequence 2048).
- Table VI's counts for Llama-3 70B TP=8 (130 all-reduces per micro-batch = 4 per
  layer + 2, 8192 attentions = 128 x 2 x 32) say the run had 32 layers; its volumes
  then give 4096 tokens per micro-batch.
- Pipeline rows report the first stage's GPU (rank 0): it sends activations forward
  and receives their gradients (2^30 elements = 128 micro-batches x 2048 x 4096 for
  GPT-3 5B, exactly Table VII's 1073.742). The Llama-3 70B TP=4 PP=2 row (32 layers as
  above, 16 per stage) moves 2^25 elements per micro-batch, a [S/tp, H] = [S/4, 8192]
  sequence-parallel activation: 16384 tokens per micro-batch.
- Megatron keeps bf16 gradient buffers (grad_reduce_in_fp32 off), so the tied
  embedding's gradient all-reduce between the first and last stage is bf16
  (GPT-3 5B PP=8: V x H, once per step): stg-autodiff{grad_dtype=param}.
- Zero entries: a few per-step reductions of 1-D gradients (norms, biases) and the
  vocab-parallel loss's per-token all-reduces are below the table's resolution; a
  zero measured value is met when ours is below 0.1% of the row's total volume.
"""

from __future__ import annotations

import pytest

from stagec.dialects import make_context
from stagec.frontends.templates import build_model, load_config
from stagec.passes.analysis.accounting import account
from stagec.passes.stg_autodiff import StgAutodiff
from stagec.tools.pipeline_spec import build_pipeline

KINDS = ("send", "recv", "all_reduce", "all_gather", "reduce_scatter")

ROWS = {
    # name: (config, overrides, passes, micro-batches, bindings, measured MB per kind)
    "gpt3-5b tp=8 sp": (
        "gpt3-5b", {}, "stg-shard{tp=8 sp=true},stg-match-collectives", 128, {"B": 1, "S": 2048},
        {"send": 0.0, "recv": 0.0, "all_reduce": 1075.126, "all_gather": 19730.006, "reduce_scatter": 104152.957},
    ),
    "gpt3-5b fsdp=8": (
        "gpt3-5b", {}, "stg-shard{fsdp=8},stg-match-collectives", 16, {"B": 64, "S": 2048},
        {"send": 0.0, "recv": 0.0, "all_reduce": 0.0, "all_gather": 19761.349, "reduce_scatter": 80760.930},
    ),
    "llama3-70b tp=8": (
        "llama3-70b", {"num_hidden_layers": 32}, "stg-shard{tp=8},stg-match-collectives", 128, {"B": 1, "S": 4096},
        {"send": 0.0, "recv": 0.0, "all_reduce": 558315.340, "all_gather": 0.0, "reduce_scatter": 0.0},
    ),
    "gpt3-5b pp=8": (
        "gpt3-5b", {}, "stg-pipeline{pp=8}", 128, {"B": 1, "S": 2048},
        {"send": 1073.742, "recv": 1073.742, "all_reduce": 206.045, "all_gather": 0.0, "reduce_scatter": 0.0},
    ),
    "llama3-70b tp=4 pp=2": (
        "llama3-70b", {"num_hidden_layers": 32}, "stg-shard{tp=4 sp=true},stg-match-collectives,stg-pipeline{pp=2}", 32, {"B": 1, "S": 16384},
        {"send": 1073.742, "recv": 1073.742, "all_reduce": 0.0, "all_gather": 104152.957, "reduce_scatter": 279172.874},
    ),
}


def volumes(config_name, overrides, passes, micro_batches, bindings):
    config = load_config({**_named(config_name), **overrides})
    module = build_model(config, "bf16")
    StgAutodiff(micro_batches=micro_batches, optimizer="adamw", grad_dtype="param").apply(make_context(), module)
    build_pipeline(f"builtin.module({passes})", mlir_syntax=True).apply(make_context(), module)
    function = "train_step_stage0" if "stg-pipeline" in passes else None  # the first stage's GPU
    (rank,) = account(module, bindings, function=function).rank_classes
    return {k: rank.comm.bytes[k] / 2 / 1e6 for k in KINDS}, rank.comm


def _named(name):
    from stagec.frontends.templates.named import NAMED_CONFIGS

    return {k: v for k, v in NAMED_CONFIGS[name].items() if not k.startswith("_")}


@pytest.mark.parametrize("row", sorted(ROWS))
def test_volume_within_5_percent_of_table7_measured(row):
    *setup, measured = ROWS[row]
    ours, _ = volumes(*setup)
    total = sum(measured.values())
    for kind in KINDS:
        if measured[kind] == 0:
            assert ours[kind] <= 1e-3 * total, (kind, ours[kind])
        else:
            assert abs(ours[kind] - measured[kind]) <= 0.05 * measured[kind], (kind, ours[kind], measured[kind])
