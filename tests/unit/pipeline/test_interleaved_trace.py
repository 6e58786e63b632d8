"""`stagec trace` and `stagec simulate` with --schedule interleaved-1f1b: the traces
pass `stagec check-trace`, the trace directory simulates, and interleaving shrinks
the pipeline bubble as Narayanan et al. 2021 §2.2 say: (pp - 1) / M of the ideal
time for 1F1B, (pp - 1) / (v * M) interleaved.

The model is a Llama whose layers dominate (H = 1024, F = 4096, 16 layers, a 1024
vocabulary), so that every rank does nearly the same compute and the bubble shows
as the first rank's idle time."""

from __future__ import annotations

import json

import pytest

from stagec.runtime.chakra.check import check_trace
from stagec.runtime.cost.hardware_description import load_hardware
from stagec.runtime.sim.network import NetworkModel
from stagec.runtime.sim.simulate import simulate_module
from stagec.tools import stagec_check_trace, stagec_cli
from stagec.tools.stagec_stats import micro_batches_of, training_step

CONFIG = {"model_type": "llama", "hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 16,
          "num_attention_heads": 8, "num_key_value_heads": 8, "vocab_size": 1024, "rms_norm_eps": 1e-05,
          "rope_theta": 10000.0, "tie_word_embeddings": False}
PP, M = 4, 8


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "layers-heavy-llama.json"
    path.write_text(json.dumps(CONFIG))
    return str(path)


def job(config, schedule, *extra):
    return ["--model", config, "--pp", str(PP), "--micro-batches", str(M), "--seq", "1024", "--no-optimizer",
            "--schedule", schedule, *extra]


def test_interleaved_traces_pass_check_trace_and_simulate(config, tmp_path, capsys):
    out = tmp_path / "traces"
    argv = ["trace", *job(config, "interleaved-1f1b", "--virtual-stages", "2"), "--out", str(out), "--quiet",
            "--workers", "1"]
    assert stagec_cli.main(argv) == 0
    report = check_trace(out)
    assert report.ok, report.defects
    counts = report.to_json()["ranks"]
    # each rank runs 2 chunks x M = 16 forwards and 16 backwards; every chunk but the
    # very first receives an activation per micro-batch and every one but the last
    # sends one, and the cotangents the other way: rank 0 sends 8 activations from
    # chunk 0 and 8 from chunk 1, and 8 cotangents from chunk 1 (not chunk 0, the first
    # virtual stage): 24 sends, and as many receives; so does rank 3 (8 + 16).
    for rank in ("0", "3"):
        assert counts[rank]["SEND"]["count"] == 24 and counts[rank]["RECV"]["count"] == 24, counts[rank]
    # an inner rank: 2 chunks x 2 directions x M both ways
    assert counts["1"]["SEND"]["count"] == 32 and counts["1"]["RECV"]["count"] == 32
    assert stagec_check_trace.main([str(out), "--quiet"]) == 0
    capsys.readouterr()
    assert stagec_cli.main(["simulate", str(out), "--quiet"]) == 0
    assert "iteration time" in capsys.readouterr().out


def simulated(config, schedule, *extra):
    args = stagec_cli._parser().parse_args(["simulate", *job(config, schedule, *extra)])
    module = training_step(args, micro_batches_of(args))
    network = NetworkModel.from_hardware(load_hardware("h100-sxm"), PP)
    report = simulate_module(module, network, {"B": 1, "S": 1024, "M": M}, memory=False, fork=False)
    return report


def test_interleaving_shrinks_the_bubble(config):
    plain = simulated(config, "1f1b")
    interleaved = simulated(config, "interleaved-1f1b", "--virtual-stages", "2")
    # rank 0 computes the same in both (the same layers and the embedding): the rest of
    # the iteration is its bubble (plus the pipeline's point-to-point time)
    compute = [a.compute_ns for a in plain.actors if 0 in a.ranks][0]
    assert compute == [a.compute_ns for a in interleaved.actors if 0 in a.ranks][0]
    bubble_plain = plain.iteration_ns - compute
    bubble_interleaved = interleaved.iteration_ns - compute
    # 1F1B: (pp - 1) / M = 3/8 of the compute, measured 0.359
    assert bubble_plain / compute == pytest.approx((PP - 1) / M, rel=0.1)
    # interleaved, v = 2: (pp - 1) / (v M) = 3/16 = 0.1875; measured 0.198 - it sends
    # twice as many activations, each exposed for a moment; the bubbles' ratio 0.55
    # (ideally 1/v = 0.5)
    assert bubble_interleaved / compute == pytest.approx((PP - 1) / (2 * M), rel=0.2)
    assert 0.5 <= bubble_interleaved / bubble_plain < 0.65


@pytest.mark.parametrize("extra, message", [
    (["--micro-batches", "6", "--schedule", "interleaved-1f1b", "--virtual-stages", "2"],
     "stagec: error: --schedule interleaved-1f1b needs a multiple of --pp 4 micro-batches per replica "
     "(as Megatron-LM); the job has 6\n"),
    (["--micro-batches", "8", "--virtual-stages", "2"],
     "stagec: error: --virtual-stages 2 needs --schedule interleaved-1f1b (--schedule 1f1b runs one model chunk "
     "per pipeline rank)\n"),
    (["--micro-batches", "8", "--schedule", "interleaved-1f1b", "--virtual-stages", "3"],
     "stagec: error: stg-pipeline: interleaved 1F1B cuts the 16 layers of the model (L = 16) into pp x "
     "virtual_stages = 4 x 3 = 12 equal chunks: the layer count must be a multiple of 12\n"),
])
def test_what_the_cli_refuses(config, extra, message, capsys):
    assert stagec_cli.main(["stats", "--model", config, "--pp", "4", "--seq", "64", *extra]) == 2
    captured = capsys.readouterr()
    assert captured.err == message and captured.out == ""
