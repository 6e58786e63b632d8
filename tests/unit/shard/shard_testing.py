"""Run a template's training step unsharded and sharded on simulated ranks, from the
same state, and compare the loss and every parameter and optimizer state after it."""

from __future__ import annotations

import torch

from tests.unit.templates.tiny_configs import TINY
from tests.unit.templates.torch_models import reference_model, stg_state

from stagec.dialects import make_context
from stagec.frontends.templates import build_model, example_inputs, load_config
from stagec.passes.stg_autodiff import StgAutodiff
from stagec.runtime import interpreter
from stagec.tools.pipeline_spec import build_pipeline


# the MoE configs with capacity_factor E/top_k: no token is dropped (see the tests)
CONFIGS = {
    **TINY,
    "mixtral-nodrop": {**TINY["mixtral"], "capacity_factor": 2.0},
    "deepseek-moe-nodrop": {**TINY["deepseek-moe"], "capacity_factor": 2.0},
}


def train_step(name: str, micro_batches: int = 1, **autodiff):
    config = load_config(CONFIGS[name])
    module = build_model(config, "f64")
    options = dict(optimizer="adamw", lr=1e-2, weight_decay=0.1)
    options.update(autodiff)
    StgAutodiff(micro_batches=micro_batches, **options).apply(make_context(), module)
    return config, module


def transformed(module, pipeline: str):
    module = module.clone()
    build_pipeline(pipeline, mlir_syntax=True).apply(make_context(), module)
    module.verify()
    return module


def state(config, b: int, s: int, micro_batches: int, seed: int = 0):
    torch.manual_seed(seed)
    model = reference_model(config)
    params = {k: v.clone() for k, v in stg_state(model).items()}
    batches = [example_inputs(config, b, s, "f64", seed=seed + i) for i in range(micro_batches)]
    inputs = dict(batches[0])
    if micro_batches > 1:
        for key in ("input_ids", "labels", "position_ids"):
            if key in inputs:
                inputs[key] = torch.stack([x[key] for x in batches])
    return params, inputs


def run(module, params, inputs, b: int, s: int):
    store = interpreter.StateStore(params={k: v.clone() for k, v in params.items()}, inputs=dict(inputs))
    (loss,) = interpreter.Interpreter(module, bindings={"B": b, "S": s}).run("train_step", store)
    return loss, store


def assert_same_step(reference, sharded, rtol: float = 1e-5):
    (loss_a, a), (loss_b, b) = reference, sharded
    torch.testing.assert_close(loss_b, loss_a, rtol=rtol, atol=0)
    assert a.params.keys() == b.params.keys()
    for name in a.params:
        torch.testing.assert_close(b.params[name], a.params[name], rtol=rtol, atol=1e-12, msg=name)
    assert a.states.keys() == b.states.keys()
    for key in a.states:
        torch.testing.assert_close(b.states[key], a.states[key], rtol=rtol, atol=1e-12, msg=str(key))
