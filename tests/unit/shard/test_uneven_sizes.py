"""Padded (uneven) fsdp shards: sizes, traffic and memory derived by hand
(docs/sharding.md, "Uneven shards").

Tiny Llama (tests/unit/templates/tiny_configs.py): H = 16, N = 4 heads of D = 4,
KV = 2, F = 24, V = 32, L = 2 layers, untied head, f32, AdamW, one micro-batch of
B = 3, S = 4, fsdp = 3. 3 divides F = 24 only, so every other parameter is padded
along the whole dim that pads least (ceil(size/3) per rank):

    parameter (per layer)        global      stored            per rank
    input/post_attention norm    [16]        [H/fsdp:6]        6            (16 -> 18)
    q_proj  [D*N, H] = [16, 16]  256         [D*N/fsdp:6, H]   6*16 = 96    (not 16*6: ties go to the first dim)
    k/v_proj [D*KV, H] = [8, 16] 128         [D*KV/fsdp:3, H]  3*16 = 48    (padding H: 8*6 = 48, a tie)
    o_proj  [H, D*N] = [16, 16]  256         [H/fsdp:6, D*N]   96
    gate/up [F, H], down [H, F]  384         F/fsdp            128 each (even)
    a layer                      1952                          6+96+48+48+96+6+3*128 = 684
    model.norm [16]              16          [H/fsdp:6]        6
    embed_tokens, lm_head [V, H] 512         [V/fsdp:11, H]    11*16 = 176 (padding H: 32*6 = 192)

    per rank: 2*684 + 6 + 2*176 = 1726 parameters (1648 = 4944/3 unpadded)
    global:   2*1952 + 16 + 2*512 = 4944
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

from tests.unit.templates.tiny_configs import TINY

from stagec.dialects import make_context
from stagec.frontends.templates import build_model, load_config
from stagec.passes.analysis.accounting import account
from stagec.passes.stg_autodiff import StgAutodiff
from stagec.tools.pipeline_spec import build_pipeline

PER_RANK = 2 * 684 + 6 + 2 * 176  # 1726, see the table above


def _tiny_fsdp3():
    module = build_model(load_config(TINY["llama"]), "f32")
    StgAutodiff(micro_batches=1, optimizer="adamw").apply(make_context(), module)
    build_pipeline("builtin.module(stg-shard{fsdp=3},stg-match-collectives)", mlir_syntax=True).apply(make_context(), module)
    module.verify()
    return module


def test_padded_layouts_sizes_traffic_and_memory():
    module = _tiny_fsdp3()
    stored = {op.tensor_name.data: op.result.type.layout_str() for op in module.walk() if op.name == "stg.param"}
    assert stored["model.layers.input_layernorm.weight"] == "[H/fsdp:6]"
    assert stored["model.layers.self_attn.q_proj.weight"] == "[D*N/fsdp:6, H]"
    assert stored["model.layers.self_attn.k_proj.weight"] == "[D*KV/fsdp:3, H]"
    assert stored["model.layers.self_attn.o_proj.weight"] == "[H/fsdp:6, D*N]"
    assert stored["model.layers.mlp.gate_proj.weight"] == "[F/fsdp, H]"
    assert stored["lm_head.weight"] == "[V/fsdp:11, H]"

    acc = account(module, {"B": 3, "S": 4})
    (rank,) = acc.rank_classes
    assert acc.params == 4944
    assert rank.params == PER_RANK == 1726
    doc = acc.to_json()["rank_classes"][0]
    memory = doc["persistent_bytes"]
    # f32: 4 bytes a parameter; the gradient buffer is sharded like it (fsdp); AdamW
    # keeps exp_avg and exp_avg_sq (2 * 6904) and a 4-byte step count per parameter
    # tensor: 9 per layer * 2 + norm + embed + head = 21
    assert memory["weights"] == 4 * PER_RANK == 6904
    assert memory["gradients"] == 6904
    assert memory["optimizer_states"] == 2 * 6904 + 4 * 21 == 13892
    comm = doc["communication"]
    # every parameter is all-gathered in the forward and again in the backward: the
    # shard is what a rank sends (Chakra's comm_size), 2 * 21 gathers of 6904 bytes in all
    assert comm["all_gather"] == {"ops": 42, "bytes": 2 * 6904}
    # each gradient is reduce-scattered once (one micro-batch) from the padded buffer,
    # 3 ranks x the shard, as ncclReduceScatter takes recvcount * nranks: 3 * 6904 =
    # 20712 where the unpadded gradients hold 4 * 4944 = 19776
    assert comm["reduce_scatter"] == {"ops": 21, "bytes": 3 * 6904}


def test_stats_llama3_70b_fsdp48():
    """`stagec stats --model llama3-70b --fsdp 48 --seq 1024` runs and each rank holds
    the padded shards. Llama-3 70B: H = 8192, F = 28672, V = 128256, D*N = 8192,
    D*KV = 1024, L = 80. 48 divides V (2672 rows) only; the rest pads the dim that pads
    least, e.g. k_proj [1024, 8192]: ceil(1024/48) * 8192 = 22 * 8192 = 180224 or
    1024 * ceil(8192/48) = 1024 * 171 = 175104 -> padded along H, 175104 per rank where a
    flat parameter (FSDP) would hold ceil(1024 * 8192 / 48) = 174763."""
    out = subprocess.run(
        [sys.executable, "-m", "stagec.tools.stagec_cli", "stats", "--model", "llama3-70b", "--fsdp", "48", "--seq", "1024", "--json"],
        capture_output=True, text=True, check=True,
    )
    doc = json.loads(out.stdout)
    H, L, V, F, Q, K, d = 8192, 80, 128256, 28672, 8192, 1024, 48
    norm = math.ceil(H / d)  # 171 = ceil(8192/48), FSDP's ceil(N/d) for a 1-D tensor
    q = Q * norm  # [8192, 8192]: 8192 * 171 = 1400832
    k = K * norm  # [1024, 8192]: 175104
    mlp = math.ceil(F / d) * H  # [28672, 8192]: 598 * 8192 = 4898816 (< 28672 * 171 = 4902912)
    layer = 2 * norm + 2 * q + 2 * k + 3 * mlp
    per_rank = L * layer + 2 * (V // d) * H + norm  # embedding and head divide: 2672 rows each
    assert per_rank == 1471671179
    (rank,) = doc["rank_classes"]
    assert rank["params"] == per_rank
    assert doc["params"] == 70553706496
    # a flat parameter's padding (sum of ceil(N/48)) holds 1469869179: per-dim padding
    # holds 0.12% more (docs/sharding.md)
    flat = L * (2 * norm + 2 * math.ceil(Q * H / d) + 2 * math.ceil(K * H / d) + 3 * math.ceil(F * H / d)) + 2 * V * H // d + norm
    assert flat == 1469869179
    assert 0 < per_rank / flat - 1 < 0.0013
