"""The Di-PS CONFIG (runtime/ps/config.py): units, defaults, the model's layers and
their bytes by hand, and one clear line per mistake (exit 2 from `stagec ps plan`)."""

from __future__ import annotations

import os

import pytest

from stagec.runtime.ps.config import (
    ModelSpec,
    PsConfigError,
    config_from_dict,
    load_config,
    model_layers,
)
from stagec.tools.stagec_cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
TINY = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 256, "tie_word_embeddings": False}


def _doc(**changes):
    doc = {"clusters": [{"name": "A", "throughput": 1000}, {"name": "B", "throughput": 500, "extra_delay": 0.5}],
           "bandwidth": [["10Gbps", "1Gbps"], ["1Gbps", "10Gbps"]], "slaves": 2,
           "model": {"name": "llama3.2-1b", "overrides": TINY}, "inner_steps": 4}
    doc.update(changes)
    return {k: v for k, v in doc.items() if v is not None}


@pytest.mark.parametrize("text, bytes_per_s", [
    ("10Gbps", 1.25e9),      # 10e9 bits / 8
    ("100Mbps", 1.25e7),
    ("1.25GB/s", 1.25e9),
    ("1GiB/s", 2.0**30),
    ("800 KB/s", 8e5),
    (1e9, 1e9),              # a number is bytes/s
    ("2e9", 2e9),            # YAML 1.1 reads 2e9 as a string; it is still the number
])
def test_rates(text, bytes_per_s):
    config = config_from_dict(_doc(bandwidth=text))
    assert config.bandwidth == ((bytes_per_s,) * 2,) * 2


def test_example_tiny4_reads_as_written():
    config = load_config(os.path.join(ROOT, "examples", "ps", "tiny4.yaml"))
    assert [c.extra_delay for c in config.clusters] == [0.0, 0.16, 0.33, 0.5]  # §5.1's delays
    assert config.bandwidth[0] == (1.25e9, 1.25e9, 1.25e9, 1.25e8)  # 10, 10, 10, 1 Gbps
    assert (config.inner_steps, config.tokens_per_step, config.grace_window_s) == (16, 32768, 2.0)
    assert (config.outer.lr, config.outer.momentum) == (0.7, 0.8)
    assert (config.penalty.alpha, config.penalty.beta, config.penalty.clip_norm) == (0.02, 3.0, 1.0)


def test_defaults():
    config = config_from_dict(_doc())
    assert (config.heartbeat_s, config.missed_heartbeats) == (1.0, 3)
    assert (config.snapshot_every, config.snapshots_kept, config.grace_window_s) == (1, 2, 5.0)
    assert config.model.dtype == "f32"


def test_tiny_llama_layers_by_hand():
    # H = 64, F = 128, 4 heads of 16 (N*D = 64), 2 KV heads (KV*D = 32), V = 256, untied.
    # A decoder layer: q 64*64 = 4096, k 64*32 = 2048, v 2048, o 4096,
    # gate/up/down 3 * 64 * 128 = 24576, two RMSNorm weights 2 * 64 = 128: 36992 params,
    # 147968 B in f32. Embedding and head 256 * 64 = 16384 params = 65536 B; norm 64 = 256 B.
    layers = model_layers(ModelSpec("llama3.2-1b", TINY))
    assert [(layer.prefix, layer.nbytes) for layer in layers] == [
        ("model.embed_tokens", 65536), ("model.layers.0", 147968), ("model.layers.1", 147968),
        ("model.norm", 256), ("lm_head", 65536)]
    # bf16 halves every size; a tied head is the embedding, so no lm_head layer.
    tied = model_layers(ModelSpec("llama3.2-1b", {**TINY, "tie_word_embeddings": True}, "bf16"))
    assert [(layer.prefix, layer.nbytes) for layer in tied] == [
        ("model.embed_tokens", 32768), ("model.layers.0", 73984), ("model.layers.1", 73984), ("model.norm", 128)]


def test_llama32_1b_parameter_count():
    # Llama 3.2 1B has 1,235,814,400 parameters (the HF model card's count).
    layers = model_layers(ModelSpec("llama3.2-1b"))
    assert sum(layer.nbytes for layer in layers) == 4 * 1_235_814_400
    assert len(layers) == 16 + 2  # 16 decoder layers, embedding, final norm (tied head)


