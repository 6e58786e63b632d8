"""FLOPs, tokens and KV-cache bytes of prefill and decode steps (docs/inference.md),
against values derived by hand here; the collectives of their EP and DP versions (the
paper's DeepSeek-R1 study, stage.md §VI-C); `stagec trace --phase decode` traces that
`stagec check-trace` accepts.

Sizes are the tiny configs of tests/unit/templates/tiny_configs.py:
  llama: H=16, N=4 heads, KV=2 kv heads, D=4, F=24, L=2 layers, V=32 (untied head).
  mla:   H=16, N=4, no q LoRA, DN=4, DR=4, DV=6, KVR=8, F=24 (1 dense layer), then
         2 MoE layers of E=4 experts, top-2, FE=8, shared FS=16, capacity factor 1:
         C = 2*B*S/4 slots per expert; V=32.
"""

from __future__ import annotations

import pytest
from tests.unit.templates.tiny_configs import TINY

from stagec.frontends.templates import load_config
from stagec.passes.analysis.accounting import account
from stagec.runtime.chakra.check import check_trace
from stagec.tools import stagec_trace
from stagec.tools.errors import UsageError
from stagec.tools.step import build_inference_step

BF16 = 2  # bytes


def _account(name, phase, batch, seq, context, strategy=None):
    module, bindings = build_inference_step(load_config(TINY[name]), phase, batch, seq, context, strategy)
    return account(module, bindings), bindings


def test_llama_decode_flops_and_kv_cache():
    B, T, H, N, KV, D, F, L, V = 2, 8, 16, 4, 2, 4, 24, 2, 32
    result, bindings = _account("llama", "decode", B, 8, T)
    assert bindings == {"B": B, "S": 1, "T": T, "M": 1}
    rc = result.rank_classes[0]
    # GEMMs per token and layer: q 2*H*N*D, k and v 2*H*KV*D each, o 2*N*D*H, gate,
    # up and down 2*H*F each; the LM head 2*H*V once
    per_layer = 2 * H * N * D + 2 * (2 * H * KV * D) + 2 * N * D * H + 3 * 2 * H * F
    assert per_layer == 3840
    assert rc.flops.gemm == B * (L * per_layer + 2 * H * V) == 17408
    # attention: one query over T cached keys, QK^T and PV: 2*N*(D + D) per key, the
    # T - 1 earlier keys in full, the query's own position half (the causal
    # convention of a square block, s^2/2)
    assert rc.flops.attention == L * 2 * B * N * (D + D) * (T - 1 + 0.5) == 1920
    # the cache: keys and values of every layer, B x T positions of KV x D
    kv_bytes = 2 * L * B * T * KV * D * BF16
    assert rc.memory.persistent["kv_cache"] == kv_bytes == 1024
    assert rc.memory.breakdown["kv_cache"] == kv_bytes
    assert rc.memory.persistent["gradients"] == rc.memory.persistent["optimizer_states"] == 0
    assert result.tokens == B  # one new token per sequence
    assert set(rc.flops_by_phase) >= {""} and rc.flops_by_phase["backward"].total == 0


def test_llama_prefill_flops_and_kv_cache():
    B, S, T, H, N, KV, D, F, L, V = 2, 6, 8, 16, 4, 2, 4, 24, 2, 32
    result, bindings = _account("llama", "prefill", B, S, T)
    assert bindings == {"B": B, "S": S, "T": T, "M": 1}
    rc = result.rank_classes[0]
    per_layer = 3840  # as in the decode test, per token
    # every prompt token through the layers, the LM head on the last position only
    assert rc.flops.gemm == B * S * L * per_layer + B * 2 * H * V == 94208
    # the prompt attends over its own S keys: the causal half of S x S
    assert rc.flops.attention == L * 2 * B * N * S * S * (D + D) // 2 == 4608
    # the cache is sized for the context T, not the prompt
    assert rc.memory.persistent["kv_cache"] == 2 * L * B * T * KV * D * BF16 == 1024
    assert result.tokens == B * S


