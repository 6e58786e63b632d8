"""Shared helpers of the `stagec run` tests: a tiny model's config file, the run itself
(stagec's main in this process; the ranks are real processes under mpiexec), and the
reference - the same model in plain PyTorch (tests/unit/templates/torch_models.py,
written independently of the templates), from the same initial weights
(runtime/exec/weights.py) and the same batches (runtime/exec/data.py), trained by
torch.optim.AdamW in one process."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from stagec.frontends.templates import load_config
from stagec.runtime.exec import Batches, initial_weight
from stagec.tools.stagec_cli import main
from tests.unit.templates.tiny_configs import TINY
from tests.unit.templates.torch_models import _INDEX, reference_model, stg_state

LR = 1e-2


def config_file(tmp_path: Path, name: str = "llama", **overrides) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({**TINY[name], **overrides}))
    return str(path)


def stagec_run(*args: str, tmp_path: Path) -> dict:
    """Runs `stagec run ... --json` and returns the JSON it wrote."""
    out = tmp_path / f"run{len(list(tmp_path.glob('run*.json')))}.json"
    code = main(["run", *args, "--quiet", "--lr", str(LR), "--json", str(out)])
    assert code in (0, None), code
    return json.loads(out.read_text())


def load_initial_weights(model: torch.nn.Module, seed: int = 0, std: float = 0.02) -> None:
    """Set the model's parameters to the runtime's initial weights: stg_state's names
    and stacked shapes, each layer's (and expert's) slice copied back."""
    shapes = {name: tuple(t.shape) for name, t in stg_state(model).items()}
    whole = {name: initial_weight(name, shape, torch.float32, seed=seed, std=std) for name, shape in shapes.items()}
    with torch.no_grad():
        for name, p in model.named_parameters():
            renamed = model.stg_name(name) if hasattr(model, "stg_name") else name
            index = tuple(int(i) for i in _INDEX.findall(renamed))
            p.copy_(whole[_INDEX.sub("", renamed)][index].to(p.dtype))


def torch_losses(config_path: str, steps: int, *, batch: int, seq: int, micro_batches: int = 1,
                 tokens: str | None = None) -> list[float]:
    """Per-step losses of the same model trained in one process with torch.optim.AdamW
    (the hyperparameters stg-autodiff's adamw uses: betas 0.9, 0.95, eps 1e-8, no decay)."""
    config = load_config(config_path)
    model = reference_model(config).float()
    load_initial_weights(model)
    shapes = {"input_ids": (micro_batches, batch, seq) if micro_batches > 1 else (batch, seq)}
    if config.rotary_dim is not None:
        shapes["rope.angles"] = (seq, 1, config.rotary_dim)
    if config.family == "gpt":
        shapes["position_ids"] = shapes["input_ids"]
    batches = Batches(config, shapes, tokens=tokens)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0)
    losses = []
    for step in range(steps):
        data = batches.batch(step)
        ids, labels = data["input_ids"].reshape(-1, seq), data["labels"].reshape(-1, seq)
        optimizer.zero_grad()
        if config.family == "gpt":
            loss = model(ids, labels, data["position_ids"].reshape(-1, seq))
        else:
            loss = model(ids, labels, data["rope.angles"])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def max_relative_error(actual: list[float], expected: list[float]) -> float:
    assert len(actual) == len(expected)
    return max(abs(a - e) / abs(e) for a, e in zip(actual, expected))


__all__ = ["config_file", "stagec_run", "torch_losses", "max_relative_error"]
