"""`stagec ps run` (tools/stagec_ps_run.py): a plan in, processes run, a summary out; a
bad file is one line and exit status 2."""

import json

import pytest

from stagec.runtime.ps.deployment import plan_to_json
from stagec.tools.stagec_ps_run import main

from .util import tiny_plan


def test_a_plan_runs_to_its_token_budget(tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"plan": plan_to_json(tiny_plan()), "run": {"mode": "sync", "total_tokens": 2048}}))
    out = tmp_path / "result.json"
    assert main([str(plan), "--quiet", "--workdir", str(tmp_path / "run"), "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    # sync: one round of both clusters, 2 x 4 steps x 8 x 32 = 2048 tokens, version 1
    assert result["finished"] and result["version"] == 1 and result["tokens"] == 2048
    assert result["mode"] == "sync" and 0 < result["eval_loss"] < 10


@pytest.mark.parametrize("content, message", [
    ("[1, 2]", "expected a JSON object with a plan, got list"),
    ("{", "not JSON"),
    ('{"clusters": []}', "not a Di-PS plan"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, content, message):
    path = tmp_path / "plan.json"
    path.write_text(content)
    assert main([str(path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


def test_layers_that_match_no_parameter_are_reported(tmp_path, capsys):
    data = plan_to_json(tiny_plan())
    data["layers"][0]["prefix"] = "model.embedding"
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(data))
    assert main([str(path), "--quiet"]) == 2
    assert "belongs to no layer of the plan" in capsys.readouterr().err
