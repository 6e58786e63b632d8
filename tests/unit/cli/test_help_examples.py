"""Every example in the --help texts and the README runs as written (issue 17).

The examples are found as a reader finds them (tests/unit/cli/examples_testing.py),
parsed by the CLI's own parser, and run through the shell in a fresh working
directory, after the examples they build on (SCENARIOS: `stagec compile -o step.mlir`
before `stagec simulate step.mlir`). Each is held to exit status 0 and to what it
wrote or printed: trace directories pass check-trace with the ranks their mesh has,
.mlir files parse and verify, JSON has what its reader needs, numbers match what the
job's arithmetic or a published parameter count says.

A new example needs a step in SCENARIOS (`stagec run`'s examples are run by the rule
in `run_scenarios`), or test_every_example_has_a_scenario fails naming it.
Examples that take minutes or gigabytes run with `pytest -m scale`."""

from __future__ import annotations

import json
import math
import re
import shlex
import subprocess

import pytest

from stagec.tools.stagec_cli import _parser
from tests.unit.cli.examples_testing import (
    ROOT,
    Check,
    Ran,
    Scenario,
    Step,
    examples,
    run_example,
    stagec_commands,
    working_directory,
)

EXAMPLES = examples()


# -- what the examples' outputs must be ---------------------------------------------------


def _module(text: str, path: str = "<stdout>"):
    """The module in `text`, parsed with stagec's dialects and verified."""
    from xdsl.parser import Parser

    from stagec.dialects import make_context

    module = Parser(make_context(), text, path).parse_module()
    module.verify()
    return module


def _module_file(ran: Ran, name: str):
    assert ran.path(name).is_file(), f"{name} was not written"
    return _module(ran.path(name).read_text(), name)


def _traces(ran: Ran, directory: str, ranks: int, prefix: str | None = None) -> dict:
    """The check-trace report of a trace directory: clean, with `ranks` rank files."""
    from stagec.runtime.chakra.check import check_trace

    report = check_trace(str(ran.path(directory)), prefix, jobs=1)
    assert report.ok, "\n".join(report.defects[:10])
    assert len(report.ranks) == ranks, f"{directory}: {len(report.ranks)} rank files, the mesh has {ranks}"
    return report.to_json()["ranks"]


