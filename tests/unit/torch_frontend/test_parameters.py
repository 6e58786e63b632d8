"""frontends/torch/parameters.py: a torch module's parameters under the imported
program's names and stacked shapes, and read back by the runtime's
SafetensorsWeights (what `stagec run --frontend torch` hands the ranks).

Tiny transformers models of tests/unit/templates/tiny_configs.py (H 16, 4 heads of
D 4, 2 layers, V 32), built for real under a seed by `initial_model`:
- GPT-2: c_attn [H, 3 N D] is declared [H, 3, N D] (a view), its bias [3, N D]; the
  tied head is the embedding, named once;
- Mixtral: experts.gate_up_proj [E, 2 FE, H] is declared as its halves `[0]`, `[1]`;
- a one-layer Llama keeps its layer index in the names (the fold leaves it unrolled).
"""

from __future__ import annotations

import json
import re

import pytest
import torch
from safetensors.torch import save_file

from stagec.frontends.templates import load_config
from stagec.frontends.torch.models import import_model, initial_model
from stagec.frontends.torch.parameters import program_parameters
from stagec.runtime.exec.weights import SafetensorsWeights, parameter_shapes
from tests.unit.templates.tiny_configs import TINY

pytest.importorskip("transformers")


def _imported(tmp_path, name: str, **overrides):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({**TINY[name], **overrides}))
    config = load_config(str(path))
    model = initial_model(config, "hf", "f32", seed=3)
    forward = import_model(model, config)
    return model, program_parameters(model, parameter_shapes(forward))


def _read_back(tmp_path, tensors: dict) -> SafetensorsWeights:
    save_file(tensors, str(tmp_path / "parameters.safetensors"))
    return SafetensorsWeights(str(tmp_path / "parameters.safetensors"))


def test_gpt2_fused_attention_is_a_view_and_the_tied_head_is_the_embedding(tmp_path):
    model, tensors = _imported(tmp_path, "gpt")
    module = dict(model.named_parameters())
    # every module parameter once; the tied lm_head.weight is transformer.wte.weight
    assert "lm_head.weight" not in module and "lm_head.weight" not in tensors
    assert set(tensors) == {re.sub(r"\.\d+\.", ".", n) for n in module}
    # c_attn of layer l: Conv1D [H, 3 N D] = [16, 48], declared [H, 3, N D] = [16, 3, 16], stacked over L = 2
    weight, bias = tensors["transformer.h.attn.c_attn.weight"], tensors["transformer.h.attn.c_attn.bias"]
    assert weight.shape == (2, 16, 3, 16) and bias.shape == (2, 3, 16)
    for layer in range(2):
        stored = module[f"transformer.h.{layer}.attn.c_attn.weight"]
        assert torch.equal(weight[layer, :, 1], stored[:, 16:32])  # k: the second third of the fused output
        assert torch.equal(bias[layer].flatten(), module[f"transformer.h.{layer}.attn.c_attn.bias"])
    weights = _read_back(tmp_path, tensors)
    read = weights("transformer.h.attn.c_attn.weight", (2, 16, 3, 16), torch.float32)
    assert torch.equal(read, weight)


def test_mixtral_fused_expert_halves_are_gate_and_up(tmp_path):
    model, tensors = _imported(tmp_path, "mixtral")
    module = dict(model.named_parameters())
    # E 4 experts, FE 12, H 16: gate_up_proj [4, 24, 16]; [0] its rows 0-11 (gate), [1] rows 12-23 (up)
    gate, up = (tensors[f"model.layers.mlp.experts.gate_up_proj[{i}]"] for i in (0, 1))
    assert gate.shape == up.shape == (2, 4, 12, 16)
    fused = module["model.layers.1.mlp.experts.gate_up_proj"]
    assert torch.equal(gate[1], fused[:, :12]) and torch.equal(up[1], fused[:, 12:])
    weights = _read_back(tmp_path, tensors)
    assert torch.equal(weights("model.layers.mlp.experts.gate_up_proj[1]", (2, 4, 12, 16), torch.float32), up)


def test_one_layer_keeps_its_index_and_reads_back_by_name(tmp_path):
    model, tensors = _imported(tmp_path, "llama", num_hidden_layers=1)
    name = "model.layers.0.self_attn.q_proj.weight"  # N D x H = 16 x 16, not stacked
    assert tensors[name].shape == (16, 16)
    assert torch.equal(tensors[name], dict(model.named_parameters())[name])
    assert torch.equal(_read_back(tmp_path, tensors)(name, (16, 16), torch.float32), tensors[name])


def test_the_seed_fixes_the_module_initialisation(tmp_path):
    (tmp_path / "llama.json").write_text(json.dumps(TINY["llama"]))
    config = load_config(str(tmp_path / "llama.json"))
    a, b, c = (dict(initial_model(config, "hf", "f32", seed=s).named_parameters()) for s in (3, 3, 4))
    key = "model.layers.1.mlp.up_proj.weight"
    assert torch.equal(a[key], b[key]) and not torch.equal(a[key], c[key])
    # transformers' own initialisation: N(0, initializer_range = 0.02) for matrices; the
    # sample std of up_proj's 24 x 16 = 384 values is 0.02 +- 0.02 / sqrt(2 x 384) = 0.0007
    assert abs(float(a[key].detach().std()) - 0.02) < 0.002
