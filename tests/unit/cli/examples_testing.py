"""Finding and running the examples of the --help texts and the README (issue 17:
every example runs as written), for tests/unit/cli/test_help_examples.py.

An example is a line a reader would copy: in a --help text, an indented line that
starts with `stagec ` or `stagec-opt ` (a trailing `   (explanation)` dropped); in the
README, a line of a sh/bash/console block (a `# comment` dropped), or the stagec
commands of an install line's `&&` chain. It runs through bash, as written, in a
working directory where `examples/` and `tests/` are the repository's, so paths such
as examples/tiny.json resolve as they do in a clone, and what it writes stays there."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
# The console scripts `pip install -e .` put beside this interpreter.
BIN = Path(sys.executable).parent
HELPS = ["", "summary", "stats", "trace", "simulate", "dse", "import", "check-trace", "ir", "run", "compile", "ps",
         "ps plan", "ps run"]
COMMAND = re.compile(r"stagec(-opt)?( |$)")


def help_text(command: str) -> str:
    """What `stagec COMMAND --help` prints (`stagec-opt --help` for "stagec-opt"): the
    CLI's own parser formats it here, in this process (a process per text would cost a
    second each); stagec-opt's is xDSL's driver's, run as a process."""
    if command == "stagec-opt":
        argv = [sys.executable, "-m", "stagec.tools.stagec_opt", "--help"]
        return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True).stdout
    from stagec.tools.stagec_cli import _parser

    parser = _parser()
    for word in command.split():
        subcommands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = subcommands.choices[word]
    return parser.format_help()


def _clean(line: str) -> str:
    line = re.sub(r"\s{2,}\(.*\)\s*$", "", line.strip())  # `   (what it shows)`
    return re.sub(r"\s+#.*$", "", line)  # `  # a comment`


def help_examples(text: str) -> list[str]:
    return [_clean(line) for line in text.splitlines() if line.startswith("  ") and COMMAND.match(line.strip())]


def readme_examples(text: str) -> list[str]:
    found, lang = [], None
    for line in text.splitlines():
        if line.startswith("```"):
            lang = line[3:].strip() if lang is None else None
            continue
        if lang not in ("sh", "bash", "console"):
            continue
        line = _clean(line)
        if COMMAND.match(line):
            found.append(line)
        else:  # `python3 -m venv .venv && ... && stagec summary`: its stagec commands
            found += [part.strip() for part in line.split("&&") if COMMAND.match(part.strip())]
    return found


def examples() -> list[str]:
    """Every example, in the order a reader meets them, each once."""
    found = []
    for command in [*HELPS, "stagec-opt"]:
        found += help_examples(help_text(command))
    found += readme_examples((ROOT / "README.md").read_text())
    return list(dict.fromkeys(found))


def stagec_commands(example: str) -> list[list[str]]:
    """The argv (after `stagec`) of each `stagec` command in an example: pipelines and
    `&&` chains split, shell redirections dropped; stagec-opt's are not included."""
    commands = []
    for part in re.split(r"\|\||&&|\|", example):
        part = re.sub(r"\s*>\s*\S+\s*$", "", part.strip())
        if part.startswith("stagec "):
            commands.append(shlex.split(part)[1:])
        elif part == "stagec":
            commands.append([])
    return commands


# -- running --------------------------------------------------------------------------


@dataclass
class Ran:
    """One example, run: where, how it ended, what it printed, how long it took."""

    example: str
    cwd: Path
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def path(self, *parts: str) -> Path:
        return self.cwd.joinpath(*parts)

    def json(self) -> dict:
        return json.loads(self.stdout)


def working_directory(path: Path) -> Path:
    """`path` made a place to run examples in: examples/ and tests/ are the repository's."""
    path.mkdir(parents=True, exist_ok=True)
    for name in ("examples", "tests"):
        if not (path / name).exists():
            (path / name).symlink_to(ROOT / name, target_is_directory=True)
    return path


def run_example(example: str, cwd: Path, timeout: float) -> Ran:
    """Runs `example` through bash in `cwd`; the whole process group is killed after
    `timeout` seconds (mpiexec's ranks, check-trace's workers, the Di-PS processes)."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "MPLBACKEND": "Agg",
           "PYTHONPATH": ""}
    start = time.monotonic()
    proc = subprocess.Popen(["bash", "-c", example], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        raise AssertionError(f"`{example}` ran past {timeout:.0f} s\n{stderr[-2000:]}") from None
    return Ran(example, cwd, proc.returncode, stdout, stderr, time.monotonic() - start)


# -- scenarios --------------------------------------------------------------------------


Check = Callable[[Ran], None]


@dataclass(frozen=True)
class Step:
    """An example and what must hold of what it wrote or printed."""

    example: str
    check: Check


@dataclass(frozen=True)
class Scenario:
    """Examples that share a working directory, run in order (a `stagec compile -o
    step.mlir` before `stagec simulate step.mlir`). `setup` are commands (not
    examples) that make inputs no example makes; `scale` ones run with -m scale."""

    name: str
    steps: tuple[Step, ...]
    scale: bool = False
    setup: tuple[str, ...] = field(default=())

    @property
    def examples(self) -> list[str]:
        return [s.example for s in self.steps]
