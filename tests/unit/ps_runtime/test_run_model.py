"""The run's model is the plan's model (runtime/ps/run_model.py): the layers and bytes
`stagec ps plan` places on the slaves are exactly the tensors the clusters push, and a
model the runtime cannot train is refused with one line, exit 2, before any process
starts."""

import json

import numpy as np
import pytest
import yaml

from stagec.runtime.ps.config import load_config, plan_from_config
from stagec.runtime.ps.model import TinyLlama
from stagec.runtime.ps.run_model import run_model_spec
from stagec.runtime.ps.slave import load_snapshot, snapshot_path
from stagec.runtime.ps.wire import LayerSpec, group_by_layer
from stagec.tools.stagec_cli import main as stagec
from stagec.tools.stagec_ps_run import main as ps_run

# Not the runtime's default tiny model (vocab 64, hidden 32, 2 layers, heads of 8), and
# 4 heads of head_dim 10 make q_proj 40 wide against hidden 48: a runtime that took
# hidden / heads = 12 for the head size would push other shapes.
SMALL = {"hidden_size": 48, "intermediate_size": 80, "num_hidden_layers": 3, "num_attention_heads": 4,
         "num_key_value_heads": 2, "head_dim": 10, "vocab_size": 100}
# Bytes by hand (f32, 4 bytes a parameter; HF Llama's tensors):
#   model.embed_tokens: 100 x 48 = 4800 -> 19200
#   model.layers.i: q_proj 48 x (4 x 10) = 1920, k_proj and v_proj 48 x (2 x 10) = 960
#     each, o_proj 40 x 48 = 1920, gate/up/down 3 x 48 x 80 = 11520, two norms 2 x 48 =
#     96: 17376 -> 69504
#   model.norm: 48 -> 192;  lm_head: 100 x 48 = 4800 -> 19200 (none when tied)
HAND_BYTES = {"model.embed_tokens": 19200, **{f"model.layers.{i}": 69504 for i in range(3)}, "model.norm": 192,
              "lm_head": 19200}


def write_config(tmp_path, model, name="ps.yaml", **changes):
    doc = {"clusters": [{"name": "A", "throughput": 1000}, {"name": "B", "throughput": 1000}],
           "bandwidth": "10Gbps", "slaves": 2, "model": model, "inner_steps": 2, "grace_window": "200ms",
           "heartbeat": {"interval": "200ms", "missed": 3}, **changes}
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize("tied", [False, True])
def test_the_plans_bytes_are_the_tensors_a_cluster_pushes(tmp_path, tied):
    path = write_config(tmp_path, {"name": "llama3.2-1b", "overrides": {**SMALL, "tie_word_embeddings": tied}})
    config = load_config(str(path))
    plan = plan_from_config(config)
    expected = {k: v for k, v in HAND_BYTES.items() if not (tied and k == "lm_head")}
    assert {l.prefix: l.nbytes for l in plan.layers} == expected
    # what cluster.py builds and pushes: TinyLlama(spec) grouped by the plan's layers
    spec = run_model_spec(config.model, str(path))
    groups = group_by_layer({n: p.detach().numpy() for n, p in TinyLlama(spec).named_parameters()}, plan.layers)
    assert [sum(LayerSpec.of(g).nbytes) for g in groups] == [l.nbytes for l in plan.layers]


def test_a_run_of_a_config_moves_the_planned_layers_to_the_planned_slaves(tmp_path):
    # real processes, synchronous DiLoCo, one round: 2 clusters x 2 steps x 8 x 32 tokens
    path = write_config(tmp_path, {"name": "llama3.2-1b", "overrides": {**SMALL, "tie_word_embeddings": False}})
    plan = plan_from_config(load_config(str(path)))
    work = tmp_path / "run"
    out = tmp_path / "result.json"
    assert ps_run([str(path), "--quiet", "--mode", "sync", "--tokens", "1024", "--workdir", str(work),
                   "--json", str(out)]) == 0
    assert json.loads(out.read_text())["version"] == 1
    deployment = json.loads((work / "deployment.json").read_text())
    assert deployment["model"]["hidden"] == 48 and deployment["model"]["head_dim"] == 10
    # each slave's snapshot of version 1 holds exactly its planned layers, each of the
    # planned bytes: the tensors the slave received (it checks every pushed frame
    # against these shapes, wire.check_tensors) and applied
    from stagec.runtime.ps.deployment import Deployment

    dep = Deployment.load(work / "deployment.json")
    for s in range(plan.num_slaves):
        params, momentum = load_snapshot(snapshot_path(dep, s, 1))
        held = {}
        for name, array in params.items():
            prefix = next(l.prefix for l in plan.layers if name.startswith(l.prefix + "."))
            held[prefix] = held.get(prefix, 0) + array.nbytes
            assert array.dtype == np.float32 and momentum[name].shape == array.shape
        planned = {l.prefix: l.nbytes for l, owner in zip(plan.layers, plan.slave_of_layer) if owner == s}
        assert held == planned
        assert all(HAND_BYTES[p] == b for p, b in held.items())


