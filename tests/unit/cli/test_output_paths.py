"""Where `-o` writes, and what a write the machine refuses does (issue 17, classes 5
and 8, review): `-o -` is stdout; a FIFO or device is written in place, never replaced
by a regular file (as root, `-o /dev/null` would replace the machine's /dev/null); a
link keeps pointing at its file; a file-size limit or a full disk behind stdout is one
line naming what could not be written, exit status 2, no temporary file left; binary
input is named as such; SIGINT and SIGTERM during stagec-opt are one line, 130 / 143,
and leave no temporary file."""

from __future__ import annotations

import os
import resource
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stagec.tools import stagec_cli, stagec_opt

MLP = str(Path(__file__).parents[3] / "examples" / "mlp.mlir")


def test_dash_is_stdout(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert stagec_opt.main([MLP, "-o", "-"]) == 0
    assert "func.func @mlp()" in capsys.readouterr().out
    assert os.listdir(tmp_path) == []  # no file named '-'


def test_fifo_is_written_in_place(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, so that opening it to write does not block
    try:
        assert stagec_opt.main([MLP, "-o", str(fifo)]) == 0
        received = os.read(reader, 1 << 16).decode()
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert "func.func @mlp()" in received
    assert sorted(os.listdir(tmp_path)) == ["pipe"]


def test_link_keeps_pointing_at_its_file(tmp_path):
    (tmp_path / "real.mlir").write_text("old\n")
    (tmp_path / "link.mlir").symlink_to("real.mlir")
    assert stagec_opt.main([MLP, "-o", str(tmp_path / "link.mlir")]) == 0
    assert os.readlink(tmp_path / "link.mlir") == "real.mlir"
    assert "func.func @mlp()" in (tmp_path / "real.mlir").read_text()
    assert sorted(os.listdir(tmp_path)) == ["link.mlir", "real.mlir"]


def _limit_file_size() -> None:
    # 2 KiB: less than `stagec ir --model llama3-70b` prints (about 5 KB); Python
    # ignores SIGXFSZ, so the write fails with EFBIG instead of killing the process
    resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))


@pytest.mark.parametrize("command", [
    ["stagec-opt", "BIG", "-o", "OUT"],
    ["stagec", "ir", "--model", "llama3-70b", "-o", "OUT"],
], ids=["stagec-opt", "stagec-ir"])
def test_file_too_large(tmp_path, command):
    big = tmp_path / "big.mlir"
    subprocess.run([_tool("stagec"), "ir", "--model", "llama3-70b", "-o", str(big)], check=True,
                   stderr=subprocess.DEVNULL)
    assert big.stat().st_size > 2048
    out = tmp_path / "out" / "x.mlir"
    out.parent.mkdir()
    argv = [_tool(command[0])] + [str(big) if a == "BIG" else str(out) if a == "OUT" else a for a in command[1:]]
    done = subprocess.run(argv, capture_output=True, text=True, preexec_fn=_limit_file_size)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"{command[0]}: error: cannot write output file '{out}': File too large"]
    assert os.listdir(out.parent) == []  # neither the output nor its temporary file


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("command", [["stagec-opt", MLP], ["stagec", "ir"]], ids=["stagec-opt", "stagec-ir"])
def test_stdout_on_a_full_disk(command):
    with open("/dev/full", "w") as full:
        done = subprocess.run([_tool(command[0]), *command[1:]], stdout=full, stderr=subprocess.PIPE, text=True)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"{command[0]}: error: cannot write standard output: No space left on device"]


