"""--help teaches (issue 17, class 14): stagec-opt lists every pass with each option's
meaning, as mlir-opt does; no summary stops mid-sentence; no help text sends the user
to a file outside the repository."""

from __future__ import annotations

import subprocess
import sys

import pytest

from stagec.passes import all_passes
from stagec.tools.stagec_opt import pass_options

OUTSIDE = ("stage.md", "deepcompile.md", "di-ps.md", "ARCHITECTURE.md", "STYLE.md", "CHAKRA.md", "ASTRA-SIM.md",
           "../shared")
COMMANDS = ["", "summary", "stats", "trace", "simulate", "dse", "import", "check-trace", "ir", "run", "ps", "ps plan",
            "ps run"]


def stagec_passes():
    return {name: factory() for name, factory in all_passes().items() if factory().__module__.startswith("stagec.")}


@pytest.mark.parametrize("name", sorted(stagec_passes()))
def test_every_pass_option_says_what_it_means(name):
    cls = stagec_passes()[name]
    for option in pass_options(cls):
        assert option.doc, f"{name}'s option {option.name} has no docstring under its field"
        assert option.doc.rstrip(")").endswith((".", "?")), f"{name} {option.name}: '{option.doc}' is cut"


def test_stagec_opt_help_shows_options_with_defaults():
    done = subprocess.run([sys.executable, "-m", "stagec.tools.stagec_opt", "--help"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    prefetch = next(i for i, line in enumerate(lines) if line.strip().startswith("stg-prefetch "))
    assert lines[prefetch + 1].split() [:1] == ["memory-limit=<int>"]
    assert "(default: 1.5)" in next(line for line in lines[prefetch:] if "alpha=<number>" in line)
    instantiate = next(line for line in lines if line.strip().startswith("SYMBOL=<int>"))
    assert "Bind a symbol" in instantiate


def test_pass_summaries_are_whole_sentences():
    for name, cls in stagec_passes().items():
        doc = " ".join((cls.__doc__ or "").split("\n\n")[0].split())
        assert doc.endswith((".", ")")), f"{name}'s summary '{doc}' stops mid-sentence"


@pytest.mark.parametrize("command", COMMANDS)
def test_help_cites_only_files_in_the_repository(command):
    done = subprocess.run([sys.executable, "-m", "stagec.tools.stagec_cli", *command.split(), "--help"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    for outside in OUTSIDE:
        assert outside not in done.stdout, f"stagec {command} --help cites {outside}, which users do not have"


def test_stagec_opt_help_cites_only_files_in_the_repository():
    done = subprocess.run([sys.executable, "-m", "stagec.tools.stagec_opt", "--help"], capture_output=True, text=True,
                          timeout=120)
    for outside in OUTSIDE:
        assert outside not in done.stdout