def _png(ran: Ran, name: str) -> None:
    assert ran.path(name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{name} is not a PNG"


def _timeline(ran: Ran, name: str) -> list[dict]:
    """A Chrome / Perfetto trace: {"traceEvents": [...]} with complete ("X") events."""
    events = json.loads(ran.path(name).read_text())["traceEvents"]
    assert any(e.get("ph") == "X" and e.get("dur", 0) > 0 for e in events), f"{name}: no timed event"
    return events


def _lines(ran: Ran, pattern: str) -> list[str]:
    """The lines of what the example printed (stdout, then stderr) that match."""
    return [line for line in (ran.stdout + ran.stderr).splitlines() if re.search(pattern, line)]


# Published parameter counts (Hugging Face's model cards: meta-llama/Meta-Llama-3-8B
# 8,030,261,248, meta-llama/Meta-Llama-3-70B 70,553,706,496, mistralai/Mixtral-8x7B
# 46,702,792,704; GPT-3 5B as derived in tests/unit/templates/test_template_configs.py).
LLAMA3_8B = "llama3-8b: 8.03 B parameters (8,030,261,248)"
LLAMA3_70B = "llama3-70b: 70.55 B parameters (70,553,706,496)"
GPT3_5B = "gpt3-5b: 5.05 B parameters (5,051,228,160)"


def _stats(headline: str, batch_line: str, rank_classes: int = 1) -> Check:
    def check(ran: Ran) -> None:
        lines = ran.stdout.splitlines()
        assert lines[0] == headline
        assert lines[1].startswith(batch_line), lines[1]
        assert len(_lines(ran, r"^rank class: ")) == rank_classes
        assert _lines(ran, r"peak memory"), "no peak memory in the report"
    return check


def _readme_first_output() -> list[str]:
    """The README's "What the first command shows" block."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"### What the first command shows\n\n```\n(.*?)```", readme, re.S)
    assert block, "README: no output block under 'What the first command shows'"
    return block.group(1).rstrip("\n").splitlines()


def first_command(ran: Ran) -> None:
    # The README explains this output line by line: it must be what the command prints.
    shown = _readme_first_output()
    assert ran.stdout.splitlines()[:len(shown)] == shown


def summary_text(headline: str, iteration: str) -> Check:
    def check(ran: Ran) -> None:
        lines = ran.stdout.splitlines()
        assert lines[0] == headline and lines[1].startswith(iteration), lines[:2]
        for part in ("time ", "compute ", "communication ", "memory "):
            assert _lines(ran, rf"^{part}"), f"no `{part.strip()}` line"
    return check


def summary_gpt3_json(ran: Ran) -> None:
    summary = ran.json()
    assert summary["gpus"] == 16 and summary["strategy"] == "fsdp=16" and summary["hardware"] == "a100-80gb"
    # 64 sequences of 2048 tokens
    assert summary["tokens_per_iteration"] == 64 * 2048
    assert summary["tokens_per_s"] == pytest.approx(64 * 2048 / summary["iteration_s"])
    assert summary["parameters"] == 5_051_228_160 and summary["fits"] is True


def stats_tiny_json(ran: Ran) -> None:
    stats = ran.json()
    # examples/tiny.json: embed V*H = 32*16 = 512, lm_head 512, final norm 16, per layer
    # q 256, k 128, v 128, o 256, gate/up/down 3*16*24 = 1152, 2 norms 32 = 1952, x 2
    # layers = 3904: 4944 parameters
    assert stats["params"] == 4944
    assert stats["bindings"]["S"] == 4096 and stats["tokens_per_iteration"] == 4096  # --seq's default, batch 1
    assert stats["setup"]["optimizer"] == "sgd" and stats["setup"]["dtype"] == "f32"


def stats_timeline(ran: Ran) -> None:
    _png(ran, "mem.png")
    timeline = json.loads(ran.path("mem.json").read_text())
    first = timeline["entries"][0]["bytes"]
    # bf16 weights of Llama-3-8B before the first op: 2 B x 8,030,261,248
    assert first["weights"] == 2 * 8_030_261_248


def stats_mixtral_json(ran: Ran) -> None:
    stats = ran.json()
    assert stats["model"] == "mixtral-8x7b" and stats["setup"]["recompute"] is True
    assert stats["bindings"]["S"] == 4096


def ir_module(*must_have: str) -> Check:
    def check(ran: Ran) -> None:
        _module(ran.stdout)
        for text in must_have:
            assert text in ran.stdout, f"no `{text}` in the printed IR"
    return check


def ir_mlp_file(ran: Ran) -> None:
    module = _module_file(ran, "mlp.mlir")
    assert any(op.name == "stg.einsum" for op in module.walk())


def ir_llama_f32(ran: Ran) -> None:
    _module(ran.stdout)
    assert 'stg.model = "llama3-8b"' in ran.stdout and "L = 32" in ran.stdout  # 32 layers in one stg.repeat
    assert ", f32>" in ran.stdout and ", bf16>" not in ran.stdout


def trace_dir(directory: str, ranks: int, *, prefix: str | None = None, collectives: tuple[str, ...] = ()) -> Check:
    def check(ran: Ran) -> None:
        report = _traces(ran, directory, ranks, prefix)
        for kind in collectives:
            assert all(kind in counts for counts in report.values()), f"{directory}: a rank without {kind}"
    return check


def trace_files(directory: str, ranks: int) -> Check:
    """The files of a trace directory that the next example checks with check-trace."""
    def check(ran: Ran) -> None:
        assert ran.path(directory, "comm_group.json").is_file()
        assert sorted(p.name for p in ran.path(directory).glob("trace.*.et")) == \
            sorted(f"trace.{r}.et" for r in range(ranks))
    return check


def trace_small(ran: Ran) -> None:
    trace_dir("small", 2, collectives=("ALL_REDUCE",))(ran)
    for rank in (0, 1):  # --json: each trace also as JSON
        assert json.loads(ran.path(f"small/trace.{rank}.json").read_text())


def check_trace_json(ran: Ran) -> None:
    report = ran.json()["ranks"]
    assert sorted(report, key=int) == [str(r) for r in range(8)]
    # tensor parallelism's all-reduces on every rank, the same on each (one rank class)
    assert len({json.dumps(counts, sort_keys=True) for counts in report.values()}) == 1
    assert report["0"]["ALL_REDUCE"]["count"] > 0


def check_trace_table(ran: Ran) -> None:
    assert _lines(ran, r"0-7"), "check-trace's table does not group ranks 0-7"


def simulated(ranks: int) -> Check:
    """`stagec simulate`'s text report: an iteration time for a world of `ranks`."""
    def check(ran: Ran) -> None:
        text = ran.stdout + ran.stderr
        assert re.search(r"iteration", text), text[-2000:]
        assert re.search(rf"\b{ranks} rank", text) or ranks == 1, f"not {ranks} ranks:\n{text[-2000:]}"
    return check


def simulate_timeline(ran: Ran) -> None:
    simulated(8)(ran)
    _timeline(ran, "step.json")


def simulate_gpt3_json(ran: Ran) -> None:
    result = ran.json()
    assert result["world"] == 8 and result["iteration_ns"] > 0 and result["strategy"] == "fsdp=8"


def simulate_compiled(ran: Ran) -> None:
    simulated(2)(ran)
    _timeline(ran, "step.json")


def dse_plot(ran: Ran) -> None:
    _png(ran, "dse.png")
    dse_table("llama3-8b")(ran)


def dse_table(model: str) -> Check:
    def check(ran: Ran) -> None:
        assert _lines(ran, rf"stagec simulate --model {model}"), "dse names no command to rerun its best strategy"
    return check


def check_trace_table_64(ran: Ran) -> None:
    assert _lines(ran, r"\b63\b"), "check-trace's table does not reach rank 63"


def dse_json(ran: Ran) -> None:
    result = json.loads(ran.path("dse.json").read_text())
    assert result["model"] == "mixtral-8x7b" and result["gpus"] == 64
    front = [p for p in result["points"] if p["pareto"]]
    assert front and all(p["iteration_ns"] > 0 for p in front), "an empty Pareto front"


def import_stg(ran: Ran) -> None:
    module = _module_file(ran, "m.mlir")
    text = ran.path("m.mlir").read_text()
    # make_model(config): TinyLM at examples/tiny.json's sizes, V = 32, H = 16, L = 2 layers
    assert "V = 32" in text and "H = 16" in text and "L = 2" in text and "f32>" in text
    assert any(op.name == "stg.repeat" for op in module.walk())


def import_torch(ran: Ran) -> None:
    _module_file(ran, "m.torch.mlir")
    # TinyLM's forward as torch-mlir imports it: the embedding, and 4 layers unrolled
    text = ran.path("m.torch.mlir").read_text()
    assert "torch.aten.embedding" in text and "torch.aten.silu" in text and text.count("torch.aten.silu") == 4


def convert_torch(ran: Ran) -> None:
    module = _module(ran.stdout)
    assert any(op.name == "stg.repeat" for op in module.walk())


def import_hf(name: str, layers: int) -> Check:
    def check(ran: Ran) -> None:
        text = ran.path(f"{name}.mlir").read_text()
        _module(text, f"{name}.mlir")
        assert f'stg.model = "{name}"' in text and f"L = {layers}" in text
    return check


def stats_torch(ran: Ran) -> None:
    _stats(LLAMA3_8B, "batch 1 = 1 micro-batch(es) x 1 sequence(s) of 4096 tokens", 1)(ran)
    assert "tp=8" in ran.stdout.splitlines()[1]


def ps_plan_tiny4(ran: Ran) -> None:
    module = _module(ran.stdout)
    assert any(op.name.startswith("ps.") for op in module.walk())


def ps_plan_traced(directory: str, output: str | None = None) -> Check:
    def check(ran: Ran) -> None:
        if output:
            _module_file(ran, output)
        assert ran.path(directory).joinpath("dips.links.json").is_file()
        files = sorted(ran.path(directory).glob("dips.*.et"))
        assert files, f"no traces in {directory}"
        _traces(ran, directory, len(files), prefix="dips")
    return check


def simulate_dips(directory: str) -> Check:
    def check(ran: Ran) -> None:
        # production9.yaml: 9 clusters, 16 slave PSs and the master, one rank each, on
        # the per-link bandwidths of dips.links.json
        assert _lines(ran, rf"^{directory}/?: 26 ranks; .* point-to-point links among 26 ranks \(dips.links.json\)")
        assert _lines(ran, r"^iteration time: [0-9,.]+ ms")
    return check


def ps_run_finished(ran: Ran) -> None:
    # tiny4.yaml's default budget: 8 rounds' worth, 8 x 4 clusters x H = 16 inner steps x
    # the run's batch 8 x seq 32 = 131,072 tokens (tools/stagec_ps_run.py)
    done = re.search(r"finished: version (\d+), ([0-9,]+) tokens in [0-9.]+ s; evaluation loss ([0-9.]+)", ran.stderr)
    assert done, ran.stderr[-2000:]
    assert int(done.group(2).replace(",", "")) >= 131_072
    # trained: below a uniform guess over the 1024 tokens of tiny4.yaml's model (the run
    # trains the plan's model, runtime/ps/run_model.py), ln 1024 = 6.93; measured 5.65
    assert float(done.group(3)) < math.log(1024)


def ps_run_sync(ran: Ran) -> None:
    # sync: a round is all 4 clusters x H = 16 inner steps x the run's batch 8 x
    # seq 32 tokens = 16,384 tokens; 200,000 tokens take ceil(200000 / 16384) = 13 rounds
    assert "finished: version 13, 212,992 tokens" in ran.stderr, ran.stderr[-2000:]
    assert ran.path("runs/sync/deployment.json").is_file()


def ps_rerun(ran: Ran) -> None:
    result = json.loads(ran.path("result.json").read_text())
    # the deployment's own settings: sync, 200,000 tokens
    assert result["finished"] and result["mode"] == "sync" and result["version"] == 13
    assert result["tokens"] == 212_992 and math.isfinite(result["eval_loss"])


def opt_costs(ran: Ran, text: str | None = None) -> None:
    text = ran.path("out.mlir").read_text() if text is None else text
    _module(text)
    # examples/mlp.mlir at tp = 8: two GEMMs of 2 * (B/dp) * H * (4H/8) FLOPs each, gelu
    # 8 FLOPs per element (dialects/stg/compute.py) on (B/dp) x 4H/8: 2BH^2/dp + 4BH/dp
    assert "stg.total_flops = #stg.expr<(2*B*H*H + 4*B*H)/dp>" in text


def opt_costs_stdout(ran: Ran) -> None:
    opt_costs(ran, ran.stdout)


def opt_diagnostics(ran: Ran) -> None:
    errors = [line for line in ran.stdout.splitlines() if re.match(r"tests/lit/dialects/stg/invalid_compute.mlir:\d+:\d+: error:", line)]
    chunks = (ROOT / "tests/lit/dialects/stg/invalid_compute.mlir").read_text().count("\n// -----")
    assert len(errors) == chunks + 1  # one diagnostic per chunk: every chunk is invalid


def opt_table_costs(ran: Ran) -> None:
    _module(ran.stdout)
    # stg-annotate-costs gives every function its FLOPs and bytes
    functions = ran.stdout.count("func.func @")
    assert functions and ran.stdout.count("stg.total_flops") == ran.stdout.count("stg.total_bytes") == functions


def opt_chunks_costs(ran: Ran) -> None:
    # --split-input-file: each chunk of the input printed on its own, with its costs
    chunks = ran.stdout.split("// -----")
    inputs = (ROOT / "tests/lit/examples/stage_table3_llama_mlp.mlir").read_text().count("\n// -----")
    assert len(chunks) == inputs + 1
    for chunk in chunks:
        _module(chunk)
        assert chunk.count("func.func @") == chunk.count("stg.total_flops")


def opt_help(ran: Ran) -> None:
    assert "stg-annotate-costs" in ran.stdout and "examples:" in ran.stdout


def compile_base(ran: Ran) -> None:
    compile_step("base.mlir", "tiny", fsdp=2, batch=2, seq=64)(ran)


def run_profile(ran: Ran) -> None:
    from stagec.runtime.cost.profile import load_profile

    assert load_profile(ran.path("measured.json")).origin == "measured"
    _final_loss(ran, vocab=32)


def compile_step(name: str, model: str, fsdp: int, batch: int, seq: int) -> Check:
    """A scheduled training step as `stagec simulate` and `stagec trace --ir` read it:
    the mesh of --fsdp ranks, B = --batch and S = --seq bound in stg.config."""
    def check(ran: Ran) -> None:
        from stagec.tools.stagec_compile import load_compiled

        module, bindings = load_compiled(str(ran.path(name)))
        assert bindings["B"] == batch and bindings["S"] == seq, bindings
        text = ran.path(name).read_text()
        assert f'stg.model = "{model}"' in text and f"stg.mesh @mesh [fsdp = {fsdp}]" in text
        assert "stg.scheduled" in text and "stg.all_gather" in text
    return check


def _final_loss(ran: Ran, vocab: int) -> float:
    """The final loss `stagec run` prints: a tiny Llama at its initial weights (N(0,
    0.02)) has logits near 0, so its loss is near ln(vocab) = ln 32 = 3.466."""
    match = re.search(r"final loss ([0-9.]+)", ran.stdout + ran.stderr)
    assert match, (ran.stdout + ran.stderr)[-2000:]
    loss = float(match.group(1))
    assert abs(loss - math.log(vocab)) < 0.1
    return loss


# -- the scenarios ----------------------------------------------------------------------

S = Step
SCENARIOS = [
    Scenario("first-command", (S("stagec summary", first_command),)),
    Scenario("summary", (
        S("stagec summary --model mixtral-8x7b --ep 8 --tp 2 --batch 16 --seq 4096 --recompute",
          # 16 sequences over ep = 8 data-parallel replicas: 2 micro-batches of 1 on each
          summary_text("mixtral-8x7b (46.70 B parameters) on 16 h100-sxm GPUs (2 nodes of 8): ep=8 tp=2",
                       "one iteration: 16 sequences of 4,096 tokens (65,536 tokens) in 2 micro-batch(es) of 1")),
        S("stagec summary --model gpt3-5b --fsdp 16 --batch 64 --seq 2048 --hardware a100-80gb --json",
          summary_gpt3_json),
    )),
    Scenario("summary-64-gpus", (
        S("stagec summary --model llama3-70b --tp 8 --pp 4 --dp 2 --sp --batch 128 --seq 4096",
          # pp x dp x tp = 64 GPUs, 8 per node; 128 sequences over dp = 2: 64 micro-batches of 1
          summary_text("llama3-70b (70.55 B parameters) on 64 h100-sxm GPUs (8 nodes of 8): pp=4 dp=2 tp=8 sp",
                       "one iteration: 128 sequences of 4,096 tokens (524,288 tokens) in 64 micro-batch(es) of 1")),
    ), scale=True),
    Scenario("stats", (
        S("stagec stats --model llama3-8b --seq 4096",
          _stats(LLAMA3_8B, "batch 1 = 1 micro-batch(es) x 1 sequence(s) of 4096 tokens")),
        S("stagec stats --model llama3-70b --batch 32 --micro-batch 4 --seq 4096 --recompute",
          _stats(LLAMA3_70B, "batch 32 = 8 micro-batch(es) x 4 sequence(s) of 4096 tokens")),  # 32 / 4 = 8
        S("stagec stats --model examples/tiny.json --optimizer sgd --dtype f32 --json", stats_tiny_json),
        S("stagec stats --model llama3-8b --timeline-png mem.png --timeline-json mem.json", stats_timeline),
        S("stagec stats --model gpt3-5b --tp 8 --sp --batch 8",
          _stats(GPT3_5B, "batch 8 = 8 micro-batch(es) x 1 sequence(s) of 4096 tokens")),
        S("stagec stats --model llama3-70b --dp 2 --tp 8 --fsdp 2 --batch 64 --seq 4096",
          # 64 sequences over dp x fsdp = 4 replicas: 16 micro-batches of 1 each
          _stats(LLAMA3_70B, "batch 64 = 16 micro-batch(es) x 1 sequence(s) of 4096 tokens")),
        S("stagec stats --model llama3-70b --tp 4 --pp 2 --batch 16 --seq 4096 --schedule gpipe",
          _stats(LLAMA3_70B, "batch 16 = 16 micro-batch(es) x 1 sequence(s) of 4096 tokens", rank_classes=2)),
        # README
        S("stagec stats --model llama3-8b --batch 8 --micro-batch 1 --seq 4096",
          _stats(LLAMA3_8B, "batch 8 = 8 micro-batch(es) x 1 sequence(s) of 4096 tokens")),
        S("stagec stats --model mixtral-8x7b --seq 4096 --recompute --json", stats_mixtral_json),
    )),
    Scenario("stats-8-stages", (  # 8 pipeline stages' schedules: 6-20 s each on 2 busy cores
        S("stagec stats --model gpt3-5b --pp 8 --batch 64 --seq 2048",
          _stats(GPT3_5B, "batch 64 = 64 micro-batch(es) x 1 sequence(s) of 2048 tokens", rank_classes=8)),
        # README
        S("stagec stats --model gpt3-5b --pp 8 --batch 16 --recompute",
          _stats(GPT3_5B, "batch 16 = 16 micro-batch(es) x 1 sequence(s) of 4096 tokens", rank_classes=8)),
    ), scale=True),
    Scenario("stats-70b-timeline", (
        S("stagec stats --model llama3-70b --timeline-png memory.png", lambda ran: _png(ran, "memory.png")),
    )),
    Scenario("ir", (
        S("stagec ir", ir_module("stg.einsum")),
        S("stagec ir --model llama-mlp --pass-pipeline 'builtin.module()' -o mlp.mlir", ir_mlp_file),
        S("stagec ir --model llama3-8b --dtype f32", ir_llama_f32),
        S("stagec ir --model examples/tiny.json --pass-pipeline 'builtin.module()'",
          ir_module('stg.model = "tiny"', "L = 2", "stg.repeat")),
        S("stagec ir | stagec-opt --pass-pipeline 'builtin.module(cse)'", ir_module("stg.einsum")),
        # README: a training step with its sizes bound (B = 2, S = 4096)
        S("stagec ir --model llama3.2-1b --pass-pipeline 'builtin.module(stg-autodiff{optimizer=adamw "
          "micro_batches=4 recompute=true},stg-instantiate{B=2 S=4096})'", ir_module("stg.adam", "[2, 4096")),
        S("stagec ir --model llama3.2-1b --pass-pipeline 'builtin.module(stg-autodiff{micro_batches=8},"
          "stg-shard{dp=2 tp=4 sp=true},stg-match-collectives,stg-pipeline{pp=2 schedule=1f1b})'",
          ir_module("stg.send", "stg.recv", "stg.all_gather", "stg.reduce_scatter")),
        # README: what the scheduled form prints, as the README says it does
        S("stagec ir --model llama3.2-1b --pass-pipeline 'builtin.module(stg-autodiff{micro_batches=2},"
          "stg-shard{dp=2 tp=2},stg-match-collectives,stg-vocab-parallel-cross-entropy,stg-fuse-gemms,"
          "stg-bucket-gradients,stg-schedule)'",
          ir_module("stg.group {", 'async stream "tp"', "stg.wait", 'stg.group ready async stream "dp"')),
    )),
    Scenario("trace-check-simulate", (
        S("stagec trace --model llama3-8b --tp 8 --batch 8 --seq 4096 --out traces/",
          trace_dir("traces", 8, collectives=("ALL_REDUCE",))),
        S("stagec check-trace traces/", check_trace_table),
        S("stagec check-trace traces/ --prefix trace --json", check_trace_json),
        S("stagec check-trace traces/ --jobs 4", check_trace_table),
        S("stagec simulate traces/ --network examples/astra-sim/hgx_h100_8npus.yml "
          "--system examples/astra-sim/hgx_h100_direct.json", simulated(8)),
        # README
        S("stagec trace --model llama3-8b --tp 8 --batch 8 --seq 4096 --out tp8/", trace_dir("tp8", 8)),
        S("stagec simulate tp8/ --network examples/astra-sim/hgx_h100_8npus.yml "
          "--system examples/astra-sim/hgx_h100_direct.json", simulated(8)),
    )),
    Scenario("trace", (
        S("stagec trace --model gpt3-5b --fsdp 8 --batch 128 --micro-batch 8 --seq 2048 --no-optimizer --out fsdp/",
          trace_dir("fsdp", 8, collectives=("ALL_GATHER", "REDUCE_SCATTER"))),
        S("stagec trace --model mixtral-8x7b --ep 8 --pp 4 --batch 128 --hardware h200 --iterations 2 --out moe/",
          trace_dir("moe", 32, collectives=("ALL_TO_ALL",))),  # ep x pp = 32 ranks
        S("stagec trace --model examples/tiny.json --tp 2 --batch 2 --seq 512 --json --out small/", trace_small),
        S("stagec trace --model deepseek-v2-lite --phase decode --ep 8 --batch 256 --context 4096 --out decode/",
          trace_dir("decode", 8, collectives=("ALL_TO_ALL",))),
    )),
    # README's; in a directory of its own: the help's fsdp/ holds another job
    Scenario("trace-fsdp-h200", (
        S("stagec trace --model gpt3-5b --fsdp 8 --batch 128 --micro-batch 8 --seq 2048 --hardware h200 --out fsdp/",
          trace_dir("fsdp", 8, collectives=("ALL_GATHER", "REDUCE_SCATTER"))),
    )),
    Scenario("trace-70b", (
        S("stagec trace --model llama3-70b --dp 2 --tp 8 --pp 4 --sp --batch 128 --micro-batch 1 --out t70b/",
          trace_dir("t70b", 64, collectives=("ALL_GATHER", "REDUCE_SCATTER"))),  # dp x tp x pp = 64
        # README
        S("stagec trace --model llama3-70b --dp 2 --tp 8 --pp 4 --sp --batch 128 --micro-batch 1 --seq 4096 "
          "--out traces/", trace_files("traces", 64)),
        S("stagec check-trace traces/", check_trace_table_64),
    ), scale=True),
    Scenario("simulate", (
        S("stagec simulate --model llama3-8b --tp 8 --batch 8 --seq 4096 --timeline step.json", simulate_timeline),
        S("stagec simulate --model gpt3-5b --fsdp 8 --batch 64 --micro-batch 8 --seq 2048 --json",
          simulate_gpt3_json),
        S("stagec simulate --model llama3-8b --dp 8 --batch 64 --network examples/astra-sim/hgx_h100_8npus.yml "
          "--system examples/astra-sim/hgx_h100_direct.json", simulated(8)),
    )),
    Scenario("simulate-64-gpus", (
        S("stagec simulate --model llama3-70b --tp 8 --pp 4 --dp 2 --sp --batch 128 --seq 4096", simulated(64)),
    ), scale=True),
    Scenario("deepcompile-loop", (
        S("stagec compile --model examples/tiny.json --fsdp 2 --batch 2 --seq 64 --no-prefetch --no-unshard "
          "--no-offload -o base.mlir", compile_base),
        S("stagec run -n 2 --model examples/tiny.json --ir base.mlir --steps 5 --profile measured.json", run_profile),
        S("stagec compile --model examples/tiny.json --fsdp 2 --batch 2 --seq 64 --profile measured.json -o step.mlir",
          compile_step("step.mlir", "tiny", fsdp=2, batch=2, seq=64)),
        S("stagec simulate step.mlir --timeline step.json", simulate_compiled),
        S("stagec trace --ir step.mlir --out compiled/", trace_dir("compiled", 2, collectives=("ALL_GATHER",))),
    )),
    Scenario("compile-realistic", (
        S("stagec compile --model mixtral-8x7b --fsdp 16 --batch 16 --seq 2048 --recompute --baseline zero3 -o z3.mlir",
          compile_step("z3.mlir", "mixtral-8x7b", fsdp=16, batch=16, seq=2048)),
        S("stagec compile --model llama3-70b --fsdp 32 --batch 32 --seq 1024 --recompute -o step.mlir",
          compile_step("step.mlir", "llama3-70b", fsdp=32, batch=32, seq=1024)),
    ), scale=True),
    # dse simulates every strategy: minutes even for 64 GPUs (tests/unit/sim/test_dse.py
    # covers it on small jobs in the default suite)
    Scenario("dse-64-gpus", (
        S("stagec dse --model llama3-8b --gpus 64 --hbm 80 --batch 128 --seq 8192 --plot dse.png", dse_plot),
        S("stagec dse --model mixtral-8x7b --gpus 64 --hbm 80 --json > dse.json", dse_json),
    ), scale=True),
    Scenario("dse-1024-gpus", (
        S("stagec dse --model llama3-70b --gpus 1024 --hbm 80", dse_table("llama3-70b")),
        S("stagec dse --model llama3-70b --gpus 1024 --hbm 80 --plot dse.png",
          lambda ran: (_png(ran, "dse.png"), dse_table("llama3-70b")(ran))),
    ), scale=True),
    Scenario("import", (
        S("stagec import examples.tiny_lm:make_model --model examples/tiny.json --dtype f32 -o m.mlir", import_stg),
        S("stagec import examples.tiny_lm:make_model --emit torch -o m.torch.mlir", import_torch),
        S("stagec-opt m.torch.mlir --pass-pipeline='builtin.module(convert-torch-to-stg)'", convert_torch),
    )),
    Scenario("import-hf", (
        S("stagec import hf --model llama3-8b -o llama3-8b.mlir", import_hf("llama3-8b", 32)),
        # README
        S("stagec import hf --model llama3.2-1b -o llama3.2-1b.mlir", import_hf("llama3.2-1b", 16)),
        S("stagec stats --model llama3-8b --frontend torch --tp 8 --seq 4096", stats_torch),
    ), scale=True),
    Scenario("ps-plan", (
        S("stagec ps plan examples/ps/tiny4.yaml", ps_plan_tiny4),
        S("stagec ps plan examples/ps/production9.yaml -o dips.mlir --trace dips-traces",
          ps_plan_traced("dips-traces", "dips.mlir")),
        S("stagec simulate dips-traces", simulate_dips("dips-traces")),
        S("stagec simulate dips-traces/", simulate_dips("dips-traces")),
        S("stagec ps plan examples/ps/production9.yaml --trace out/dips && stagec simulate out/dips",
          lambda ran: (ps_plan_traced("out/dips")(ran), simulate_dips("out/dips")(ran))),
    )),
    Scenario("ps-run", (
        S("stagec ps run examples/ps/tiny4.yaml", ps_run_finished),
        S("stagec ps run examples/ps/tiny4.yaml --mode dips", ps_run_finished),
        S("stagec ps run examples/ps/tiny4.yaml --mode sync --tokens 200000 --workdir runs/sync", ps_run_sync),
        S("stagec ps run runs/sync/deployment.json --json result.json", ps_rerun),
    ), scale=True),
    Scenario("stagec-opt", (
        S("stagec-opt examples/mlp.mlir --pass-pipeline='builtin.module(stg-annotate-costs,cse)' -o out.mlir",
          opt_costs),
        S("stagec-opt examples/mlp.mlir -p 'stg-annotate-costs,cse'", opt_costs_stdout),
        S("stagec-opt tests/lit/dialects/stg/invalid_compute.mlir --split-input-file --verify-diagnostics",
          opt_diagnostics),
        # README
        S("stagec-opt tests/lit/examples/stage_table11_fstp.mlir --pass-pipeline='builtin.module(stg-annotate-costs)'",
          opt_table_costs),
        S("stagec-opt tests/lit/examples/stage_table3_llama_mlp.mlir --split-input-file -p stg-annotate-costs",
          opt_chunks_costs),
        S("stagec-opt --help", opt_help),
    )),
]


def _run_options(argv: list[str]):
    """`stagec run`'s parsed options; one this test reads and the command no longer has
    is None (its help text is another tool's to change)."""
    import argparse

    parsed = vars(_parser().parse_args(argv))
    names = ("ranks", "model", "steps", "json", "checkpoint", "resume", "profile", "ir", "weights")
    return argparse.Namespace(**{name: parsed.get(name) for name in names})


def _run_check(argv: list[str]) -> Check:
    """What a `stagec run` example must do: train (a final loss near ln V at the
    initial weights), and write what its options ask for."""
    args = _run_options(argv)

    def check(ran: Ran) -> None:
        from stagec.frontends.templates import load_config

        config = load_config(str(ran.path(args.model)) if ran.path(args.model).exists() else args.model)
        _final_loss(ran, config.vocab_size)
        steps = [int(n) for n in re.findall(r"^step +(\d+) ", ran.stdout, re.M)]
        if args.steps:
            assert len(steps) == args.steps, f"{len(steps)} steps printed, --steps {args.steps}"
        if args.resume:  # it goes on from the checkpoint's step
            assert steps[0] > 1 and steps == list(range(steps[0], steps[0] + len(steps)))
        if args.json:
            losses = json.loads(ran.path(args.json).read_text())["losses"]
            assert len(losses) == args.steps and all(math.isfinite(x) for x in losses)
        if args.checkpoint:
            assert any(ran.path(args.checkpoint).iterdir()), f"{args.checkpoint} is empty"
        if args.profile:
            from stagec.runtime.cost.profile import load_profile

            assert load_profile(ran.path(args.profile)).origin == "measured"
    return check


def run_scenarios(found: list[str]) -> list[Scenario]:
    """`stagec run`'s own examples, whatever its help says (tools/stagec_run.py): each in
    a directory of its own with tiny.json there (examples/tiny.json); one with --resume
    right after the example before it that writes the same --checkpoint; an --ir FILE
    that no example writes compiled first for the example's ranks; a --weights FILE
    written first as the state_dict of transformers' model of the config (the file the
    help describes). They run with the
    scale suite: 15-25 s each on 2 busy cores (mpiexec and a torch import per rank); the
    DeepCompile loop's `stagec run` (compile's help) runs in the default suite."""
    explicit = {e for s in SCENARIOS for e in s.examples}
    scenarios: list[Scenario] = []
    for example in found:
        commands = stagec_commands(example)
        if example in explicit or not commands or commands[0][:1] != ["run"]:
            continue
        args = _run_options(commands[0])
        step = Step(example, _run_check(commands[0]))
        if args.resume and scenarios and f"--checkpoint {args.checkpoint}" in scenarios[-1].examples[-1]:
            previous = scenarios.pop()
            scenarios.append(Scenario(previous.name, (*previous.steps, step), True, previous.setup))
            continue
        setup = [f"cp examples/tiny.json tiny.json"]
        if args.ir:
            setup.append(f"stagec compile --model {shlex.quote(args.model)} --fsdp {args.ranks} --batch {args.ranks} "
                         f"--seq 64 --no-prefetch --no-unshard --no-offload --quiet -o {shlex.quote(args.ir)}")
        if args.weights:
            setup.append("python -c 'from stagec.frontends.templates import load_config; "
                         "from stagec.frontends.torch.models import initial_model; "
                         "from safetensors.torch import save_file; "
                         f"m = initial_model(load_config(\"{args.model}\"), \"hf\", \"f32\"); "
                         "save_file({k: v.detach().clone() for k, v in m.state_dict().items()}, "
                         f"\"{args.weights}\")'")
        scenarios.append(Scenario(f"run-{len(scenarios) + 1}", (step,), True, tuple(setup)))
    return scenarios


ALL = SCENARIOS + run_scenarios(EXAMPLES)


def test_there_are_examples_to_check():
    assert len(EXAMPLES) > 60


def test_every_example_has_a_scenario():
    covered = {e for s in ALL for e in s.examples}
    missing = [e for e in EXAMPLES if e not in covered]
    assert not missing, ("examples that no test runs: add a step for each to SCENARIOS in "
                         "tests/unit/cli/test_help_examples.py (after the examples that write its inputs, or "
                         "ship the inputs under examples/) with what it must write:\n  " + "\n  ".join(missing))


def test_every_step_is_an_example():
    gone = [e for s in SCENARIOS for e in s.examples if e not in EXAMPLES]
    assert not gone, ("SCENARIOS run commands that no --help text or README shows any more: update or remove "
                      "their steps:\n  " + "\n  ".join(gone))


@pytest.mark.parametrize("example", [e for e in EXAMPLES if stagec_commands(e)])
def test_example_parses(example):
    for argv in stagec_commands(example):
        try:
            _parser().parse_args(argv)
        except SystemExit as exit_:
            pytest.fail(f"`{example}` does not parse (exit {exit_.code})")


def _not_ignored(cwd, before: set[str]) -> list[str]:
    """What the examples wrote in `cwd` that the repository's .gitignore does not cover
    (run from a clone's root, it would show up in `git status`)."""
    written = sorted(f"{p.name}/" if p.is_dir() else p.name for p in cwd.iterdir() if p.name not in before)
    if not written or not (ROOT / ".git").exists():
        return []
    ignored = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "--no-index", "--stdin"], input="\n".join(written),
                             capture_output=True, text=True).stdout.split()
    return [name for name in written if name not in ignored]


