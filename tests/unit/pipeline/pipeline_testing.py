"""Shared helpers of the stg-pipeline tests: a tiny template's training step in
float64 (stg-autodiff with micro-batches, then cse), its state store, and runs of the
step whole and pipelined."""

from __future__ import annotations

import torch
from xdsl.dialects.builtin import ModuleOp

from stagec.dialects import make_context
from stagec.frontends.templates import build_model, example_inputs, load_config
from stagec.passes.stg_autodiff import StgAutodiff
from stagec.passes.stg_pipeline import StgPipeline
from stagec.runtime.interpreter import Interpreter, StateStore
from tests.unit.templates.tiny_configs import TINY
from tests.unit.templates.torch_models import reference_model, stg_state

B, S, M = 2, 6, 4


def train_step(config: dict, micro_batches: int = M, **autodiff) -> ModuleOp:
    """The template's @train_step: AdamW (with weight decay, so every state moves)."""
    from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

    module = build_model(load_config(config), "f64")
    options = dict(optimizer="adamw", lr=1e-2, weight_decay=0.1, micro_batches=micro_batches) | autodiff
    StgAutodiff(**options).apply(make_context(), module)
    CommonSubexpressionElimination().apply(make_context(), module)
    return module


def pipelined(module: ModuleOp, **options) -> ModuleOp:
    module = module.clone()
    StgPipeline(**options).apply(make_context(), module)
    module.verify()
    return module


def initial_store(config: dict, micro_batches: int = M) -> StateStore:
    """Weights of the reference model; `micro_batches` different batches stacked."""
    cfg = load_config(config)
    batches = [example_inputs(cfg, B, S, "f64", seed=10 + i) for i in range(micro_batches)]
    inputs = {k: torch.stack([b[k] for b in batches]) for k in ("input_ids", "labels", "position_ids") if k in batches[0]}
    if "rope.angles" in batches[0]:
        inputs["rope.angles"] = batches[0]["rope.angles"]
    return StateStore(params=stg_state(reference_model(cfg)), inputs=inputs)


def copy(store: StateStore) -> StateStore:
    return StateStore(dict(store.params), dict(store.states), dict(store.inputs))


def run_whole(module: ModuleOp, store: StateStore) -> torch.Tensor:
    (loss,) = Interpreter(module, {"B": B, "S": S}).run("train_step", store)
    return loss


def run_stages(module: ModuleOp, store: StateStore) -> torch.Tensor:
    results = Interpreter(module, {"B": B, "S": S}).run_stages(store)
    losses = [r for r in results.values() if r]
    assert len(losses) == 1, results
    return losses[0][0]


__all__ = ["TINY", "B", "S", "M", "train_step", "pipelined", "initial_store", "copy", "run_whole", "run_stages"]
