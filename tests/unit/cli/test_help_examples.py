"""Every `stagec` example in the --help texts and the README names a command and
options that exist (issue 17: examples that run as written). Each example is parsed by
the CLI's own argument parser, so a renamed or removed option fails here."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from stagec.tools.stagec_cli import _parser

ROOT = Path(__file__).resolve().parents[3]
HELPS = ["", "summary", "stats", "trace", "simulate", "dse", "import", "check-trace", "ir", "run", "compile", "ps",
         "ps plan", "ps run"]


def _help(command: str) -> str:
    return subprocess.run([sys.executable, "-m", "stagec.tools.stagec_cli", *command.split(), "--help"],
                          capture_output=True, text=True, timeout=120).stdout


def _commands(text: str) -> list[str]:
    """The `stagec ...` invocations in lines of text: pipelines and `&&` chains split,
    a trailing `(explanation)` and shell redirections dropped."""
    found = []
    for line in text.splitlines():
        line = re.sub(r"\s{2,}\(.*\)\s*$", "", line.strip())
        for part in re.split(r"\|\||&&|\|", line):
            part = re.sub(r"\s*>\s*\S+\s*$", "", part.strip())
            if part.startswith("stagec ") and not part.startswith("stagec compiles"):
                found.append(part)
    return found


def examples() -> list[str]:
    seen = []
    for command in HELPS:
        seen += _commands(_help(command))
    readme = (ROOT / "README.md").read_text()
    for block in re.findall(r"```(?:sh|bash|console)?\n(.*?)```", readme, re.S):
        seen += [c for c in _commands(block) if not c.startswith("stagec-opt")]
    return sorted(set(seen))


def test_there_are_examples_to_check():
    assert len(examples()) > 40


@pytest.mark.parametrize("example", examples())
def test_example_parses(example):
    argv = shlex.split(example)[1:]
    try:
        _parser().parse_args(argv)
    except SystemExit as exit_:
        pytest.fail(f"`{example}` does not parse (exit {exit_.code})")
