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


# -- stagec ps plan --trace -------------------------------------------------------------

PS = "examples/ps/tiny4.yaml"


def another_job(directory) -> dict[str, str]:
    """A `stagec trace` job's files (their names are what marks them)."""
    directory.mkdir()
    files = {"trace.0.et": "rank 0", "trace.1.et": "rank 1", "trace.ranks.json": "{}",
             "comm_group.json": '{"1": [0, 1]}', "notes.txt": "mine"}
    for name, text in files.items():
        (directory / name).write_text(text)
    return files


def test_plan_refuses_another_jobs_directory(tmp_path, capsys):
    """Its comm_group.json ({} for the plan) would replace the other job's, which then
    fails check-trace; and -o is not written when the traces are refused."""
    files = another_job(tmp_path / "mix")
    status, lines = run(capsys, "ps", "plan", PS, "-o", str(tmp_path / "plan.mlir"), "--trace", str(tmp_path / "mix"))
    assert status == 2
    assert lines[-1] == (f"stagec: error: --trace '{tmp_path / 'mix'}' holds the traces of another job (comm_group.json, "
                         "trace.0.et, trace.1.et, trace.ranks.json): give --force to replace them (other files stay), "
                         "or another directory")
    assert {p.name: p.read_text() for p in (tmp_path / "mix").iterdir()} == files
    assert sorted(os.listdir(tmp_path)) == ["mix"]


def test_plan_force_replaces_another_job(tmp_path, capsys):
    another_job(tmp_path / "mix")
    assert run(capsys, "ps", "plan", PS, "--trace", str(tmp_path / "mix"), "--force")[0] == 0
    # tiny4: 4 clusters, 4 slaves and the master are 9 ranks; the user's notes stay
    assert sorted(os.listdir(tmp_path / "mix")) == sorted(
        ["comm_group.json", "dips.links.json", "dips.ranks.json", "notes.txt", *(f"dips.{r}.et" for r in range(9))])
    # the plan's own traces are replaced without --force (the edit-and-replan loop)
    assert run(capsys, "ps", "plan", PS, "--trace", str(tmp_path / "mix"))[0] == 0


