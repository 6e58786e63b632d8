"""The PS model's rotary frequencies follow the HF config's rope_scaling
(runtime/ps/model.py's rope_inv_freq): Llama 3.1/3.2's llama3 scaling by hand, against
Meta's reference loop and against transformers itself, its effect on the forward, and
an unknown rope type refused with one line, exit 2, before any process starts."""

import json
import math
from dataclasses import replace

import pytest
import torch
import yaml

from stagec.runtime.ps.model import ROPE_TYPES, ModelSpec, TinyLlama, chunk_batches, rope_inv_freq
from stagec.tools.stagec_ps_run import main as ps_run


def llama3(factor, low, high, original):
    return {"rope_type": "llama3", "factor": factor, "low_freq_factor": low, "high_freq_factor": high,
            "original_max_position_embeddings": original}


def test_llama3_inverse_frequencies_by_hand():
    # head_dim 8, rope_theta 10^4: inv_freq_i = 10^4^(-2i/8) = 1, 0.1, 0.01, 0.001, of
    # wavelengths 2 pi / inv_freq = 6.28, 62.8, 628.3, 6283.2. Scaling factor 8, low 1,
    # high 4, original 1024: wavelengths under 1024 / 4 = 256 stay (1, 0.1); over
    # 1024 / 1 = 1024 are divided by 8 (0.001 / 8 = 0.000125); 628.3 lies between:
    # smooth = (1024 / 628.3185 - 1) / (4 - 1) = (1.6297466 - 1) / 3 = 0.2099155,
    # inv_freq = (1 - smooth) * 0.01 / 8 + smooth * 0.01 = 0.01 * (0.125 + 0.875 * 0.2099155)
    # = 0.0030867610.
    spec = ModelSpec(hidden=32, heads=4, rope_theta=10000.0, rope_scaling=llama3(8.0, 1.0, 4.0, 1024))
    assert spec.dim == 8
    assert rope_inv_freq(spec).tolist() == pytest.approx([1.0, 0.1, 0.0030867610, 0.000125], rel=1e-6)
    # without scaling, and with rope_type default: the plain frequencies
    for scaling in (None, {"rope_type": "default"}):
        plain = ModelSpec(hidden=32, heads=4, rope_theta=10000.0, rope_scaling=scaling)
        assert rope_inv_freq(plain).tolist() == pytest.approx([1.0, 0.1, 0.01, 0.001], rel=1e-6)
    # linear scaling divides every frequency by its factor; "type" is HF's old spelling
    linear = ModelSpec(hidden=32, heads=4, rope_theta=10000.0, rope_scaling={"type": "linear", "factor": 4.0})
    assert rope_inv_freq(linear).tolist() == pytest.approx([0.25, 0.025, 0.0025, 0.00025], rel=1e-6)
    # dynamic NTK raises the base only past max_position_embeddings, which a run's
    # sequences never reach: the plain frequencies (transformers' at initialisation)
    dynamic = ModelSpec(hidden=32, heads=4, rope_theta=10000.0, rope_scaling={"rope_type": "dynamic", "factor": 4.0})
    assert rope_inv_freq(dynamic).tolist() == pytest.approx([1.0, 0.1, 0.01, 0.001], rel=1e-6)


def _meta_apply_scaling(dim, theta, factor, low, high, original):
    """Llama 3.1's frequency scaling as Meta's reference writes it (a loop over the
    frequencies, in double precision), the formula transformers'
    _compute_llama3_parameters vectorises."""
    out = []
    for i in range(0, dim, 2):
        freq = 1.0 / theta ** (i / dim)
        wavelen = 2 * math.pi / freq
        if wavelen < original / high:
            out.append(freq)
        elif wavelen > original / low:
            out.append(freq / factor)
        else:
            smooth = (original / wavelen - low) / (high - low)
            out.append((1 - smooth) * freq / factor + smooth * freq)
    return out


