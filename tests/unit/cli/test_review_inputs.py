"""Bad input that a review of issue 17 found still taken badly: each is one line naming
the file or option, exit status 2, and nothing written.

- a scheduled module (`stagec simulate FILE.mlir`, `stagec trace --ir`) that is not
  UTF-8 text ended in a UnicodeDecodeError traceback;
- `--timeline-ranks` naming ranks the job does not have wrote an empty timeline, and
  without `--timeline` it was silently ignored;
- `stagec stats --profile` took a missing file silently (stats reports no times);
- a bad `--hardware` or `--profile` file was reported as `--hardware/--profile`."""

from __future__ import annotations

import os

import pytest

from stagec.tools import stagec_cli

TINY = "examples/tiny.json"
JOB = ["--model", TINY, "--tp", "2", "--batch", "1", "--seq", "64", "--quiet"]


def run(capsys, *argv: str) -> tuple[int, list[str]]:
    status = stagec_cli.main(list(argv))
    return status, capsys.readouterr().err.splitlines()


@pytest.mark.parametrize("command", [["simulate", "FILE", "--quiet"], ["trace", "--ir", "FILE", "--out", "OUT"]],
                         ids=["simulate", "trace-ir"])
def test_module_that_is_not_text(tmp_path, capsys, command):
    path = tmp_path / "step.mlir"
    path.write_bytes(b"\x7fELF\x02\x01\x88binary")
    out = tmp_path / "out"
    argv = [str(path) if a == "FILE" else str(out) if a == "OUT" else a for a in command]
    assert run(capsys, *argv) == (2, [
        f"stagec: error: {path}: not a stg module: the file is not UTF-8 text (byte 6 is 0x88); "
        "give the .mlir that `stagec compile -o` writes"])
    assert not out.exists()


def test_timeline_ranks_beyond_the_job(tmp_path, capsys):
    timeline = tmp_path / "t.json"
    # tp=2: ranks 0 and 1; 1-9 asks for eight the job does not have
    assert run(capsys, "simulate", *JOB, "--timeline", str(timeline), "--timeline-ranks", "1-9") == (2, [
        "stagec: error: --timeline-ranks: the job's ranks are 0-1; it has no rank 2, 3, 4, 5, ..."])
    assert os.listdir(tmp_path) == []


def test_timeline_ranks_without_a_timeline(capsys):
    assert run(capsys, "simulate", *JOB, "--timeline-ranks", "0") == (2, [
        "stagec: error: --timeline-ranks chooses the ranks --timeline FILE shows: give --timeline too"])


def test_stats_checks_its_profile(tmp_path, capsys):
    missing = tmp_path / "measured.json"
    assert run(capsys, "stats", "--model", TINY, "--profile", str(missing)) == (2, [
        f"stagec: error: --profile: {missing}: no such profile file"])


@pytest.mark.parametrize("option", ["--hardware", "--profile"])
def test_the_option_at_fault_is_named(tmp_path, capsys, option):
    bad = tmp_path / "bad.json"
    bad.write_text("{bad")
    status, lines = run(capsys, "trace", *JOB, option, str(bad), "--out", str(tmp_path / "out"))
    assert status == 2 and len(lines) == 1
    assert lines[0].startswith(f"stagec: error: {option}: {bad}: not valid JSON: ")
    assert not (tmp_path / "out").exists()
