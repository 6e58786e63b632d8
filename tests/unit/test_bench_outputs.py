"""Benchmarks write their results where the user asks, never over the recorded ones
in bench/results/ by default (issue 17, class 15)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SCRIPTS = sorted(p for p in BENCH.glob("*.py") if p.name not in ("results_io.py", "progress_bar.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_a_benchmark_writes_json_only_where_asked(script):
    tree = ast.parse(script.read_text())
    json_options = [call for call in ast.walk(tree) if isinstance(call, ast.Call)
                    and getattr(call.func, "attr", None) == "add_argument"
                    and any(isinstance(a, ast.Constant) and a.value == "--json" for a in call.args)]
    assert json_options, f"{script.name} has no --json FILE option"
    for call in json_options:
        default = next((k.value for k in call.keywords if k.arg == "default"), None)
        assert default is None or (isinstance(default, ast.Constant) and default.value is None), \
            f"{script.name}'s --json has a default: a run would overwrite a file the user did not name"
    # and no other path into bench/results/ is built (os.path.join(HERE, "results", ...), ROOT / "results")
    for node in ast.walk(tree):
        parts = node.args if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "join" else \
            [node.right] if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) else []
        assert not any(isinstance(p, ast.Constant) and p.value == "results" for p in parts), \
            f"{script.name} builds a path into bench/results/"
