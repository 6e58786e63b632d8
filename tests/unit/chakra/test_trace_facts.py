"""Emissions whose facts tests/trace_facts.json pins beyond those the other tests make:
stage.md Table VII's rows as tests/unit/shard/test_table7_volumes.py runs them, and
`stagec trace` configurations as users run them (the lit test's, the README's and
--help's, scaled down). Every one passes `check_trace`, and each Table VII row's
traffic in the trace is the traffic the accounting reports (bucketing and fusion
regroup collectives but move the same bytes)."""

from __future__ import annotations

import pytest
from stagec.dialects import make_context
from stagec.frontends.templates import build_model, load_config
from stagec.passes.analysis.accounting import account
from stagec.passes.schedule.pipeline import schedule
from stagec.passes.stg_autodiff import StgAutodiff
from stagec.runtime.chakra import emit as E
from stagec.runtime.chakra.check import check_trace
from stagec.tools.pipeline_spec import build_pipeline
from stagec.tools.stagec_cli import main as stagec

from tests.unit.chakra.test_table6_counts import ROWS as TABLE6_ROWS

TABLE7 = {
    "gpt3-5b tp=8 sp": ("gpt3-5b", {}, "stg-shard{tp=8 sp=true},stg-match-collectives", 128, {"B": 1, "S": 2048}),
    "gpt3-5b fsdp=8": ("gpt3-5b", {}, "stg-shard{fsdp=8},stg-match-collectives", 16, {"B": 64, "S": 2048}),
    "gpt3-5b pp=8": ("gpt3-5b", {}, "stg-pipeline{pp=8}", 128, {"B": 1, "S": 2048}),
    "llama3-70b tp=4 pp=2": ("llama3-70b", {"num_hidden_layers": 32},
                             "stg-shard{tp=4 sp=true},stg-match-collectives,stg-pipeline{pp=2}", 32,
                             {"B": 1, "S": 16384}),
}


@pytest.mark.parametrize("row", sorted(TABLE7))
def test_table7_rows_move_the_accounted_bytes(row):
    from stagec.frontends.templates.named import NAMED_CONFIGS

    name, overrides, passes, micro_batches, bindings = TABLE7[row]
    named = {k: v for k, v in NAMED_CONFIGS[name].items() if not k.startswith("_")}
    module = build_model(load_config({**named, **overrides}), "bf16")
    StgAutodiff(micro_batches=micro_batches, optimizer="adamw", grad_dtype="param").apply(make_context(), module)
    build_pipeline(f"builtin.module({passes})", mlir_syntax=True).apply(make_context(), module)
    programs, _ = E.build_programs(schedule(module), bindings)
    accounted = {tuple(rc.ranks): rc.comm.bytes for rc in account(module, bindings).rank_classes}
    for program in programs:
        totals = program.totals()
        want = accounted[tuple(program.ranks)]
        for kind in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send", "recv"):
            assert totals.get(f"{kind}_bytes", 0) == want.get(kind, 0), (program.name, kind)


CLI = {
    "lit tp2 pp2": ["--model", "llama3.2-1b", "--tp", "2", "--pp", "2", "--batch", "4", "--seq", "128"],
    "readme dp2 tp8 pp4 sp": ["--model", "llama3-70b", "--dp", "2", "--tp", "8", "--pp", "4", "--sp",
                              "--batch", "8", "--micro-batch", "1", "--seq", "512"],
    "readme fsdp8": ["--model", "gpt3-5b", "--fsdp", "8", "--batch", "32", "--micro-batch", "2", "--seq", "512",
                     "--hardware", "h200"],
    "help ep8 pp4 2 iterations": ["--model", "mixtral-8x7b", "--ep", "8", "--pp", "4", "--batch", "32",
                                  "--seq", "256", "--iterations", "2"],
    "dp2 zero1 recompute": ["--model", "llama3.2-1b", "--dp", "2", "--zero", "1", "--recompute", "--batch", "4",
                            "--seq", "256"],
    # these two were recorded after the schedule moved into passes; their check-trace
    # summaries equal those of the emitter before it (3d2e5bd), rank by rank
    "ep2 recompute": ["--model", "mixtral-8x7b", "--ep", "2", "--recompute", "--batch", "4", "--seq", "128"],
    "dp2 zero2": ["--model", "llama3.2-1b", "--dp", "2", "--zero", "2", "--batch", "4", "--seq", "128"],
    "cp2 tp2 sp gpipe": ["--model", "llama3.2-1b", "--cp", "2", "--tp", "2", "--sp", "--pp", "2",
                         "--schedule", "gpipe", "--batch", "4", "--seq", "256"],
}


@pytest.mark.parametrize("config", sorted(CLI))
def test_stagec_trace_configurations_pass_check_trace(config, tmp_path, capsys):
    assert stagec(["trace", *CLI[config], "--quiet", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    report = check_trace(str(tmp_path))
    assert report.ok, report.defects[:5]


@pytest.mark.scale
@pytest.mark.parametrize("row", sorted(TABLE6_ROWS))
def test_table6_rows_pass_check_trace(row, tmp_path):
    """Every rank's trace of stage.md Table VI's rows, written and checked whole
    (a few minutes: `pytest -m scale`)."""
    *setup, _measured = TABLE6_ROWS[row]
    name, overrides, passes, micro_batches, bindings = setup
    from stagec.frontends.templates.named import NAMED_CONFIGS

    named = {k: v for k, v in NAMED_CONFIGS[name].items() if not k.startswith("_")}
    module = build_model(load_config({**named, **overrides}), "bf16")
    StgAutodiff(micro_batches=micro_batches, optimizer="adamw", grad_dtype="param").apply(make_context(), module)
    build_pipeline(f"builtin.module({passes})", mlir_syntax=True).apply(make_context(), module)
    E.emit_traces(schedule(module), str(tmp_path), bindings)
    report = check_trace(str(tmp_path))
    assert report.ok, report.defects[:5]