def test_llama32_1b_frequencies_are_meta_and_transformers():
    # Llama 3.2 1B: head_dim 64, rope_theta 500000, factor 32, low 1, high 4, original
    # 8192 (frontends/templates/named.py, from its config.json)
    scaling = llama3(32.0, 1.0, 4.0, 8192)
    spec = ModelSpec(hidden=2048, heads=32, head_dim=64, rope_theta=500000.0, rope_scaling=scaling)
    ours = rope_inv_freq(spec)
    reference = _meta_apply_scaling(64, 500000.0, 32.0, 1.0, 4.0, 8192)
    assert ours.dtype == torch.float32 and ours.tolist() == pytest.approx(reference, rel=1e-6)
    # all three regimes occur: some frequencies kept, some divided, some smoothed
    plain = rope_inv_freq(ModelSpec(hidden=2048, heads=32, head_dim=64, rope_theta=500000.0))
    ratio = (plain / ours).tolist()
    assert any(r == 1.0 for r in ratio) and any(r == pytest.approx(32.0) for r in ratio)
    assert any(1.0 < r < 31.99 for r in ratio)
    transformers = pytest.importorskip("transformers")
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    config = transformers.LlamaConfig(hidden_size=2048, num_attention_heads=32, head_dim=64, rope_theta=500000.0,
                                      rope_scaling=scaling, max_position_embeddings=131072)
    expected, attention_factor = ROPE_INIT_FUNCTIONS["llama3"](config)
    assert torch.equal(ours, expected) and attention_factor == 1.0
    # linear and dynamic too, at Llama 3.2's sizes
    for scaling in ({"rope_type": "linear", "factor": 4.0}, {"rope_type": "dynamic", "factor": 4.0}):
        config = transformers.LlamaConfig(hidden_size=2048, num_attention_heads=32, head_dim=64,
                                          rope_theta=500000.0, rope_scaling=scaling, max_position_embeddings=131072)
        expected, attention_factor = ROPE_INIT_FUNCTIONS[scaling["rope_type"]](config)
        ours = rope_inv_freq(replace(spec, rope_scaling=scaling))
        assert torch.allclose(ours, expected, rtol=1e-6, atol=0) and attention_factor == 1.0


def _logits(model, ids):
    with torch.no_grad():
        return model.lm_head(model.model(ids))


def test_rope_scaling_changes_the_forward_as_transformers_does():
    # head_dim 8 (hidden 32, 4 heads), rope_theta 10^4, original 64: low wavelength 64,
    # high 16; wavelengths 6.28 (kept), 62.8 (smoothed), 628 and 6283 (divided by 8)
    scaling = llama3(8.0, 1.0, 4.0, 64)
    plain = ModelSpec(rope_theta=10000.0, norm_eps=1e-6)
    scaled = ModelSpec(rope_theta=10000.0, norm_eps=1e-6, rope_scaling=scaling)
    a, b = TinyLlama(plain), TinyLlama(scaled)  # the same seed: the same weights
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    ids = chunk_batches(plain, 0, 1)[0]
    la, lb = _logits(a, ids), _logits(b, ids)
    # position 0 rotates by angle 0 under any frequencies, and attends to itself only:
    # the same logits; every later position sees rotated keys and queries: others
    assert torch.equal(la[:, 0], lb[:, 0])
    assert all(not torch.allclose(la[:, t], lb[:, t]) for t in range(1, ids.shape[1]))
    assert a(ids) != b(ids)
    # and each is what transformers' LlamaForCausalLM computes with these weights
    transformers = pytest.importorskip("transformers")
    for spec, ours, logits in ((plain, a, la), (scaled, b, lb)):
        config = transformers.LlamaConfig(
            vocab_size=spec.vocab, hidden_size=spec.hidden, intermediate_size=spec.intermediate,
            num_hidden_layers=spec.layers, num_attention_heads=spec.heads, num_key_value_heads=spec.kv_heads,
            head_dim=spec.dim, rms_norm_eps=spec.norm_eps, rope_theta=spec.rope_theta,
            rope_scaling=spec.rope_scaling, max_position_embeddings=128, tie_word_embeddings=False)
        hf = transformers.LlamaForCausalLM(config).eval()
        hf.load_state_dict(ours.state_dict(), strict=True)
        with torch.no_grad():
            assert torch.allclose(hf(input_ids=ids).logits, logits, rtol=0, atol=1e-5)


