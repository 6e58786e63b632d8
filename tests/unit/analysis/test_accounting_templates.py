"""Accounting of real model templates through stg-autodiff, and the `stagec stats`
command. The FLOP reference is the dense-transformer rule: forward + backward is
6 x (non-embedding parameters, lm head included) x tokens, plus attention."""

import json
import time

import pytest

from stagec.dialects import make_context
from stagec.frontends.templates import build_model, load_config
from stagec.passes.analysis.accounting import account
from stagec.passes.analysis.params import parameter_count
from stagec.passes.stg_autodiff import StgAutodiff
from stagec.tools import stagec_cli


def train_step(name: str, micro_batches: int = 1, recompute: bool = False, optimizer: str = "adamw"):
    module = build_model(load_config(name), "bf16")
    StgAutodiff(optimizer=optimizer, micro_batches=micro_batches, recompute=recompute).apply(make_context(), module)
    return module


# Llama 3 8B (meta-llama/Meta-Llama-3-8B config.json)
H, L, N, KV, D, F, V = 4096, 32, 32, 8, 128, 14336, 128256


@pytest.fixture(scope="module")
def llama8b():
    # 2 micro-batches of B=1 sequences of S=4096 tokens
    return account(train_step("llama3-8b", micro_batches=2), {"B": 1, "S": 4096})


def test_llama3_8b_parameters(llama8b):
    per_layer = H * N * D + 2 * H * KV * D + N * D * H + 3 * H * F + 2 * H  # q k v o, mlp, 2 norms
    params = V * H + L * per_layer + H + V * H  # embedding, layers, final norm, untied lm head
    assert params == 8_030_261_248
    assert llama8b.params == llama8b.rank_classes[0].params == params
    assert parameter_count(train_step("llama3-8b")) == params


def test_llama3_8b_flops_per_iteration(llama8b):
    M, B, S = 2, 1, 4096
    tokens = M * B * S
    assert llama8b.tokens == tokens
    rank = llama8b.rank_classes[0]
    fwd, bwd = rank.flops_by_phase["forward"], rank.flops_by_phase["backward"]
    # matmul weights: q, k, v, o and the MLP per layer, and the lm head; 2 FLOPs per
    # weight per token forward, 4 backward (dX and dW)
    matmul = L * (H * N * D + 2 * H * KV * D + N * D * H + 3 * H * F) + V * H
    assert fwd.gemm == 2 * matmul * tokens
    assert bwd.gemm == 4 * matmul * tokens
    # causal attention forward: 2*B*S^2*N*D per layer (Q K^T and P V, halved by
    # causality); backward 2.5x (flash attention recomputes Q K^T)
    attention_fwd = M * L * 2 * B * S * S * N * D
    assert fwd.attention == attention_fwd
    assert bwd.attention == attention_fwd * 5 // 2
    non_embedding = llama8b.params - V * H  # layers, final norm and lm head
    expected = 6 * non_embedding * tokens + attention_fwd * 7 // 2
    measured = fwd.total + bwd.total
    assert abs(measured - expected) / expected < 0.02
    # the optimizer step: AdamW's 14 FLOPs per parameter, elementwise
    assert rank.flops_by_phase["optimizer"].elementwise == 14 * llama8b.params


def test_llama3_8b_persistent_memory(llama8b):
    mem = llama8b.rank_classes[0].memory
    P = llama8b.params
    tensors = 3 + 9 * L  # embedding, final norm, lm head; 9 tensors per layer
    # bf16 weights, fp32 grads, fp32 master + two fp32 moments, one fp32 step per tensor
    assert mem.persistent["weights"] == 2 * P
    assert mem.persistent["gradients"] == 4 * P
    assert mem.persistent["optimizer_states"] == 12 * P + 4 * tensors
    assert mem.peak_bytes > sum(mem.persistent.values())
    # the peak is in the backward of the first micro-batch, when the saved activations
    # of every layer and the loss's gradient are live
    assert mem.peak_phase == "backward"
    assert mem.peak_loops[0] == ("stg.microbatch", 0, 2)


def test_recompute_trades_activations_for_flops():
    bindings = {"B": 1, "S": 1024}
    plain = account(train_step("llama3.2-1b"), bindings).rank_classes[0]
    recompute = account(train_step("llama3.2-1b", recompute=True), bindings).rank_classes[0]

    def saved_at_end_of_forward(rank):
        timeline = rank.memory.timeline
        last = max(b for phase, _, b in timeline.phase_spans() if phase == "forward")
        return timeline[last].bytes["activations"]

    # recompute saves each layer's input only, not every intermediate of the layer
    assert saved_at_end_of_forward(recompute) < saved_at_end_of_forward(plain) / 4
    assert recompute.memory.breakdown["activations"] < plain.memory.breakdown["activations"]
    assert recompute.flops_by_phase["recompute"].gemm == plain.flops_by_phase["forward"].gemm - 2 * 128256 * 2048 * 1024
    assert recompute.memory.persistent == plain.memory.persistent


