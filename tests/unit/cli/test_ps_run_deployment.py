"""`stagec ps run DIR/deployment.json` reruns a run as its working directory recorded
it: the deployment's mode, token budget and model, not the defaults (the help's
`stagec ps run runs/sync/deployment.json` example)."""

import argparse

from stagec.tools.stagec_ps_run import _read, deployment_from_args


def test_a_deployment_file_brings_its_run_settings(tmp_path):
    args = argparse.Namespace(config="examples/ps/tiny4.yaml", mode="sync", tokens=32768,
                              workdir=str(tmp_path / "run"))
    first = deployment_from_args(args)
    path = tmp_path / "deployment.json"
    first.save(path)
    _, run = _read(path)
    assert run["mode"] == "sync" and run["total_tokens"] == 32768
    assert run["model"] == first.to_json()["model"]
    again = deployment_from_args(argparse.Namespace(config=str(path), mode=None, tokens=None,
                                                    workdir=str(tmp_path / "again")))
    assert (again.mode, again.total_tokens, again.model, again.plan) == ("sync", 32768, first.model, first.plan)
