"""`stagec run --weights FILE.safetensors` (runtime/exec/weights.py): a model's
parameters under Hugging Face's names, sharded as the program's types say.

- A run from the state_dict of the tests' torch Llama (HF's names and shapes,
  tests/unit/templates/torch_models.py) trains as that torch model does from the same
  weights: 20 AdamW steps in fp32, 1e-5 relative (the issue's bound).
- transformers' own LlamaForCausalLM and MixtralForCausalLM state_dicts read as the
  templates' stacked parameters (transformers 5 fuses Mixtral's experts: gate_up_proj
  [E, 2 FE, H] holds w1 over w3, down_proj is w2).
- A missing file, a missing tensor and a tensor of another shape are one line and
  exit status 2, before any rank starts.
"""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import save_file

from stagec.frontends.templates import build_model, load_config
from stagec.runtime.exec.weights import SafetensorsWeights, parameter_shapes
from stagec.tools.stagec_cli import main
from tests.unit.exec.run_testing import compare_with_torch, config_file, parity_tokens, torch_losses
from tests.unit.templates.tiny_configs import TINY
from tests.unit.templates.torch_models import reference_model


def _save_reference(tmp_path, config: str, seed: int = 7) -> str:
    """The tests' torch model of `config` with its own random weights (std 0.05, norms
    1 + 0.1 N(0, 1): not the runtime's seeded initialisation), saved in f32."""
    model = reference_model(load_config(config), seed=seed, std=0.05).float()
    path = tmp_path / "model.safetensors"
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path))
    return str(path)


def test_fsdp2_run_from_a_safetensors_file_matches_torch(tmp_path):
    config, tokens = config_file(tmp_path), parity_tokens(tmp_path)
    weights = _save_reference(tmp_path, config)
    # the file's weights, not the seeded ones, are what both sides train: the first
    # losses differ (the seeded model starts at 3.44, about ln 32 = 3.47)
    seeded = torch_losses(config, 1, batch=2, seq=8, tokens=tokens)
    from_file = torch_losses(config, 1, batch=2, seq=8, tokens=tokens, weights=weights)
    assert abs(seeded[0] - from_file[0]) > 1e-3, (seeded, from_file)
    compare_with_torch(tmp_path, config, tokens, 2, "--fsdp", "2", batch=2, weights=weights)


def _template_shapes(name: str, tmp_path, **overrides) -> dict:
    return parameter_shapes(build_model(load_config(config_file(tmp_path, name, **overrides)), "f32"))


def test_transformers_llama_state_dict_reads_as_the_templates_parameters(tmp_path):
    transformers = pytest.importorskip("transformers")
    config = {k: v for k, v in TINY["llama"].items() if k != "model_type"}
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**config))
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(tmp_path / "llama.safetensors"))
    weights = SafetensorsWeights(str(tmp_path / "llama.safetensors"))
    shapes = _template_shapes("llama", tmp_path)
    weights.check(shapes)
    # q_proj stacked over the 2 layers: [L, N x D, H] = [2, 16, 16]
    assert shapes["model.layers.self_attn.q_proj.weight"] == ((2,), (16, 16))
    q = weights("model.layers.self_attn.q_proj.weight", (2, 16, 16), torch.float32)
    assert torch.equal(q[1], state["model.layers.1.self_attn.q_proj.weight"])
    assert torch.equal(weights("lm_head.weight", (32, 16), torch.float32), state["lm_head.weight"])


