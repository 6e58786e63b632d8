"""What `stagec trace` leaves in --out (issue 17, classes 3-5), in real processes:

- a previous job's traces are refused without --force and replaced with it (theirs
  only: a user's files stay, and the message names them);
- the output's size is estimated before anything is written: beyond the free disk it
  is refused, beyond 10,000 files or 20 GiB it needs --yes;
- an I/O error (file too large, disk full, no permission) is one line naming the file
  and the system's reason, exit 2, and no file of the job is left.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.unit.templates.tiny_configs import TINY

STAGEC = [sys.executable, "-m", "stagec.tools.stagec_cli"]


@pytest.fixture
def config(tmp_path) -> Path:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY["llama"]))
    return path


def trace(config: Path, out: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([*STAGEC, "trace", "--model", str(config), "--seq", "8", "--quiet", *args,
                           "--out", str(out)], capture_output=True, text=True, timeout=120, **kwargs)


def contents(directory: Path) -> dict[str, bytes]:
    return {n: (directory / n).read_bytes() for n in sorted(os.listdir(directory)) if (directory / n).is_file()}


def leftovers(directory: Path) -> list[str]:
    return sorted(n for n in os.listdir(directory) if n != "tiny.json")


# -- class 3: a previous job in --out -----------------------------------------------------


def test_a_smaller_job_does_not_mix_with_a_previous_one(tmp_path, config):
    config.write_text(json.dumps({**TINY["llama"], "num_attention_heads": 8, "num_key_value_heads": 8}))  # tp=8 divides
    out = tmp_path / "out"
    assert trace(config, out, "--tp", "8", "--batch", "1").returncode == 0
    (out / "notes.txt").write_text("my notes")
    (out / "plots").mkdir()
    before = contents(out)
    # tp=8: ranks 0-7, with comm_group.json and the rank-class file
    assert sorted(before) == ["comm_group.json", "notes.txt", *(f"trace.{r}.et" for r in range(8)), "trace.ranks.json"]

    refused = trace(config, out, "--tp", "4", "--batch", "1")
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.splitlines() == [
        f"stagec: error: --out '{out}' holds the traces of another job (comm_group.json, trace.0.et, trace.1.et, "
        f"trace.2.et, ... (10 in all)): give --force to replace them (other files stay), or another directory"]
    assert contents(out) == before  # untouched

    forced = trace(config, out, "--tp", "4", "--batch", "1", "--force")
    assert forced.returncode == 0, forced.stderr
    assert forced.stderr.splitlines() == [
        f"stagec: --force replaced the previous job's traces in '{out}' and kept the other files there: "
        f"notes.txt, plots"]
    # tp=4: ranks 0-3 and nothing of the tp=8 job's ranks 4-7
    assert sorted(os.listdir(out)) == ["comm_group.json", "notes.txt", "plots",
                                       *(f"trace.{r}.et" for r in range(4)), "trace.ranks.json"]
    assert (out / "notes.txt").read_text() == "my notes"
    assert json.loads((out / "trace.ranks.json").read_text())["world"] == 4
    assert json.loads((out / "comm_group.json").read_text()) == {"1": [0, 1, 2, 3]}  # the one tp group
    checked = subprocess.run([*STAGEC, "check-trace", str(out), "--json"], capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0 and sorted(json.loads(checked.stdout)["ranks"]) == ["0", "1", "2", "3"]


def test_another_prefix_is_another_job(tmp_path, config):
    out = tmp_path / "out"
    assert trace(config, out, "--tp", "2", "--batch", "1", "--prefix", "llama", "--json").returncode == 0
    assert sorted(os.listdir(out)) == ["comm_group.json", "llama.0.et", "llama.0.json", "llama.1.et", "llama.1.json",
                                       "llama.ranks.json"]
    (out / "run.0.json").write_text("{}")  # a user's file that only looks like a dump: no run.0.et beside it
    refused = trace(config, out, "--dp", "2", "--batch", "2")
    assert refused.returncode == 2 and "holds the traces of another job (comm_group.json, llama.0.et" in refused.stderr
    forced = trace(config, out, "--dp", "2", "--batch", "2", "--force")
    assert forced.returncode == 0, forced.stderr
    assert sorted(os.listdir(out)) == ["comm_group.json", "run.0.json", "trace.0.et", "trace.1.et", "trace.ranks.json"]


def test_stagec_opt_replaces_a_previous_job_whole(tmp_path):
    """stagec-opt's chakra target writes -o DIR as mlir-opt writes -o FILE: over what
    was there, but never beside it - the 8-rank job's ranks 2-7 go, a user's file stays."""
    mlp = Path(__file__).parents[2] / "lit" / "docs" / "walkthrough" / "Inputs" / "mlp.mlir"
    out = tmp_path / "traces"

    def opt(strategy: str, *passes: str) -> None:
        pipeline = ",".join(["stg-autodiff{optimizer=sgd micro_batches=2}", f"stg-shard{{{strategy}}}",
                             "stg-match-collectives", *passes, "stg-instantiate{B=8 H=16 F=64 L=4}"])
        done = subprocess.run(["stagec-opt", str(mlp), "-p", pipeline, "-t", "chakra{prefix=mlp}", "-o", str(out)],
                              capture_output=True, text=True, timeout=120, env={
                                  **os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"})
        assert done.returncode == 0, done.stderr

    opt("dp=2 tp=2", "stg-pipeline{pp=2}")  # 2 x 2 x 2 = 8 ranks
    assert len([n for n in os.listdir(out) if n.endswith(".et")]) == 8
    (out / "notes.txt").write_text("mine")
    opt("tp=2")  # 2 ranks
    assert sorted(os.listdir(out)) == ["comm_group.json", "mlp.0.et", "mlp.1.et", "mlp.ranks.json", "notes.txt"]
    assert json.loads((out / "comm_group.json").read_text()) == {"1": [0, 1]}


def test_a_directory_of_other_files_is_written_into(tmp_path, config):
    out = tmp_path / "out"
    out.mkdir()
    (out / "README").write_text("results of run 7")
    done = trace(config, out, "--tp", "2", "--batch", "1")
    assert done.returncode == 0 and done.stderr == ""
    assert sorted(os.listdir(out)) == ["README", "comm_group.json", "trace.0.et", "trace.1.et", "trace.ranks.json"]


# -- class 4: runaway output --------------------------------------------------------------


def test_a_million_ranks_needs_yes(tmp_path, config):
    out = tmp_path / "out"
    done = trace(config, out, "--dp", "1000000")
    assert done.returncode == 2 and done.stdout == ""
    # 1,000,000 traces + comm_group.json + trace.ranks.json
    assert done.stderr.startswith(f"stagec: error: this job writes 1,000,002 files, about ")
    assert done.stderr.endswith(f" GiB, into '{out}': more than 10,000 files or 20 GiB; give --yes to write it\n")
    assert len(done.stderr.splitlines()) == 1
    assert leftovers(tmp_path) == []


ESTIMATE = textwrap.dedent("""\
    import json, os, sys
    from stagec.runtime.chakra import emit
    estimates = []
    real = emit.emit_traces
    def spy(*args, **kwargs):
        confirm = kwargs["confirm"]
        kwargs["confirm"] = lambda e: (estimates.append(e), confirm(e))
        return real(*args, **kwargs)
    emit.emit_traces = spy
    from stagec.tools.stagec_cli import main
    status = main(sys.argv[1:])
    out = sys.argv[sys.argv.index("--out") + 1]
    print(json.dumps({"status": status, "files": estimates[0].files, "bytes": estimates[0].bytes,
                      "actual_files": len(os.listdir(out)),
                      "actual_bytes": sum(os.path.getsize(os.path.join(out, n)) for n in os.listdir(out))}))