@pytest.mark.parametrize("model, message", [
    ({"name": "mixtral-8x7b", "overrides": {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                                            "num_attention_heads": 4, "num_key_value_heads": 2,
                                            "num_local_experts": 2, "vocab_size": 64}},
     "'mixtral-8x7b' is a mixtral model, which the PS runtime cannot train"),
    ({"name": "llama3.2-1b", "overrides": SMALL, "dtype": "bf16"},
     "key 'model.dtype': the plan moves bf16 parameters, the PS runtime trains and pushes f32"),
    ({"name": "llama3.2-1b"},  # 1.24e9 parameters x 4 bytes x (2 x 6 + 4 + 2) = 89 GB
     "key 'model': 1.24e+09 parameters; 2 clusters and 2 slaves on this machine would hold about"),
])
def test_a_model_the_runtime_cannot_train_is_refused_before_any_process(tmp_path, capsys, monkeypatch, model,
                                                                        message):
    from stagec.runtime.ps import launcher

    monkeypatch.setattr(launcher.Supervisor, "start", lambda self: pytest.fail("a process was started"))
    path = write_config(tmp_path, model)
    work = tmp_path / "run"
    assert ps_run([str(path), "--quiet", "--workdir", str(work)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"stagec ps run: error: {path}: ") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not work.exists()


@pytest.mark.parametrize("layers, message", [
    # 16 layers, as the named model: the layers agree, the bytes do not (the named
    # model's embedding is 128256 x 2048 x 4 = 1050673152 bytes, the plan's 19200)
    (16, "layer 'model.embed_tokens': the plan moves 19200 bytes, the run's model (Llama vocab 128256, hidden "
         "2048, intermediate 8192, 16 layers, 32 heads of 64, 8 KV heads, tied head) pushes 1050673152; "),
    # 3 layers: the named model's model.layers.3 belongs to no layer of the plan
    (3, "the run's model (Llama vocab 128256, hidden 2048, intermediate 8192, 16 layers, 32 heads of 64, 8 KV "
        "heads, tied head) is not the plan's: parameter 'model.layers.3."),
])
def test_a_ps_program_that_lost_its_models_overrides_is_refused(tmp_path, capsys, layers, message):
    # the program records the name "llama3.2-1b" but not the overrides
    path = write_config(tmp_path, {"name": "llama3.2-1b", "overrides": {**SMALL, "num_hidden_layers": layers}})
    program = tmp_path / "plan.mlir"
    assert stagec(["ps", "plan", str(path), "-o", str(program)]) in (0, None)
    capsys.readouterr()
    assert ps_run([str(program), "--quiet", "--workdir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"stagec ps run: error: {program}: ") and message in err
    assert err.endswith("run the CONFIG the plan was made from (a ps program names its model but not its "
                        "overrides)\n") and err.count("\n") == 1


def test_the_readme_config_runs_its_own_model(tmp_path):
    # examples/ps/tiny4.yaml: the Llama template shrunk to 96 wide, 4 layers, vocab 1024,
    # untied: 1024 x 96 x 2 + 4 x (96 x 96 x 2 + 96 x 48 x 2 + 3 x 96 x 256 + 2 x 96) + 96
    # = 196608 + 4 x 101568 + 96 = 602976 parameters (the "0.6M" of issue 19)
    from stagec.tools.stagec_ps_run import deployment_from_args
    import argparse

    dep = deployment_from_args(argparse.Namespace(config="examples/ps/tiny4.yaml", mode=None, tokens=None,
                                                  workdir=str(tmp_path / "run")))
    assert (dep.model.vocab, dep.model.hidden, dep.model.layers, dep.model.dim) == (1024, 96, 4, 24)
    assert sum(l.nbytes for l in dep.plan.layers) == 4 * 602976
    assert sum(p.numel() for p in TinyLlama(dep.model).parameters()) == 602976