def test_an_80_layer_model_stays_fast():
    module = train_step("llama3-70b", micro_batches=8)
    start = time.perf_counter()
    result = account(module, {"B": 1, "S": 4096})
    elapsed = time.perf_counter() - start
    mem = result.rank_classes[0].memory
    assert result.params == 70_553_706_496
    assert len(mem.timeline) > 8 * 80 * 2 * 20  # every layer of every micro-batch unrolled
    assert int(mem.timeline.totals().max()) == mem.peak_bytes
    assert elapsed < 10, f"accounting took {elapsed:.1f} s"


# -- stagec stats --------------------------------------------------------------------------


def stats(capsys, *argv):
    code = stagec_cli.main(["stats", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_stats_json(capsys):
    code, out, err = stats(capsys, "--model", "llama3.2-1b", "--batch", "4", "--micro-batch", "2", "--seq", "512", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["model"] == "llama3.2-1b"
    assert doc["setup"] == {
        "strategy": "one rank", "batch": 4, "micro_batch": 2, "micro_batches": 2, "seq": 512, "dtype": "bf16",
        "optimizer": "adamw", "recompute": False,
    }
    assert doc["tokens_per_iteration"] == 4 * 512
    (rc,) = doc["rank_classes"]
    assert rc["ranks"] == [0]
    assert set(rc["flops"]) == {"gemm", "attention", "elementwise", "other", "total"}
    assert rc["flops"]["total"] == sum(v for k, v in rc["flops"].items() if k != "total")
    assert set(rc["memory_breakdown_bytes"]) == {"weights", "gradients", "optimizer_states", "activations", "communication"}
    assert sum(rc["memory_breakdown_bytes"].values()) == rc["peak_memory_bytes"]
    # the same numbers as the analysis on the same pipeline
    expected = account(train_step("llama3.2-1b", micro_batches=2), {"B": 2, "S": 512})
    assert doc["params"] == rc["params"] == expected.params == parameter_count(train_step("llama3.2-1b"))
    assert rc["flops"] == expected.rank_classes[0].flops.as_dict()
    assert rc["peak_memory_bytes"] == expected.rank_classes[0].peak_memory_bytes


def test_stats_with_a_strategy_reports_one_ranks_share_and_its_communication(capsys):
    """Megatron TP=8 with SP on llama3.2-1b, 2 micro-batches of one sequence: each layer
    all-gathers twice in the forward and four times in the backward ([S/tp, H] shards)
    and reduce-scatters twice each way; the rank holds an eighth of the projections."""
    code, out, err = stats(capsys, "--model", "llama3.2-1b", "--tp", "8", "--sp", "--batch", "2", "--seq", "512", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["setup"]["strategy"] == "tp=8 sp=true"
    (rc,) = doc["rank_classes"]
    layers, hidden, m = 16, 2048, 2
    gather = hidden * 512 // 8 * 2  # bf16 bytes of one [S/tp, H] shard
    comm = rc["communication"]
    # + the embedding's backward gather, the head's forward gather and its weight-gradient gather
    assert comm["all_gather"]["bytes"] == m * (6 * layers + 3) * gather
    assert comm["reduce_scatter"]["bytes"] == m * (4 * layers + 2) * gather * 8
    assert rc["params"] < doc["params"] / 4


def test_stats_with_zero_shards_the_optimizer_states_over_dp(capsys):
    """--zero 1 on dp=4: the rank keeps a quarter of the fp32 master weights and Adam
    moments (12 of the 18 bytes a parameter), and each step reduce-scatters the fp32
    gradients (4 bytes a parameter) and all-gathers the bf16 parameters (a quarter of
    2 bytes a parameter each rank sends); --zero 2 also shards the fp32 gradients."""
    docs = {}
    for zero in ("0", "1", "2"):
        code, out, err = stats(capsys, "--model", "llama3.2-1b", "--dp", "4", "--zero", zero, "--seq", "256", "--json")
        assert code == 0, err
        docs[zero] = json.loads(out)
    assert docs["1"]["setup"]["strategy"] == "dp=4 zero=1"
    params = docs["0"]["params"]
    states = {z: d["rank_classes"][0]["memory_breakdown_bytes"]["optimizer_states"] for z, d in docs.items()}
    grads = {z: d["rank_classes"][0]["memory_breakdown_bytes"]["gradients"] for z, d in docs.items()}
    # every llama3.2-1b tensor has a dim 4 divides: exactly a quarter (Adam's step
    # counters, one scalar per tensor, stay whole)
    assert states["0"] - states["1"] == pytest.approx(3 / 4 * 12 * params, abs=10_000)
    assert grads["1"] == grads["0"] == 4 * params
    assert grads["2"] == params
    comm = docs["1"]["rank_classes"][0]["communication"]
    assert comm["reduce_scatter"]["bytes"] == 4 * params
    assert comm["all_gather"]["bytes"] == 2 * params // 4
    assert "all_reduce" not in comm or comm["all_reduce"]["bytes"] < 1000  # the loss only


def test_stats_with_pipeline_stages_reports_a_rank_class_per_stage(capsys):
    """llama3.2-1b (16 layers, tied embedding) on tp=2 x pp=2, 4 micro-batches: each
    stage's ranks are one class; each stage holds half the layers, the first the
    embedding, the last the final norm and the head (the same tied table); a stage
    sends one [B, S, H] bf16 activation or cotangent per micro-batch."""
    code, out, err = stats(capsys, "--model", "llama3.2-1b", "--tp", "2", "--pp", "2", "--batch", "4", "--seq", "256",
                           "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["setup"]["strategy"] == "tp=2 pp=2 schedule=1f1b"
    first, last = doc["rank_classes"]
    assert (first["ranks"], last["ranks"]) == ([0, 1], [2, 3])  # mesh [pp, tp]
    whole = account(train_step("llama3.2-1b"), {"B": 1, "S": 256})
    assert doc["params"] == whole.params
    assert doc["tokens_per_iteration"] == 4 * 256
    # tp splits every matrix and the table in two; the norms (2 per layer + the final
    # one, H each) stay whole; the tied table is held by both stages:
    # (whole - table - 33 H) / 2 + 33 H + 2 x table / 2
    table, hidden = 128256 * 2048, 2048
    assert first["params"] + last["params"] == (whole.params + table) // 2 + 33 * hidden // 2
    # without sp the activation between stages is the whole [B, S, H] on every tp rank
    activation = 1 * 256 * hidden * 2
    assert first["communication"]["send"] == last["communication"]["recv"] == {"ops": 4, "bytes": 4 * activation}
    for rc in (first, last):
        assert rc["flops"]["total"] > 0 and rc["peak_memory_bytes"] > 0


def test_stats_table_and_timeline_files(capsys, tmp_path):
    png, js = tmp_path / "mem.png", tmp_path / "mem.json"
    code, out, err = stats(
        capsys, "--model", "llama3.2-1b", "--seq", "256", "--recompute", "--timeline-png", str(png), "--timeline-json", str(js)
    )
    assert code == 0, err
    for words in ("parameters", "FLOPs GeMM", "FLOPs per token", "at peak: activations", "peak memory", "GiB", "peak at"):
        assert words in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    timeline = json.loads(js.read_text())
    assert timeline["kinds"][:3] == ["weights", "gradients", "optimizer_states"]
    entry = timeline["entries"][0]
    assert set(entry) == {"position", "op", "phase", "bytes"} and entry["position"] == 0
    assert {e["phase"] for e in timeline["entries"]} >= {"forward", "backward", "recompute", "optimizer"}


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--model", "no-such-model"], "unknown model 'no-such-model'"),
        (["--model", "llama3.2-1b", "--batch", "6", "--micro-batch", "4"], "not a multiple of --micro-batch 4"),
        (["--model", "llama3.2-1b", "--tp", "3"], "tp = 3 does not divide the model's attention heads N = 32"),
        (["--model", "llama3.2-1b", "--sp"], "--sp splits the sequence over tp"),
        (["--model", "llama3.2-1b", "--pp", "17", "--batch", "32"], "pp = 17 is more than the 16 layers"),
        (["--model", "llama3.2-1b", "--pp", "2"], "--pp 2 needs at least 2 micro-batches per replica"),
        (["--model", "llama3.2-1b", "--dp", "2", "--batch", "3"], "2 data-parallel replicas"),
        (["--model", "/nonexistent/config.json"], "no such config file"),
    ],
)
def test_stats_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    code, out, err = stats(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_stats_help_teaches_with_examples(capsys):
    with pytest.raises(SystemExit) as exit_:
        stagec_cli.main(["stats", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out and "stagec stats --model llama3-8b" in out and "--timeline-png" in out


def test_stats_through_the_stagec_cli(capsys):
    assert stagec_cli.main(["stats", "--model", "llama3.2-1b", "--seq", "128", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rank_classes"][0]["params"] > 0
    assert stagec_cli.main(["stats", "--model", "llama3.2-1b", "--tp", "3"]) == 2
