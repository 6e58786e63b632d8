"""Every command that compiles a job takes the same job options, with one spelling,
one default and one help text (issue 17, class 14)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from stagec.tools import stagec_compile, stagec_dse, stagec_simulate, stagec_stats, stagec_summary, stagec_trace
from stagec.tools.job_options import add_job_arguments
from tests.unit.templates.tiny_configs import TINY

COMMANDS = {"stats": stagec_stats, "trace": stagec_trace, "simulate": stagec_simulate, "summary": stagec_summary,
            "dse": stagec_dse}


def job_options() -> dict[str, tuple]:
    parser = argparse.ArgumentParser()
    add_job_arguments(parser)
    return _options(parser)


def _options(parser: argparse.ArgumentParser) -> dict[str, tuple]:
    return {action.option_strings[-1]: (action.default, action.help, action.choices)
            for action in parser._actions if action.option_strings and action.dest != "help"}


@pytest.mark.parametrize("name", ["stats", "trace", "simulate", "summary"])
def test_job_commands_share_every_job_option(name):
    parser = argparse.ArgumentParser()
    COMMANDS[name].add_arguments(parser)
    theirs = _options(parser)
    for option, spec in job_options().items():
        if option == "--model":
            continue  # required by stats and trace; simulate and summary have defaults
        assert theirs.get(option) == spec, f"stagec {name} {option} differs from the shared job option"


@pytest.mark.parametrize("command", [stagec_dse, stagec_compile])
def test_dse_and_compile_take_the_shared_model_and_training_defaults(command):
    # their own option sets (strategies to explore; an fsdp step), with the job's defaults
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    theirs = _options(parser)
    shared = job_options()
    for option in ("--seq", "--micro-batch", "--dtype", "--optimizer", "--recompute", "--hardware"):
        if option in theirs:
            assert theirs[option][0] == shared[option][0], f"{command.__name__} {option}'s default differs"


def test_no_optimizer_leaves_the_optimizer_flops_out_of_stats(tmp_path):
    config = tmp_path / "tiny.json"
    config.write_text(json.dumps(TINY["llama"]))
    runs = {}
    for flag in ([], ["--no-optimizer"]):
        done = subprocess.run([sys.executable, "-m", "stagec.tools.stagec_cli", "stats", "--model", str(config),
                               "--seq", "16", "--dp", "2", "--json", *flag], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        runs[bool(flag)] = json.loads(done.stdout)["rank_classes"][0]
    full, without = runs[False], runs[True]
    optimizer = full["flops_by_phase"]["optimizer"]["total"]
    assert optimizer > 0
    assert without["flops"]["total"] == full["flops"]["total"] - optimizer
    assert "optimizer" not in without["flops_by_phase"]
    # The states stay in memory, as in the traces and the simulation.
    assert without["peak_memory_bytes"] == full["peak_memory_bytes"]
    assert without["memory_breakdown_bytes"]["optimizer_states"] > 0
