"""`stagec summary`, the README's first command (issue 17, class 13): its numbers are
the accounting's and the simulator's, combined as the README says, and the README
shows what it prints."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from stagec.runtime.cost.hardware_description import load_hardware
from tests.unit.templates.tiny_configs import TINY

ROOT = Path(__file__).resolve().parents[3]
STAGEC = [sys.executable, "-m", "stagec.tools.stagec_cli"]


def stagec(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*STAGEC, *args], capture_output=True, text=True, timeout=300, cwd=ROOT)


def as_json(*args: str) -> dict:
    done = stagec(*args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("summary") / "tiny.json"
    path.write_text(json.dumps(TINY["llama"]))
    return str(path)


def test_summary_combines_stats_and_simulate(tiny):
    job = ["--model", tiny, "--tp", "2", "--dp", "2", "--batch", "4", "--seq", "16"]
    summary = as_json("summary", "--quiet", *job)
    stats = as_json("stats", *job)
    simulated = as_json("simulate", "--quiet", *job)
    assert summary["gpus"] == 4 and summary["strategy"] == "dp=2 tp=2"
    # 4 sequences of 16 tokens; the iteration time is the simulator's.
    assert summary["tokens_per_iteration"] == 4 * 16
    assert summary["iteration_s"] == pytest.approx(simulated["iteration_ns"] / 1e9)
    assert summary["tokens_per_s"] == pytest.approx(64 / summary["iteration_s"])
    assert summary["tokens_per_s_per_gpu"] == pytest.approx(64 / summary["iteration_s"] / 4)
    # Every rank computes the same under dp x tp; the job's FLOPs are 4 ranks' worth,
    # and MFU divides them by 4 GPUs' bf16 matmul peak over the iteration.
    (rank_class,) = stats["rank_classes"]
    per_gpu = rank_class["flops"]["total"]
    assert summary["flops_per_gpu"] == per_gpu
    assert summary["flops_per_token"] == pytest.approx(4 * per_gpu / 64)
    peak = load_hardware("h100-sxm").matmul_flops["bf16"]
    assert summary["mfu"] == pytest.approx(4 * per_gpu / (summary["iteration_s"] * 4 * peak))
    assert summary["peak_memory_bytes"] == rank_class["peak_memory_bytes"]
    assert summary["communication_bytes_per_gpu"] == {k: v["bytes"] for k, v in rank_class["communication"].items()}
    assert summary["reserved_memory_bytes"] == simulated["reserved_memory_bytes"]
    assert summary["fits"] is True


def test_a_job_that_does_not_fit_says_so():
    # Llama-3-70B's AdamW states alone are 70e9 x 12 B = 840 GB: on 8 GPUs with
    # tensor parallelism only, 105 GB each, over an H100's 80 GB.
    summary = as_json("summary", "--quiet", "--model", "llama3-70b", "--tp", "8", "--seq", "512")
    assert summary["memory_breakdown_bytes"]["optimizer_states"] > 80e9
    assert summary["fits"] is False


def test_a_strategy_without_a_model_is_refused():
    done = stagec("summary", "--tp", "4")
    assert done.returncode == 2
    assert done.stderr.strip() == ("stagec: error: a strategy or batch needs --model (with no options, the summary is "
                                   "of the default job: --model llama3-8b --tp 8 --sp --dp 2 --batch 16 --seq 4096)")


def test_the_readme_shows_what_the_first_command_prints():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### What the first command shows", 1)[1]
    shown = re.search(r"```\n(.+?)\n```", section, re.S).group(1)
    done = stagec("summary", "--quiet")
    assert done.returncode == 0, done.stderr
    printed = [line.rstrip() for line in done.stdout.splitlines()]
    for line in shown.splitlines():
        assert line in printed, f"the README shows a line `stagec summary` no longer prints:\n{line}"


def test_progress_is_shown_while_a_job_compiles_and_traces_are_checked(tiny, tmp_path):
    """Issue 17, class 15: nothing that takes seconds is silent (STAGEC_PROGRESS draws
    the bars into a pipe as on a terminal; --quiet hides them)."""
    import os

    env = {**os.environ, "STAGEC_PROGRESS": "1"}
    run = lambda *a: subprocess.run([*STAGEC, *a], capture_output=True, text=True, timeout=300, env=env)  # noqa: E731
    stats = run("stats", "--model", tiny, "--seq", "16", "--tp", "2")
    assert stats.returncode == 0 and "compiling" in stats.stderr and "stg-" in stats.stderr
    out = tmp_path / "traces"
    assert run("trace", "--model", tiny, "--seq", "16", "--dp", "8", "--out", str(out), "--quiet").returncode == 0
    checked = run("check-trace", str(out))
    assert checked.returncode == 0 and "checking traces" in checked.stderr and "8/8" in checked.stderr
    quiet = run("check-trace", str(out), "--quiet")
    assert quiet.returncode == 0 and "checking traces" not in quiet.stderr