""")


@pytest.mark.parametrize("json_dumps", [False, True])
def test_the_estimate_is_close(tmp_path, config, json_dumps):
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-c", ESTIMATE, "trace", "--model", str(config), "--seq", "8", "--quiet",
                           "--dp", "2", "--tp", "2", "--pp", "2", "--batch", "4", *(["--json"] if json_dumps else []),
                           "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.splitlines()[-1])
    assert got["status"] == 0
    assert got["files"] == got["actual_files"] == (16 if json_dumps else 8) + 2  # 8 ranks (+ dumps), 2 json files
    assert abs(got["bytes"] - got["actual_bytes"]) <= 0.05 * got["actual_bytes"], got


def unshare_available() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode == 0


needs_unshare = pytest.mark.skipif(not sys.platform.startswith("linux") or not unshare_available(),
                                   reason="needs `unshare -rm` (a user and mount namespace) to mount a small tmpfs")


def in_tmpfs(tmp_path: Path, size: str, script: str) -> subprocess.CompletedProcess:
    """Run `script` (bash) with a fresh tmpfs of `size` at $DISK, in a private mount
    namespace: the mount disappears with it."""
    disk = tmp_path / "disk"
    disk.mkdir()
    body = f'set -u\nDISK={disk}\nmount -t tmpfs -o size={size} tmpfs "$DISK" || exit 77\n{script}'
    done = subprocess.run(["unshare", "-rm", "bash", "-c", body], capture_output=True, text=True, timeout=180)
    if done.returncode == 77:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    return done


@needs_unshare
def test_more_than_the_free_disk_is_refused(tmp_path, config):
    # 512 ranks of about 12 KB each, and a file system of 1 MiB
    job = f"--model {config} --dp 128 --tp 2 --pp 2 --batch 256 --seq 8 --quiet --yes"
    done = in_tmpfs(tmp_path, "1m", f"""
{' '.join(STAGEC)} trace {job} --out "$DISK/out" 2> {tmp_path}/err
echo "rc=$?"; ls -A "$DISK"
""")
    assert done.stdout.splitlines() == ["rc=2"], done  # and nothing on the disk
    err = (tmp_path / "err").read_text()
    assert err.startswith("stagec: error: this job writes 514 files, about ")
    assert err.endswith(f"MiB, into '{tmp_path}/disk/out', but its file system has 1.00 MiB free; "
                        f"write fewer ranks or choose another --out\n")


# -- class 5: I/O errors ------------------------------------------------------------------


def test_file_too_large(tmp_path, config):
    out = tmp_path / "out"

    def limit_file_size():  # RLIMIT_FSIZE: a write past 10,000 bytes fails with EFBIG (Python ignores SIGXFSZ)
        resource.setrlimit(resource.RLIMIT_FSIZE, (10_000, 10_000))

    # a tp=2 rank's trace of the tiny Llama is about 22 KB
    done = trace(config, out, "--tp", "2", "--batch", "1", "--workers", "1", preexec_fn=limit_file_size)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [f"stagec: error: cannot write {out}/trace.0.et: File too large"]
    assert leftovers(tmp_path) == []


SLOW_STAGEC = ("import sys, time\nfrom stagec.runtime.chakra import emit\nreal = emit.rank_bytes\n"
               "emit.rank_bytes = lambda e, t: (time.sleep(0.01), real(e, t))[1]\n"
               "from stagec.tools.stagec_cli import main\nsys.exit(main(sys.argv[1:]))\n")


@needs_unshare
def test_disk_full_while_writing(tmp_path, config):
    """The estimate fits; another process fills the disk while the writers write."""
    (tmp_path / "slow.py").write_text(SLOW_STAGEC)
    job = f"--model {config} --dp 128 --tp 2 --pp 2 --batch 256 --seq 8 --quiet --workers 2"
    done = in_tmpfs(tmp_path, "32m", f"""
{sys.executable} {tmp_path}/slow.py trace {job} --out "$DISK/out" 2> {tmp_path}/err &
pid=$!
for i in $(seq 1 6000); do
  n=$(ls "$DISK"/.out.stagec-$pid.tmp 2>/dev/null | grep -c '\\.et$')
  [ "$n" -ge 20 ] && break
  sleep 0.01
