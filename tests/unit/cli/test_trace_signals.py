"""Ctrl-C, SIGTERM and SIGKILL during `stagec trace`, in real processes with real signals
(issue 17, class 2): one line and exit 130 / 143, the writer processes gone with their
parent, and --out either the previous complete result or no result at all.

The writers are slowed down (10 ms a rank, patched into the process the test starts and
inherited by its forked writers) so that a signal reliably arrives while they write."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.unit.templates.tiny_configs import TINY

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG and /proc are Linux's")

SLOW_STAGEC = """\
import sys, time
from stagec.runtime.chakra import emit
real = emit.rank_bytes
def slow(encoded, table):
    time.sleep(0.01)
    return real(encoded, table)
emit.rank_bytes = slow
from stagec.tools.stagec_cli import main
sys.exit(main(sys.argv[1:]))
"""

# 128 x 2 x 2 = 512 ranks: more than the 256 from which emit_traces writes with a pool
JOB = ["--dp", "128", "--tp", "2", "--pp", "2", "--batch", "256", "--seq", "8", "--quiet"]


@pytest.fixture
def config(tmp_path) -> Path:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY["llama"]))
    return path


def start(config: Path, out: Path, *extra: str) -> subprocess.Popen:
    # its own session, like a job a shell starts: Ctrl-C reaches its whole process group
    return subprocess.Popen([sys.executable, "-c", SLOW_STAGEC, "trace", "--model", str(config), *JOB, *extra,
                             "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def staged_files(out: Path) -> int:
    """The trace files written so far: into the staging directory (beside or inside
    --out), or (a writer without one) into --out."""
    count = sum(1 for n in os.listdir(out) if n.endswith(".et")) if out.is_dir() else 0
    for base in (out.parent, out):
        if base.is_dir():
            for entry in base.iterdir():
                if entry.name.endswith(".tmp") and "stagec-" in entry.name and entry.is_dir():
                    count += sum(1 for n in os.listdir(entry) if n.endswith(".et"))
    return count


def wait_for_writing(proc: subprocess.Popen, out: Path, files: int = 20) -> None:
    deadline = time.time() + 120
    while staged_files(out) < files:
        assert proc.poll() is None, f"the run ended before writing {files} files: {proc.stderr.read()}"
        assert time.time() < deadline, "no trace files after 120 s"
        time.sleep(0.005)


def group_members(pgid: int) -> list[int]:
    """The live processes of a process group (/proc/PID/stat field 5), zombies aside."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            if fields[0] != "Z" and int(fields[2]) == pgid:
                members.append(int(entry))
    return members


def wait_gone(pgid: int) -> list[int]:
    deadline = time.time() + 10
    while (left := group_members(pgid)) and time.time() < deadline:
        time.sleep(0.02)
    return left


def leftovers(directory: Path) -> list[str]:
    return sorted(n for n in os.listdir(directory) if n != "tiny.json")


def test_ctrl_c_while_the_pool_writes(tmp_path, config):
    out = tmp_path / "out"
    proc = start(config, out, "--workers", "2")
    wait_for_writing(proc, out)
    assert len(group_members(proc.pid)) >= 3  # the parent and its two writers
    os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C: the whole foreground group
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130  # 128 + SIGINT, as a shell reports it
    assert err == "stagec: interrupted\n"  # no KeyboardInterrupt traceback from any process
    assert wait_gone(proc.pid) == []
    assert leftovers(tmp_path) == []  # no --out, no staging directory


def test_sigterm_while_the_pool_writes(tmp_path, config):
    out = tmp_path / "out"
    proc = start(config, out, "--workers", "2")
    wait_for_writing(proc, out)
    proc.send_signal(signal.SIGTERM)  # the parent only, as a batch system sends it
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143  # 128 + SIGTERM
    assert err == "stagec: terminated\n"
    assert wait_gone(proc.pid) == []
    assert leftovers(tmp_path) == []