def test_mla_moe_decode_flops_and_latent_cache():
    B, T, H, N, DN, DR, DV, KVR, F, FE, FS, E, V = 2, 8, 16, 4, 4, 4, 6, 8, 24, 8, 16, 4, 32
    layers, dense, moe = 3, 1, 2
    result, _ = _account("mla", "decode", B, 8, T)
    rc = result.rank_classes[0]
    # attention GEMMs per token and layer (the absorbed form): q_proj 2*H*N*(DN+DR),
    # kv_a 2*H*(KVR+DR), q_nope @ W_UK 2*N*DN*KVR, latent out @ W_UV 2*N*KVR*DV,
    # o_proj 2*N*DV*H
    attn = 2 * H * N * (DN + DR) + 2 * H * (KVR + DR) + 2 * N * DN * KVR + 2 * N * KVR * DV + 2 * N * DV * H
    assert attn == 2816
    C = 2 * B * 1 // E  # top-2 x B tokens / 4 experts at capacity factor 1 = 1 slot
    experts = 3 * 2 * E * C * H * FE  # gate, up, down over every expert's C slots
    router = B * 2 * H * E
    shared = B * 3 * 2 * H * FS
    gemm = B * layers * attn + B * dense * 3 * 2 * H * F + moe * (router + experts + shared) + B * 2 * H * V
    assert rc.flops.gemm == gemm == 36352
    # N heads over the one latent "head" of KVR + DR values, as key and as value
    assert rc.flops.attention == layers * 2 * B * N * 2 * (KVR + DR) * (T - 1 + 0.5) == 8640
    # DeepSeek's cache: the latent and the rope key, KVR + DR values per position and layer
    assert rc.memory.persistent["kv_cache"] == layers * B * T * (KVR + DR) * BF16 == 1152


def test_mla_moe_decode_under_ep_all_to_all_volume():
    """--ep 2, as the paper's study runs DeepSeek: experts over ep, everything else
    data-parallel over the same ranks. Each MoE layer sends its dispatched tokens to
    the experts' ranks and combines them back: two all-to-alls of the local dispatch
    buffer [E, C/ep, H]."""
    B, T, H, E, ep, moe = 4, 8, 16, 4, 2, 2
    result, _ = _account("mla", "decode", B, 8, T, {"ep": ep})
    (rc,) = result.rank_classes
    assert rc.ranks == (0, 1)
    C = 2 * B * 1 // E  # = 2 slots per expert over the whole batch
    buffer = E * (C // ep) * H * BF16  # = 128 bytes
    comm = rc.comm.as_dict()
    assert set(comm) == {"all_to_all"}
    assert comm["all_to_all"] == {"ops": 2 * moe, "bytes": 2 * moe * buffer} == {"ops": 4, "bytes": 512}
    # each rank caches its own B / ep sequences
    assert rc.memory.persistent["kv_cache"] == 3 * (B // ep) * T * (8 + 4) * BF16


def test_llama_decode_under_dp_has_no_communication():
    """Pure data parallelism: every rank decodes its own sequences with whole weights."""
    B, T, dp = 4, 8, 2
    result, _ = _account("llama", "decode", B, 8, T, {"dp": dp})
    (rc,) = result.rank_classes
    assert rc.comm.as_dict() == {}
    assert rc.flops.gemm == (B // dp) * (2 * 3840 + 2 * 16 * 32)
    assert rc.memory.persistent["kv_cache"] == 2 * 2 * (B // dp) * T * 2 * 4 * BF16


@pytest.mark.parametrize("strategy, message", [
    ({"pp": 2}, "--pp is not modelled for --phase decode"),
    ({"cp": 2}, "--cp is not modelled for --phase decode"),
])
def test_unsupported_strategies_are_usage_errors(strategy, message):
    with pytest.raises(UsageError, match=message):
        build_inference_step(load_config(TINY["llama"]), "decode", 4, 8, 8, strategy)


def test_batch_must_divide_over_the_data_parallel_ranks():
    with pytest.raises(UsageError, match=r"--batch 5 does not divide over the 2 data-parallel ranks"):
        build_inference_step(load_config(TINY["llama"]), "decode", 5, 8, 8, {"dp": 2})


def test_trace_decode_passes_check_trace(tmp_path, capsys):
    config = tmp_path / "mla.json"
    import json

    config.write_text(json.dumps({**TINY["mla"], "_name_or_path": "tiny-mla"}))
    out = tmp_path / "traces"
    argv = ["--model", str(config), "--phase", "decode", "--ep", "2", "--batch", "4", "--seq", "8",
            "--out", str(out), "--quiet", "--workers", "1"]
    assert stagec_trace.main(argv) == 0
    assert "decode step of 4 sequence(s) x 1 token(s) = 4 tokens over a KV cache of 8 positions" in capsys.readouterr().out
    report = check_trace(out)
    assert report.ok, report.defects
    ranks = report.to_json()["ranks"]
    assert set(ranks) == {"0", "1"}
    # the four all-to-alls of the EP test above, on each rank
    assert ranks["0"]["ALL_TO_ALL"] == {"count": 4, "bytes": 512}
