"""import_module and convert-torch-to-stg at their edges: parameters as named arguments,
symbolic B and S, a model on the meta device imports without allocating weights,
errors that name the op, the source line and the module path, and the CLI flags."""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch
import torch.nn as nn
from tests.unit.torch_frontend.llama_torch import LlamaLM, make_model

from stagec.dialects.torch import ValueTensorType
from stagec.frontends.templates import load_config
from stagec.frontends.torch import import_module
from stagec.frontends.torch.models import DYNAMIC, example_args, import_forward
from stagec.passes.convert_torch_to_stg import ConversionError, convert_torch_to_stg


def test_parameters_are_named_arguments_and_batch_and_sequence_symbolic():
    module = import_module(LlamaLM(layers=2), example_args(64, "cpu"), DYNAMIC)
    fn = next(iter(module.ops))
    attrs = [{k: v.data for k, v in a.data.items()} for a in fn.arg_attrs.data]
    names = [a["torch.name"] for a in attrs]
    assert names[0] == "model.embed_tokens.weight" and "model.layers.1.mlp.down_proj.weight" in names
    assert {a["torch.kind"] for a in attrs} == {"parameter", "buffer", "input"}
    ids = fn.args[names.index("input_ids")]
    assert isinstance(ids.type, ValueTensorType) and [s.data for s in ids.type.shape.data] == [-1, -1]
    symbols = {op.properties["symbol_name"].data for op in module.walk() if op.name == "torch.symbolic_int"}
    assert symbols == {"B", "S"}
    # every op carries the nn.Module it ran in
    paths = {op.attributes["torch.module"].data for op in module.walk() if "torch.module" in op.attributes}
    assert "model.layers.1.self_attn.q_proj" in paths


def test_a_meta_model_at_70b_dims_imports_without_weights():
    """4 layers of Llama-3-70B (10 GB of bf16 weights per 4 layers) on the meta device."""
    config = dataclasses.replace(load_config("llama3-70b"), num_hidden_layers=4)
    with torch.device("meta"):
        model = make_model(config).to(torch.bfloat16)
    assert all(p.device.type == "meta" for p in model.parameters())
    module = import_forward(model, config.vocab_size, config.name)
    bindings = {k: v.value.data for k, v in module.attributes["stg.config"].data.items()}
    assert bindings == {"H": 8192, "L": 4, "V": 128256, "N": 64, "KV": 8, "D": 128, "F": 28672}


class _Scan(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, dim=1)


class _WithScan(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(16, 8)
        self.scan = _Scan()
        self.head = nn.Linear(8, 16, bias=False)

    def forward(self, input_ids, labels):
        logits = self.head(self.scan(self.embed(input_ids)))
        return nn.functional.cross_entropy(logits.view(-1, 16), labels.view(-1))


def test_an_unsupported_op_is_an_error_naming_op_line_and_module():
    torch_module = import_module(_WithScan(), example_args(16, "cpu"), DYNAMIC)
    with pytest.raises(ConversionError) as error:
        convert_torch_to_stg(torch_module)
    message = str(error.value)
    assert re.search(r"cannot convert 'torch.aten.cumsum' at .*test_import.py:\d+ in module 'scan'", message), message


def test_position_only_tensors_on_the_loss_path_are_an_error_not_a_drop():
    """An op on the way to the loss that needs a position-only tensor no pattern reads."""

    class AddPositions(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(16, 8)

        def forward(self, input_ids, labels):
            x = self.embed(input_ids) * torch.arange(input_ids.shape[1])[None, :, None]
            return nn.functional.cross_entropy(x.view(-1, 8), labels.view(-1) % 8)

    with pytest.raises(ConversionError, match="position-only"):
        convert_torch_to_stg(import_module(AddPositions(), example_args(16, "cpu"), DYNAMIC))


def test_stats_takes_frontend_torch(capsys):
    pytest.importorskip("transformers")
    from stagec.tools.stagec_cli import main

    assert main(["stats", "--model", "llama3.2-1b", "--frontend", "torch", "--seq", "512", "--json"]) == 0
    torch_out = capsys.readouterr().out
    assert main(["stats", "--model", "llama3.2-1b", "--seq", "512", "--json"]) == 0
    template_out = capsys.readouterr().out
    import json

    a, b = json.loads(torch_out), json.loads(template_out)
    assert a["params"] == b["params"]


def test_a_model_built_under_fake_tensor_mode_imports():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        model = LlamaLM(layers=3)
    module = import_forward(model, 64, "fake")
    assert module.attributes["stg.config"].data["L"].value.data == 3