@pytest.mark.parametrize("changes, message", [
    (dict(bandwidth=[["10Gbps", "1Gbps", "1Gbps"], ["1Gbps", "10Gbps", "1Gbps"]]),
     "key 'bandwidth[0]': 3 entries for 2 clusters; give a row of 2 rates"),
    (dict(bandwidth=[["10Gbps"]]), "key 'bandwidth': 1 rows for 2 clusters; give an 2 x 2 matrix (or one rate)"),
    (dict(bandwidth=[["10Gbps", "-1Gbps"], ["1Gbps", "1Gbps"]]), "key 'bandwidth[0][1]': '-1Gbps' is not a rate"),
    (dict(bandwidth=[["10Gbps", 0], ["1Gbps", "1Gbps"]]), "key 'bandwidth[0][1]': 0 is not positive"),
    (dict(bandwidth="10Gb/s"), "key 'bandwidth': '10Gb/s' is not a rate; give bytes/s as a number > 0, "
                               "or a rate like 10Gbps, 100Mbps or 1.25GB/s"),
    (dict(slaves=0), "key 'slaves': 0 is less than 1; give an integer >= 1"),
    # 10^20 was an OverflowError traceback in the placement, 10^7 a summary of 10^7 lines
    (dict(slaves=10**20), "key 'slaves': 100000000000000000000 is more than 65,536; give an integer <= 65,536"),
    (dict(inner_steps=None), "key 'inner_steps': missing"),
    # each finite, their products not: every score was inf and A (index 0) chosen, where
    # B's column is ten times A's
    (dict(clusters=[{"name": "A", "throughput": 1e300}, {"name": "B", "throughput": 1}],
          bandwidth=[[1e10, 1e11], [1, 1]]),
     "key 'bandwidth': times the clusters' throughputs it overflows a float (B_i^T p is inf)"),
    (dict(clusters=[{"name": "A", "throughput": -5}, {"name": "B", "throughput": 1}]),
     "key 'clusters[0].throughput': -5 is out of range; give a number > 0"),
    (dict(clusters=[{"name": "A", "throughput": 5}, {"name": "A", "throughput": 1}]),
     "key 'clusters[1].name': 'A' names two clusters"),
    (dict(clusters=[{"name": "A", "throughput": 5}, {"name": "B\nC", "throughput": 1}]),
     "key 'clusters[1].name': 'B\\nC' holds a control character; give a name on one line"),
    (dict(penalty={"beta": 0}), "key 'penalty.beta': 0 is out of range; give a number > 0"),
    (dict(penalty={"gamma": 1}), "key 'penalty.gamma': unknown key; the keys are alpha, beta, clip, enabled"),
    (dict(grace_window="5 minutes"), "key 'grace_window': '5 minutes' is not a duration"),
    # past a float's range: inf, which the printed program could not read back
    (dict(grace_window="1e400s"), "key 'grace_window': '1e400s' is not a finite duration"),
    (dict(heartbeat={"interval": "1e400ms"}), "key 'heartbeat.interval': '1e400ms' is not a finite duration"),
    (dict(bandwidth="1e400Gbps"), "key 'bandwidth': '1e400Gbps' is not a finite rate"),
    (dict(model={"name": "llama3.2-1b", "dtype": "int8"}), "key 'model.dtype': 'int8' is not a dtype"),
    (dict(colour="blue"), "key 'colour': unknown key"),
    # the ps program records every override (dialects/ps: ps.program's overrides), as
    # JSON values: YAML's dates, NaN and integers past 64 bits have no word there
    (dict(model={"name": "llama3.2-1b", "overrides": {**TINY, "released": __import__("datetime").date(2024, 9, 25)}}),
     "key 'model.overrides.released': datetime.date(2024, 9, 25) (date) is not a JSON value; give a JSON value"),
    (dict(model={"name": "llama3.2-1b", "overrides": {**TINY, "rope_scaling": {"factor": float("nan")}}}),
     "key 'model.overrides.rope_scaling': nan is not a finite number; give a JSON value"),
    (dict(model={"name": "llama3.2-1b", "overrides": {**TINY, "größe": 2}}),
     "key 'model.overrides.größe': key 'größe' is not a name; give an ASCII config key"),
    (dict(model={"name": "llama3.2-1b", "overrides": {**TINY, "vocab_size": 2**64}}),
     "key 'model.overrides.vocab_size': 18446744073709551616 does not fit in 64 bits; give a JSON value"),
])
def test_errors_name_file_and_key(changes, message):
    with pytest.raises(PsConfigError) as error:
        config_from_dict(_doc(**changes), "cfg.yaml")
    text = str(error.value)
    assert text.startswith("cfg.yaml: ") and message in text and "\n" not in text