def _run_scenario(scenario: Scenario, tmp_path, timeout: float) -> None:
    cwd = working_directory(tmp_path)
    for command in scenario.setup:
        ran = run_example(command, cwd, timeout)
        assert ran.returncode == 0, f"setup `{command}` failed:\n{ran.stderr[-3000:]}"
    before = {p.name for p in cwd.iterdir()}
    for step in scenario.steps:
        ran = run_example(step.example, cwd, timeout)
        print(f"{ran.seconds:7.1f} s  {step.example}")
        assert ran.returncode == 0, f"`{step.example}` exited {ran.returncode}:\n{ran.stderr[-3000:]}"
        step.check(ran)
    loose = _not_ignored(cwd, before)
    assert not loose, f"the examples write {loose}, which .gitignore does not cover: add them (issue 17 item 15)"


@pytest.mark.parametrize("scenario", [s for s in ALL if not s.scale], ids=lambda s: s.name)
def test_examples_run(scenario, tmp_path):
    _run_scenario(scenario, tmp_path, timeout=300)


@pytest.mark.scale
@pytest.mark.parametrize("scenario", [s for s in ALL if s.scale], ids=lambda s: s.name)
def test_examples_run_at_scale(scenario, tmp_path):
    _run_scenario(scenario, tmp_path, timeout=3600)