def test_plan_output_not_left_when_the_traces_fail(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    status, lines = run(capsys, "ps", "plan", PS, "-o", str(tmp_path / "plan.mlir"), "--trace",
                        str(tmp_path / "file" / "traces"))
    assert status == 2
    assert lines[-1] == f"stagec: error: --trace '{tmp_path / 'file' / 'traces'}': cannot write it: Not a directory"
    assert sorted(os.listdir(tmp_path)) == ["file"]


@pytest.mark.parametrize("argv, message", [
    (["--prefix", "a/b", "--trace", "TRACES"], "--prefix 'a/b': a plain file name prefix, e.g. dips"),
    (["--trace", "FILE"], "--trace 'FILE' is not a directory"),
    (["--latency-us", "3"], "--latency-us shapes the traces: give --trace DIR"),
    (["--update-rate", "1e6", "--force"], "--update-rate, --force shape the traces: give --trace DIR"),
], ids=["prefix", "trace-file", "latency-alone", "update-rate-force-alone"])
def test_plan_trace_options(tmp_path, capsys, argv, message):
    (tmp_path / "file").write_text("")
    paths = {"TRACES": str(tmp_path / "traces"), "FILE": str(tmp_path / "file")}
    argv = [paths.get(a, a) for a in argv]
    assert run(capsys, "ps", "plan", PS, *argv) == (2, [f"stagec: error: {message.replace('FILE', paths['FILE'])}"])
    assert sorted(os.listdir(tmp_path)) == ["file"]


# -- runaway micro-batches ---------------------------------------------------------------

@pytest.mark.parametrize("argv, given", [
    (["stats", "--model", TINY, "--batch", "1000000000000"],
     "--batch 1000000000000 (--micro-batch 1 x 1 data-parallel replica(s) a micro-batch) is 1,000,000,000,000"),
    (["trace", "--model", TINY, "--dp", "2", "--batch", "20002", "--out", "OUT"],
     "--batch 20002 (--micro-batch 1 x 2 data-parallel replica(s) a micro-batch) is 10,001"),
    (["simulate", "--model", TINY, "--micro-batches", "10001"], "--micro-batches 10001 is 10,001"),
    (["compile", "--model", TINY, "--fsdp", "2", "--batch", "1000000", "-o", "OUT"],
     "--batch 1000000 (--micro-batch 1 x --fsdp 2 a micro-batch) is 500,000"),
], ids=["stats", "trace", "simulate", "compile"])
def test_micro_batches_beyond_what_can_be_built(tmp_path, capsys, argv, given):
    """1,000,000 micro-batches of the tiny model ran `stagec stats` out of memory (a
    numpy ArrayMemoryError traceback; trace and simulate took 8 GB and more before
    anything was refused). 10,000 is the most: 10,000 x 1 sequence x 1 replica."""
    argv = [str(tmp_path / "out") if a == "OUT" else a for a in argv]
    assert run(capsys, *argv) == (2, [
        f"stagec: error: {given} micro-batches per replica: stagec unrolls every micro-batch of the iteration, and "
        "more than 10,000 take minutes and gigabytes to build (100,000 of the smallest model: 70 s and 4.7 GB); "
        "give fewer: a larger --micro-batch, or a smaller --batch or --micro-batches"])
    assert os.listdir(tmp_path) == []


def test_iterations_beyond_what_can_be_built(tmp_path, capsys):
    """`--iterations 1000000` of the tiny model: simulate grew past 3 GB and, under
    `timeout`, never ended; 101 iterations x 100 micro-batches = 10,100 > 10,000."""
    assert run(capsys, "trace", "--model", TINY, "--batch", "100", "--iterations", "101", "--out",
               str(tmp_path / "out")) == (2, [
        "stagec: error: --iterations 101 x 100 micro-batch(es) per replica are 10,100 micro-batch steps: stagec "
        "unrolls every one, and more than 10,000 take minutes and gigabytes to build; give fewer --iterations (one "
        "iteration is the steady state)"])
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("where, message", [
    ("missing/summary.json", "--json '{path}': the directory '{dir}' does not exist"),
    (".", "--json '{path}': a directory; give a file path"),
], ids=["missing-directory", "a-directory"])
def test_ps_run_json_checked_before_the_run(tmp_path, capsys, where, message):
    """`stagec ps run --json` wrote its summary after the whole run (20 s for tiny4)
    and then ended in a FileNotFoundError traceback; now refused before anything starts."""
    path = str(tmp_path / where)
    assert run(capsys, "ps", "run", PS, "--quiet", "--json", path) == (2, [
        "stagec: error: " + message.format(path=path, dir=tmp_path / "missing")])
    assert os.listdir(tmp_path) == []


# -- stagec run: what the ranks would meet, checked before mpiexec starts them ------------

def test_run_checks_the_token_file_before_the_ranks_start(tmp_path, capsys):
    """A token file outside the vocabulary failed in rank 0's setup: exit status 1, one
    line per rank run. examples/tiny.json's vocabulary is 32 token ids."""
    import numpy as np

    tokens = tmp_path / "tokens.npy"
    np.save(tokens, np.arange(40, 1040))
    assert run(capsys, "run", "-n", "1", "--model", TINY, "--steps", "1", "--seq", "64", "--data", str(tokens)) == (
        2, [f"stagec: error: --data {tokens}: token ids must lie in [0, 32) (the model's vocab)"])


@pytest.mark.parametrize("argv, message", [
    (["--checkpoint", TINY], f"--checkpoint {TINY}: not a directory; give the directory the shards go in"),
    (["--hostfile", "no/such/hosts"], "--hostfile no/such/hosts: no such file (mpiexec's host file: one "
                                      "host[:slots] a line)"),
], ids=["checkpoint-file", "missing-hostfile"])
def test_run_paths(capsys, argv, message):
    """A file as --checkpoint failed when rank 0 saved it, after the steps (exit 1); a
    missing --hostfile was `mpiexec exited with status 255 before any rank started`."""
    assert run(capsys, "run", "-n", "1", "--model", TINY, "--steps", "1", "--seq", "64", *argv) == (
        2, [f"stagec: error: {message}"])


def test_run_init_std_must_be_positive(capsys):
    with pytest.raises(SystemExit) as exit:
        stagec_cli.main(["run", "-n", "1", "--model", TINY, "--init-std", "-1"])
    assert exit.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == "stagec run: error: argument --init-std: -1 must be greater than 0"


def test_plan_output_is_not_its_config(tmp_path, capsys):
    # `-o` naming the CONFIG replaced the user's YAML with the ps program printed from it.
    config = tmp_path / "dips.yaml"
    config.write_text(open(PS).read())
    status, lines = run(capsys, "ps", "plan", str(config), "-o", str(config))
    assert (status, lines) == (2, [f"stagec: error: -o '{config}' is the CONFIG it is planned from; give the ps "
                                   "program another file, e.g. dips.mlir"])
    assert config.read_text() == open(PS).read()
