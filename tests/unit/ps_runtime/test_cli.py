"""`stagec ps run` (tools/stagec_ps_run.py): a plan in, processes run, a summary out; a
bad file is one line and exit status 2."""

import json
from pathlib import Path

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


def test_a_config_is_read_whatever_its_name_as_ps_plan_reads_it(tmp_path):
    # `stagec ps plan` takes any non-.mlir file as a CONFIG (YAML, of which JSON is a
    # subset); `ps run` took only .yaml/.yml and read the rest as a plan JSON.
    import yaml

    from stagec.tools.stagec_ps_run import _read

    config = yaml.safe_load(open("examples/ps/tiny4.yaml"))
    expected, _ = _read(Path("examples/ps/tiny4.yaml"))
    as_json = tmp_path / "tiny4.json"
    as_json.write_text(json.dumps(config))
    other_suffix = tmp_path / "tiny4.cfg"
    other_suffix.write_text(Path("examples/ps/tiny4.yaml").read_text())
    for path in (as_json, other_suffix):
        plan, run = _read(path)
        assert plan == expected and run["model_description"].name == "llama3.2-1b"


@pytest.mark.parametrize("name", ["a_dir", "a_dir.json"])
def test_a_directory_is_one_line_and_exit_2(tmp_path, capsys, name):
    (tmp_path / name).mkdir()
    assert main([str(tmp_path / name), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "Is a directory" in err and "Traceback" not in err and err.count("\n") == 1


@pytest.mark.parametrize("field, value", [("inner_steps", 0), ("heartbeat_s", 0.0)])
def test_a_plan_the_runtime_would_loop_on_is_refused_before_it_starts(tmp_path, capsys, field, value):
    # H = 0 ran until --timeout (or for ever): no cluster consumed a token.
    data = plan_to_json(tiny_plan())
    data[field] = value
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(data))
    assert main([str(path), "--quiet", "--timeout", "20"]) == 2
    err = capsys.readouterr().err
    assert f"{field} " in err and "Traceback" not in err and err.count("\n") == 1


def test_a_heartbeat_no_process_can_keep_is_refused_before_it_starts(tmp_path, capsys):
    # 1us x 1 (a typo for 1s): the master restarted every slave over and over and the
    # run made no progress until --timeout
    config = tmp_path / "cfg.yaml"
    config.write_text(Path("examples/ps/tiny4.yaml").read_text().replace("interval: 1s, missed: 3", "interval: 1us, missed: 1"))
    assert main([str(config), "--quiet", "--timeout", "20"]) == 2
    err = capsys.readouterr().err
    assert "declared dead after 1e-06 s of silence; give at least 0.05 s" in err
    assert "Traceback" not in err and err.count("\n") == 1


@pytest.mark.parametrize("where", ["file", "file/run"])
def test_a_workdir_that_cannot_be_a_directory_is_one_line_and_exit_2(tmp_path, capsys, where):
    (tmp_path / "file").write_text("mine")
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(plan_to_json(tiny_plan())))
    assert main([str(plan), "--quiet", "--workdir", str(tmp_path / where)]) == 2
    err = capsys.readouterr().err
    assert f"error: --workdir '{tmp_path / where}': cannot make it a directory: " in err
    assert "Traceback" not in err and err.count("\n") == 1 and (tmp_path / "file").read_text() == "mine"


def test_a_workdir_holding_a_runs_state_is_refused(tmp_path, capsys):
    # The master read it back as after a restart: a second run "finished" at once with
    # the first one's version, tokens and loss.
    (tmp_path / "run" / "master").mkdir(parents=True)
    (tmp_path / "run" / "master" / "state.json").write_text('{"epoch": 0, "version": 2, "finished": true}')
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(plan_to_json(tiny_plan())))
    assert main([str(plan), "--quiet", "--timeout", "20", "--workdir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert f"--workdir '{tmp_path / 'run'}' holds a run's state (master/state.json): give a new directory" in err
    assert err.count("\n") == 1 and sorted(p.name for p in (tmp_path / "run").iterdir()) == ["master"]


def test_a_plan_json_without_the_suffix_is_still_a_plan(tmp_path):
    from stagec.tools.stagec_ps_run import _read

    data = plan_to_json(tiny_plan())
    path = tmp_path / "plan"
    path.write_text(json.dumps(data))
    assert _read(path) == (json.loads(json.dumps(data)), {})