@pytest.mark.parametrize("data, where, code", [
    (b"\x00\x01\x02", "1:1", "U+0000"),
    (b"func.func @f() {\n  func.return\n}\n\x7fELF", "4:1", "U+007F"),
])
def test_binary_input(tmp_path, capsys, data, where, code):
    path = tmp_path / "binary.mlir"
    path.write_bytes(data)
    assert stagec_opt.main([str(path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{path}:{where}: error: the input holds the control character {code}: stagec-opt reads MLIR text, "
        "not a binary file"]


@pytest.mark.parametrize("signum, status, word", [(signal.SIGINT, 130, "interrupted"),
                                                  (signal.SIGTERM, 143, "terminated")])
def test_stagec_opt_signals(tmp_path, signum, status, word):
    # 400 copies of the MLP: stagec-opt parses and annotates them for about ten
    # seconds, long enough to be signalled while its -o temporary file is open
    lines = [line for line in Path(MLP).read_text().splitlines() if not line.startswith("//")]
    body = "\n".join(lines[1:])
    big = tmp_path / "many.mlir"
    big.write_text("\n".join([lines[0]] + [body.replace("@mlp", f"@mlp{i}") for i in range(400)]) + "\n")
    out = tmp_path / "out"
    out.mkdir()
    process = subprocess.Popen([_tool("stagec-opt"), str(big), "-p", "stg-annotate-costs", "-o", str(out / "x.mlir")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not os.listdir(out) and time.monotonic() < deadline:  # the temporary file opens after parsing
        time.sleep(0.05)
    assert os.listdir(out), "stagec-opt never opened its output"
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    assert process.returncode == status
    assert err.splitlines() == [f"stagec-opt: {word}"]
    assert os.listdir(out) == []


def test_stagec_flushes_before_returning(capsys):
    # the flush that reports a full disk must not disturb an ordinary run
    assert stagec_cli.main(["ir", "--model", "llama-mlp", "--pass-pipeline", "builtin.module()"]) == 0
    assert "stg.mesh" in capsys.readouterr().out


def _tool(name: str) -> str:
    return os.path.join(os.path.dirname(sys.executable), name)


@pytest.mark.parametrize("argv, option", [
    (["simulate", "--model", "examples/tiny.json", "--seq", "64", "--quiet", "--timeline", "FIFO"], "--timeline"),
    (["stats", "--model", "examples/tiny.json", "--timeline-png", "FIFO"], "--timeline-png"),
    (["dse", "--model", "examples/tiny.json", "--gpus", "2", "--hbm", "80", "--plot", "FIFO"], "--plot"),
], ids=["simulate-timeline", "stats-timeline-png", "dse-plot"])
def test_outputs_replaced_by_rename_refuse_a_fifo(tmp_path, capsys, argv, option):
    """These writers rename a temporary file over their path: over a FIFO or device
    (as root, --timeline /dev/null) they would replace it; refused before any work."""
    fifo = tmp_path / "out.png"
    os.mkfifo(fifo)
    assert stagec_cli.main([str(fifo) if a == "FIFO" else a for a in argv]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"stagec: error: {option} '{fifo}': not a regular file (a device, a FIFO or a path in /dev or /proc), "
        "which this output would replace; give a file path"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.listdir(tmp_path) == ["out.png"]


def test_compile_writes_a_fifo_in_place(tmp_path):
    """`stagec compile -o`'s writer (as root, -o /dev/null replaced the device)."""
    from xdsl.dialects.builtin import ModuleOp

    from stagec.tools.stagec_compile import write_module

    fifo = tmp_path / "step.mlir"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        write_module(ModuleOp([]), str(fifo))
        received = _read_some(reader)
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.listdir(tmp_path) == ["step.mlir"]
    assert received == b"builtin.module {\n}\n"


def _read_some(fd: int) -> bytes:
    try:
        return os.read(fd, 1 << 20)
    except BlockingIOError:
        return b""


def test_a_missing_directory_is_refused_before_the_work(tmp_path, capsys):
    """`stagec dse --plot missing/p.png` simulated every strategy (minutes on a large
    cluster) and only then failed to write the plot."""
    path = tmp_path / "missing" / "p.png"
    assert stagec_cli.main(["dse", "--model", "examples/tiny.json", "--gpus", "2", "--hbm", "80", "--plot",
                            str(path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"stagec: error: --plot '{path}': the directory '{path.parent}' does not exist"]