def _config(tmp_path, rope_scaling):
    doc = {"clusters": [{"name": "A", "throughput": 1000}], "bandwidth": "10Gbps", "slaves": 1,
           "model": {"name": "llama3.2-1b",
                     "overrides": {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                                   "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8,
                                   "vocab_size": 64, "rope_scaling": rope_scaling}},
           "inner_steps": 2}
    path = tmp_path / "ps.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize("rope_scaling, message", [
    ({"rope_type": "yarn", "factor": 4.0},
     "key 'model.overrides.rope_scaling': 'llama3.2-1b': rope_scaling's rope_type 'yarn' is not one the PS "
     "runtime computes; supported: default, dynamic, linear, llama3"),
    ({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0},
     "rope_scaling's original_max_position_embeddings is None; rope_type llama3 needs factor, low_freq_factor, "
     "high_freq_factor, original_max_position_embeddings, each a number > 0"),
    (llama3(8.0, 4.0, 4.0, 1024),
     "rope_scaling's high_freq_factor 4.0 is not above its low_freq_factor 4.0; llama3 scaling interpolates"),
    ("llama3", "rope_scaling 'llama3' is not a mapping; give null or {rope_type: ..., ...}"),
])
def test_a_rope_scaling_the_runtime_cannot_compute_is_refused_before_any_process(tmp_path, capsys, monkeypatch,
                                                                                   rope_scaling, message):
    from stagec.runtime.ps import launcher

    monkeypatch.setattr(launcher.Supervisor, "start", lambda self: pytest.fail("a process was started"))
    path = _config(tmp_path, rope_scaling)
    work = tmp_path / "run"
    assert ps_run([str(path), "--quiet", "--workdir", str(work)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"stagec ps run: error: {path}: ") and message in err, err
    assert err.count("\n") == 1 and "Traceback" not in err and not work.exists()


def test_the_runs_model_carries_its_rope_scaling(tmp_path, capsys, monkeypatch):
    # the CONFIG's scaling reaches the deployment every process reads, through JSON;
    # a run.model given as JSON is checked the same way
    import argparse

    from stagec.runtime.ps.deployment import Deployment
    from stagec.tools.stagec_ps_run import deployment_from_args

    scaling = llama3(8.0, 1.0, 4.0, 64)
    dep = deployment_from_args(argparse.Namespace(config=str(_config(tmp_path, scaling)), mode=None, tokens=None,
                                                  workdir=str(tmp_path / "a")))
    assert dep.model.rope_scaling == scaling
    again = Deployment.from_json(json.loads(json.dumps(dep.to_json())))
    assert again.model == dep.model
    assert torch.equal(TinyLlama(again.model).model.layers[0].self_attn.inv_freq, rope_inv_freq(dep.model))
    # a named model's own scaling is kept when the overrides do not replace it
    named = deployment_from_args(argparse.Namespace(config="examples/ps/tiny4.yaml", mode=None, tokens=None,
                                                    workdir=str(tmp_path / "b")))
    assert named.model.rope_scaling == llama3(32.0, 1.0, 4.0, 8192)

    from stagec.runtime.ps import launcher

    monkeypatch.setattr(launcher.Supervisor, "start", lambda self: pytest.fail("a process was started"))
    plan = json.loads(json.dumps(dep.to_json()))["plan"]
    run_json = tmp_path / "run.json"
    run_json.write_text(json.dumps({"plan": plan, "run": {"model": {**dep.model.to_json(),
                                                                   "rope_scaling": {"rope_type": "yarn"}}}}))
    capsys.readouterr()
    assert ps_run([str(run_json), "--quiet", "--workdir", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert err == (f"stagec ps run: error: {run_json}: the run's model cannot be built: rope_scaling's rope_type "
                   f"'yarn' is not one the PS runtime computes; supported: {', '.join(ROPE_TYPES)}\n")


def test_transformers_5_rope_parameters_are_read_as_rope_scaling(tmp_path):
    # transformers 5 writes rope_theta and the scaling into one rope_parameters object
    from stagec.runtime.ps.config import ModelSpec as ModelDescription
    from stagec.runtime.ps.run_model import run_model_spec

    config = {"model_type": "llama", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
              "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 64, "max_position_embeddings": 128,
              "rope_parameters": {**llama3(8.0, 1.0, 4.0, 64), "rope_theta": 20000.0}}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    spec = run_model_spec(ModelDescription(str(path)), "ps.yaml")
    assert spec.rope_theta == 20000.0 and spec.rope_scaling == llama3(8.0, 1.0, 4.0, 64)
    # given as an override of a config with rope_scaling (Llama 3.2's), it replaces it
    spec = run_model_spec(ModelDescription("llama3.2-1b", {"rope_parameters": {"rope_type": "linear", "factor": 2.0}}),
                          "ps.yaml")
    assert spec.rope_theta == 500000.0 and spec.rope_scaling == {"rope_type": "linear", "factor": 2.0}
