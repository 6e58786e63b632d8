"""`stagec ps run` comes from `stagec.tools.stagec_ps_run` when that module exists
(tools/stagec_ps.py): its add_arguments fills the parser, its run's status is stagec's."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import types

import pytest

from stagec.tools.stagec_cli import main

NAME = "stagec.tools.stagec_ps_run"


def test_run_is_absent_without_the_module(capsys):
    if NAME in sys.modules or importlib.util.find_spec(NAME) is not None:
        pytest.skip("the PS runtime's stagec ps run is installed")
    with pytest.raises(SystemExit) as exit_:
        main(["ps", "run", "x.yaml"])
    assert exit_.value.code == 2
    assert "invalid choice: 'run'" in capsys.readouterr().err


def test_run_hook_wires_the_module(monkeypatch):
    seen = {}
    runner = types.ModuleType(NAME, "Run a Di-PS deployment (a stand-in for the PS runtime).")
    runner.__spec__ = importlib.machinery.ModuleSpec(NAME, None)

    def add_arguments(parser):
        parser.add_argument("config")
        parser.add_argument("--rounds", type=int, default=1)

    def run(args):
        seen.update(config=args.config, rounds=args.rounds)
        return 3

    runner.add_arguments, runner.run = add_arguments, run
    monkeypatch.setitem(sys.modules, NAME, runner)
    assert main(["ps", "run", "deploy.yaml", "--rounds", "5"]) == 3
    assert seen == {"config": "deploy.yaml", "rounds": 5}