def test_unknown_model_is_a_config_error():
    with pytest.raises(PsConfigError, match="cfg.yaml: key 'model': unknown model 'llama-9'"):
        model_layers(ModelSpec("llama-9"), "cfg.yaml")


def test_cli_exit_2_one_line(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("clusters: [{name: A, throughput: 1}]\nbandwidth: [[1, 2], [3, 4]]\nslaves: 1\n"
                    "model: llama3.2-1b\ninner_steps: 1\n")
    assert main(["ps", "plan", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"stagec: error: {path}: key 'bandwidth': 2 rows for 1 clusters; give an 1 x 1 matrix (or one rate)"
    path.write_text("clusters: [\n")
    assert main(["ps", "plan", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"stagec: error: {path}:") and "not valid YAML" in err and "\n" not in err
    assert main(["ps", "plan", str(tmp_path / "missing.yaml")]) == 2
    assert "cannot read: No such file or directory" in capsys.readouterr().err


def test_a_key_given_twice_is_an_error_not_the_last_one(tmp_path):
    # PyYAML keeps the last of two equal keys without a word: `slaves: 16` pasted below
    # `slaves: 4` planned 16 slaves.
    path = tmp_path / "twice.yaml"
    path.write_text("clusters: [{name: A, throughput: 1}]\nbandwidth: 1Gbps\nslaves: 4\n"
                    "model: llama3.2-1b\ninner_steps: 1\nslaves: 16\n")
    with pytest.raises(PsConfigError) as error:
        load_config(str(path))
    assert str(error.value) == (f"{path}:6:1: key 'slaves' is given twice (first on line 3); give each key once")


def test_a_merge_key_may_be_overridden(tmp_path):
    path = tmp_path / "merge.yaml"
    path.write_text("clusters:\n  - &c {name: A, throughput: 1000}\n  - {<<: *c, name: B}\nbandwidth: 1Gbps\n"
                    "slaves: 1\nmodel: llama3.2-1b\ninner_steps: 1\n")
    assert [c.name for c in load_config(str(path)).clusters] == ["A", "B"]


@pytest.mark.parametrize("typo, meant", [("hiden_size", "hidden_size"), ("tie_word_embedding", "tie_word_embeddings")])
def test_an_override_that_misspells_a_config_key_is_an_error(typo, meant):
    # HF configs take any key: the typo planned the template's 2048-wide model, or an
    # untied head, without a word.
    with pytest.raises(PsConfigError) as error:
        model_layers(ModelSpec("llama3.2-1b", {**TINY, typo: 32}), "cfg.yaml")
    assert str(error.value) == (f"cfg.yaml: key 'model.overrides.{typo}': not a key of the model's config; "
                                f"did you mean {meant}?")


def test_an_override_the_config_leaves_to_its_default_is_taken():
    assert model_layers(ModelSpec("llama3.2-1b", {**TINY, "rope_parameters": {"rope_type": "default"}}))


def test_deepseek_moe_layers_have_hf_module_paths():
    # the template's MoE stack is model.moe_layers; HF's modules are model.layers.{k + i}
    # after first_k_dense_replace = k dense ones (deepseek-v2-lite: k = 1)
    layers = model_layers(ModelSpec("deepseek-v2-lite", {"num_hidden_layers": 3}))
    assert [layer.prefix for layer in layers] == ["model.embed_tokens", "model.layers.0", "model.layers.1",
                                                  "model.layers.2", "model.norm", "lm_head"]
    assert layers[1].nbytes < layers[2].nbytes == layers[3].nbytes  # a dense layer, then two MoE ones


def test_an_override_the_template_refuses_is_named_as_the_overrides_fault():
    # it was "key 'model': https://huggingface.co/...: 'hidden_size' must be positive",
    # as if the named config were wrong
    with pytest.raises(PsConfigError) as error:
        model_layers(ModelSpec("llama3.2-1b", {**TINY, "hidden_size": 0}), "cfg.yaml")
    assert str(error.value).startswith("cfg.yaml: key 'model.overrides': ") and "'hidden_size'" in str(error.value)