done
head -c 64m /dev/zero > "$DISK/filler" 2>/dev/null
wait $pid; echo "rc=$?"; ls -A "$DISK"
""")
    assert done.stdout.splitlines() == ["rc=2", "filler"], done  # the job's files all gone
    lines = (tmp_path / "err").read_text().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"stagec: error: cannot write {tmp_path}/disk/out/")
    assert lines[0].endswith(": No space left on device")


def test_no_permission(tmp_path, config):
    parent = tmp_path / "results"
    parent.mkdir()
    if os.geteuid() != 0:
        parent.chmod(0o555)
        reason = "Permission denied"
        undo = lambda: parent.chmod(0o755)  # noqa: E731
    else:  # root writes through a mode of 0555: make the directory immutable instead (ext4, xfs, btrfs)
        if subprocess.run(["chattr", "+i", str(parent)], capture_output=True).returncode != 0:
            pytest.skip("root, and no chattr +i on this file system: no way to deny a write")
        reason = "Operation not permitted"
        undo = lambda: subprocess.run(["chattr", "-i", str(parent)], check=True)  # noqa: E731
    try:
        done = trace(config, parent / "out", "--tp", "2", "--batch", "1")
    finally:
        undo()
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [f"stagec: error: cannot create {parent}/out: {reason}"]
    assert os.listdir(parent) == []