def test_transformers_mixtral_fused_experts_read_as_w1_w3_w2(tmp_path):
    transformers = pytest.importorskip("transformers")
    config = {k: v for k, v in TINY["mixtral"].items() if k not in ("model_type", "capacity_factor")}
    model = transformers.MixtralForCausalLM(transformers.MixtralConfig(**config))
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(tmp_path / "mixtral.safetensors"))
    weights = SafetensorsWeights(str(tmp_path / "mixtral.safetensors"))
    weights.check(_template_shapes("mixtral", tmp_path))
    # E 4 experts, FE 12, H 16: gate_up_proj of layer 1 is [4, 24, 16], w1 its rows 0-11
    fused = state["model.layers.1.mlp.experts.gate_up_proj"]
    w1 = weights("model.layers.block_sparse_moe.experts.w1.weight", (2, 4, 12, 16), torch.float32)
    w3 = weights("model.layers.block_sparse_moe.experts.w3.weight", (2, 4, 12, 16), torch.float32)
    w2 = weights("model.layers.block_sparse_moe.experts.w2.weight", (2, 4, 16, 12), torch.float32)
    router = weights("model.layers.block_sparse_moe.gate.weight", (2, 4, 16), torch.float32)
    assert torch.equal(w1[1], fused[:, :12]) and torch.equal(w3[1], fused[:, 12:])
    assert torch.equal(w2[0], state["model.layers.0.mlp.experts.down_proj"])
    assert torch.equal(router[0], state["model.layers.0.mlp.gate.weight"])


def test_hub_mixtral_per_expert_tensors_stack_over_layers_and_experts(tmp_path):
    # a hub checkpoint's names: model.layers.L.block_sparse_moe.experts.E.w1.weight, [FE, H]
    path = _save_reference(tmp_path, config_file(tmp_path, "mixtral"))
    weights = SafetensorsWeights(path)
    weights.check(_template_shapes("mixtral", tmp_path))
    w1 = weights("model.layers.block_sparse_moe.experts.w1.weight", (2, 4, 12, 16), torch.float32)
    from safetensors.torch import load_file

    assert torch.equal(w1[1, 3], load_file(path)["model.layers.1.block_sparse_moe.experts.3.w1.weight"])


def _refused(tmp_path, capsys, weights: str) -> str:
    config = config_file(tmp_path)
    code = main(["run", "-n", "1", "--model", config, "--seq", "8", "--steps", "1", "--quiet", "--weights", weights])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    return err.strip()


def test_bad_weights_files_are_refused_before_launch(tmp_path, capsys):
    missing = tmp_path / "missing.safetensors"
    assert _refused(tmp_path, capsys, str(missing)) == (
        f"stagec: error: --weights {missing}: no such file (a .safetensors file of the model's parameters)")

    state = reference_model(load_config(config_file(tmp_path))).float().state_dict()
    without = {k: v.contiguous() for k, v in state.items() if k != "model.layers.1.self_attn.k_proj.weight"}
    save_file(without, str(tmp_path / "without.safetensors"))
    assert _refused(tmp_path, capsys, str(tmp_path / "without.safetensors")) == (
        f"stagec: error: --weights {tmp_path / 'without.safetensors'}: no tensor "
        "model.layers.1.self_attn.k_proj.weight (the parameter model.layers.self_attn.k_proj.weight is [2, 8, 16])")

    # k_proj is [KV x D, H] = [8, 16] in the tiny Llama; a file of 4 KV heads has [16, 16]
    wrong = {k: v.contiguous() for k, v in state.items()}
    wrong["model.layers.0.self_attn.k_proj.weight"] = torch.zeros(16, 16)
    save_file(wrong, str(tmp_path / "wrong.safetensors"))
    assert _refused(tmp_path, capsys, str(tmp_path / "wrong.safetensors")) == (
        f"stagec: error: --weights {tmp_path / 'wrong.safetensors'}: model.layers.0.self_attn.k_proj.weight is "
        "[16, 16], but the program's parameter model.layers.self_attn.k_proj.weight needs [8, 16] there")

    (tmp_path / "junk.safetensors").write_text(json.dumps({"not": "safetensors"}))
    assert _refused(tmp_path, capsys, str(tmp_path / "junk.safetensors")).startswith(
        f"stagec: error: --weights {tmp_path / 'junk.safetensors'}: not a safetensors file: ")