def test_ctrl_c_without_a_pool(tmp_path, config):
    out = tmp_path / "out"
    proc = start(config, out, "--workers", "1")
    wait_for_writing(proc, out)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (130, "stagec: interrupted\n")
    assert leftovers(tmp_path) == []


def writing_with_two_writers(config: Path, out: Path) -> tuple[subprocess.Popen, list[int]]:
    """`stagec trace` started and writing: the process and the pids of its two writers."""
    proc = start(config, out, "--workers", "2")
    wait_for_writing(proc, out)
    writers = [p for p in group_members(proc.pid) if p != proc.pid]
    assert len(writers) == 2
    return proc, writers


def test_sigkill_takes_the_writers_along(tmp_path, config):
    out = tmp_path / "out"
    proc, _ = writing_with_two_writers(config, out)
    proc.kill()  # nothing runs in the parent: the writers must not go on (PR_SET_PDEATHSIG)
    _, err = proc.communicate(timeout=60)  # returns once every holder of the stderr pipe is gone
    assert proc.returncode == -signal.SIGKILL
    assert wait_gone(proc.pid) == []
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert not out.exists()  # no result at all: the killed run's files are all in its staging directory
    # the next run clears the dead run's staging directory and writes the whole result
    again = subprocess.run([sys.executable, "-m", "stagec.tools.stagec_cli", "trace", "--model", str(config), *JOB,
                            "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert leftovers(tmp_path) == ["out"]
    assert len([n for n in os.listdir(out) if n.endswith(".et")]) == 512


def test_an_interrupt_keeps_the_previous_result(tmp_path, config):
    out = tmp_path / "out"
    first = subprocess.run([sys.executable, "-m", "stagec.tools.stagec_cli", "trace", "--model", str(config),
                            "--tp", "2", "--batch", "1", "--seq", "8", "--quiet", "--out", str(out)],
                           capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    (out / "notes.txt").write_text("mine")
    before = {n: (out / n).read_bytes() for n in os.listdir(out)}
    assert sorted(before) == ["comm_group.json", "notes.txt", "trace.0.et", "trace.1.et", "trace.ranks.json"]
    proc = start(config, out, "--workers", "2", "--force")
    wait_for_writing(proc, out)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (130, "stagec: interrupted\n")
    assert {n: (out / n).read_bytes() for n in os.listdir(out)} == before  # byte for byte, nothing added


SLOW_CHECK = """\
import sys, time
from stagec.runtime.chakra import check
real = check.check_file
def slow(*args):
    time.sleep(0.02)
    return real(*args)
check.check_file = slow
from stagec.tools.stagec_cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_ctrl_c_during_check_trace(tmp_path, config):
    out = tmp_path / "out"
    subprocess.run([sys.executable, "-m", "stagec.tools.stagec_cli", "trace", "--model", str(config), *JOB,
                    "--out", str(out)], check=True, capture_output=True, timeout=120)
    proc = subprocess.Popen([sys.executable, "-c", SLOW_CHECK, "check-trace", str(out), "--jobs", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    # 512 files x 20 ms over 2 workers: about 5 s of checking; interrupt once the workers run
    deadline = time.time() + 60
    while len(group_members(proc.pid)) < 3:
        assert proc.poll() is None and time.time() < deadline, proc.stderr.read()
        time.sleep(0.01)
    time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGINT)
    stdout, err = proc.communicate(timeout=60)
    assert (proc.returncode, stdout, err) == (130, "", "stagec: interrupted\n")
    assert wait_gone(proc.pid) == []


def catches(pid: int, signum: int) -> bool:
    """Whether process `pid` has a handler of its own for `signum` (/proc's SigCgt)."""
    with open(f"/proc/{pid}/status") as status:
        mask = next(int(line.split()[1], 16) for line in status if line.startswith("SigCgt:"))
    return bool(mask >> (signum - 1) & 1)


@pytest.mark.parametrize("signum, status, line", [(signal.SIGINT, 130, "stagec: interrupted"),
                                                  (signal.SIGTERM, 143, "stagec: terminated")])
@pytest.mark.parametrize("delay", [0.05, 0.3])
def test_a_signal_while_stagec_starts(tmp_path, config, signum, status, line, delay):
    """The `stagec` command itself, signalled while it imports (about half a second) or
    builds the job: the same one line and status, and no --out.

    `delay` counts from the moment stagec's first lines have taken the signals
    (stagec_cli's `exit_on_early_signals`): before that the interpreter is still
    starting and no program's code has run, so SIGTERM ends it silently by the kernel's
    default (status -15; measured here up to 30 ms after the exec on an idle machine,
    longer under load), which no program can change."""
    stagec = Path(sys.executable).with_name("stagec")
    if not stagec.exists():
        pytest.skip("no `stagec` command beside this interpreter")
    out = tmp_path / "out"
    proc = subprocess.Popen([str(stagec), "trace", "--model", str(config), *JOB, "--out", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.time() + 60
    while not catches(proc.pid, signal.SIGTERM):  # SIGINT is Python's own from its start
        assert proc.poll() is None and time.time() < deadline, proc.stderr.read()
        time.sleep(0.001)
    # taken before the imports, not by main() after them: numpy (which the imports load,
    # about 300 ms after this point here) is not mapped yet
    with open(f"/proc/{proc.pid}/maps") as maps:
        assert "_multiarray_umath" not in maps.read()
    time.sleep(delay)
    os.killpg(proc.pid, signum)
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (status, line + "\n")
    assert leftovers(tmp_path) == []


def start_dse(tmp_path: Path, config: Path) -> subprocess.Popen:
    # the tiny Llama on 16 GPUs: 236 strategies, well under a second
    # each, each in a process forked for it (runtime/workers.py fork_each)
    return subprocess.Popen([sys.executable, "-m", "stagec.tools.stagec_cli", "dse", "--model", str(config),
                             "--gpus", "16", "--hbm", "80", "--batch", "32", "--seq", "64", "--jobs", "2",
                             "--plot", str(tmp_path / "dse.png")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def wait_for_strategy_workers(proc: subprocess.Popen) -> None:
    deadline = time.time() + 60
    while len(group_members(proc.pid)) < 3:
        assert proc.poll() is None and time.time() < deadline, proc.stderr.read()
        time.sleep(0.005)


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_a_signal_during_dse(tmp_path, config, how):
    proc = start_dse(tmp_path, config)
    wait_for_strategy_workers(proc)
    if how == "ctrl-c":
        os.killpg(proc.pid, signal.SIGINT)  # the terminal's: every process of the group
    else:
        proc.send_signal(signal.SIGTERM)  # the parent's only
    stdout, err = proc.communicate(timeout=60)
    expected = (130, "stagec: interrupted\n") if how == "ctrl-c" else (143, "stagec: terminated\n")
    assert (proc.returncode, err) == expected
    assert stdout == ""  # no partial table
    assert wait_gone(proc.pid) == []  # every strategy's process killed and reaped
    assert leftovers(tmp_path) == []  # no plot, no temporary plot


def test_dse_killed_takes_its_strategy_workers_along(tmp_path, config):
    proc = start_dse(tmp_path, config)
    wait_for_strategy_workers(proc)
    proc.kill()  # nothing runs in the parent: the workers die with it (PR_SET_PDEATHSIG)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert wait_gone(proc.pid) == []
    assert "Traceback" not in err, err


def test_a_writer_killed_alone_is_one_line_not_a_wait(tmp_path, config):
    # as the out-of-memory killer ends one process: multiprocessing.Pool waited for ever
    out = tmp_path / "out"
    proc, writers = writing_with_two_writers(config, out)
    os.kill(writers[0], signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert err.startswith("stagec: error: a worker of the pool ended without its result (killed by SIGKILL). "
                          "The kernel's out-of-memory killer"), err
    assert err.count("\n") == 1, err
    assert wait_gone(proc.pid) == []
    assert leftovers(tmp_path) == []  # no --out, no staging directory
