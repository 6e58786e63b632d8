"""The run's model is the plan's model (runtime/ps/run_model.py): the layers and bytes
`stagec ps plan` places on the slaves are exactly the tensors the clusters push, and a
model the runtime cannot train is refused with one line, exit 2, before any process
starts."""

import json

import numpy as np
import pytest
import torch
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


@pytest.mark.parametrize("tied", [False, True])
def test_an_untrained_model_predicts_about_uniformly(tied):
    # a head of small weights gives near-zero logits, so the first loss is about
    # ln(vocab) = ln 512 = 6.24; a tied head at torch's N(0, 1) embedding init gave 62
    from stagec.runtime.ps.model import ModelSpec, chunk_batches

    spec = ModelSpec(vocab=512, hidden=64, intermediate=128, layers=2, heads=4, kv_heads=2, tie_embeddings=tied)
    model = TinyLlama(spec)
    with torch.no_grad():
        loss = model(chunk_batches(spec, 0, 1)[0]).item()
    assert loss == pytest.approx(np.log(512), rel=0.05)


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


# Not Llama 3.2's own scaling (factor 32, original 8192), so the program must carry
# the override's numbers, not the named config's.
SCALING = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
           "original_max_position_embeddings": 1024}


def _deployment(config, workdir):
    import argparse

    from stagec.tools.stagec_ps_run import deployment_from_args

    return deployment_from_args(argparse.Namespace(config=str(config), mode=None, tokens=None, workdir=str(workdir)))


def test_a_ps_program_rebuilds_the_model_of_its_config(tmp_path, capsys):
    from stagec.runtime.ps.deployment import plan_to_json
    from stagec.runtime.ps.run_model import pushed_layer_bytes

    overrides = {**SMALL, "tie_word_embeddings": False, "rope_scaling": SCALING}
    path = write_config(tmp_path, {"name": "llama3.2-1b", "overrides": overrides, "dtype": "f32"})
    program = tmp_path / "plan.mlir"
    assert stagec(["ps", "plan", str(path), "-o", str(program)]) in (0, None)
    capsys.readouterr()
    # the program records the overrides, keys sorted (dtype f32 is the default: not printed)
    assert ('model "llama3.2-1b" overrides {head_dim = 10, hidden_size = 48, intermediate_size = 80, '
            'num_attention_heads = 4, num_hidden_layers = 3, num_key_value_heads = 2, rope_scaling = {factor = 8.0, '
            'high_freq_factor = 4.0, low_freq_factor = 1.0, original_max_position_embeddings = 1024, '
            'rope_type = "llama3"}, tie_word_embeddings = false, vocab_size = 100} {') in program.read_text()
    from_config = _deployment(path, tmp_path / "a")
    from_program = _deployment(program, tmp_path / "b")
    # ... and a plan's JSON (a run's deployment.json holds it) records them too
    plan_json = tmp_path / "plan.json"
    plan_json.write_text(json.dumps(plan_to_json(from_program.plan)))
    from_json = _deployment(plan_json, tmp_path / "c")
    assert from_program.plan == from_config.plan == from_json.plan
    assert from_program.plan.model_overrides == overrides and from_program.plan.model_dtype == "f32"
    assert from_program.model == from_config.model == from_json.model
    assert (from_program.model.hidden, from_program.model.layers, from_program.model.dim) == (48, 3, 10)
    assert from_program.model.rope_scaling == SCALING
    # the layer bytes the clusters of that model push are the plan's, which are the
    # hand-derived ones above
    assert pushed_layer_bytes(from_program.model, from_program.plan) == \
        tuple(l.nbytes for l in from_program.plan.layers) == tuple(HAND_BYTES.values())


@pytest.mark.parametrize("edit, message", [
    # the model's meaning: the HF config reader's words, under the program's field
    (("num_hidden_layers = 3", 'num_hidden_layers = "three"'),
     "'ps.program' model: https://huggingface.co/meta-llama/Llama-3.2-1B/blob/main/config.json: "
     "'num_hidden_layers' must be a non-negative integer, not 'three'"),
    # a model that builds but is not the plan's: it has a fourth decoder layer
    (("num_hidden_layers = 3", "num_hidden_layers = 4"),
     "the run's model (Llama vocab 100, hidden 48, intermediate 80, 4 layers, 4 heads of 10, 2 KV heads) is not "
     "the plan's: parameter 'model.layers.3."),
    # 40 wide heads: every layer the same, but q_proj 48 x 160 against the plan's 48 x 40
    (("head_dim = 10", "head_dim = 40"),
     "layer 'model.layers.0': the plan moves 69504 bytes, the run's model (Llama vocab 100, hidden 48, "
     "intermediate 80, 3 layers, 4 heads of 40, 2 KV heads) pushes "),
    # the verifier: an override that is no JSON value
    (("num_hidden_layers = 3", "num_hidden_layers = 3 : i32"),
     "'ps.program' model override 'num_hidden_layers': 3 : i32 is not a JSON value; give an integer, a number "
     "with a '.', true or false, a string, unit (null), a list [...] or a dictionary {...}"),
    # the parser
    (("overrides {", "overrides [1] {"), ":2:82: expected a dictionary {key = value, ...} (overrides)"),
    (('model "llama3.2-1b"', 'model "llama3.2-1b" dtype i8'), ":2:78: Expected one of 'bf16', 'f16', 'f32', 'f64'"),
    # the runtime's limits: the dtype, the rope types
    (('model "llama3.2-1b"', 'model "llama3.2-1b" dtype bf16'),
     "'ps.program' dtype: the plan moves bf16 parameters, the PS runtime trains and pushes f32"),
    (('rope_type = "llama3"', 'rope_type = "yarn"'),
     "'ps.program' overrides.rope_scaling: 'llama3.2-1b': rope_scaling's rope_type 'yarn' is not one the PS "
     "runtime computes; supported: default, dynamic, linear, llama3"),
])
def test_bad_overrides_in_a_ps_program_are_one_line_before_any_process(tmp_path, capsys, monkeypatch, edit,
                                                                        message):
    from stagec.runtime.ps import launcher

    monkeypatch.setattr(launcher.Supervisor, "start", lambda self: pytest.fail("a process was started"))
    path = write_config(tmp_path, {"name": "llama3.2-1b",
                                   "overrides": {**SMALL, "tie_word_embeddings": False, "rope_scaling": SCALING}})
    program = tmp_path / "plan.mlir"
    assert stagec(["ps", "plan", str(path), "-o", str(program)]) in (0, None)
    text = program.read_text()
    assert text.count(edit[0]) == 1
    program.write_text(text.replace(edit[0], edit[1]))
    capsys.readouterr()
    work = tmp_path / "run"
    assert ps_run([str(program), "--quiet", "--workdir", str(work)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"stagec ps run: error: {program}") and message in err, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not work.exists()


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
