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
                 tokens: str | None = None, weights: str | None = None) -> list[float]:
    """Per-step losses of the same model trained in one process with torch.optim.AdamW
    (the hyperparameters stg-autodiff's adamw uses: betas 0.9, 0.95, eps 1e-8, no decay),
    from the runtime's seeded initial weights or from a safetensors file of the model's
    state_dict (`weights`)."""
    config = load_config(config_path)
    model = reference_model(config).float()
    if weights is None:
        load_initial_weights(model)
    else:
        from safetensors.torch import load_file

        model.load_state_dict(load_file(weights))
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


PARITY_STEPS, PARITY_SEQ = 20, 8
PARITY_TOLERANCE = 1e-5  # issue 18: per-step losses equal to 1e-5 relative


def parity_tokens(tmp_path: Path) -> str:
    """A token file whose next token is always the previous one plus 1 (mod V = 32):
    the loss falls far from ln V, so a wrong update shows."""
    import numpy as np

    path = tmp_path / "tokens.npy"
    np.save(path, (np.arange(4096) * 1 + 3) % 32)
    return str(path)


def compare_with_torch(tmp_path: Path, config: str, tokens: str, ranks: int, *options: str, batch: int,
                       micro_batches: int = 1, weights: str | None = None) -> tuple[float, dict]:
    """Runs `stagec run -n RANKS OPTIONS` for PARITY_STEPS steps and the same model in
    one torch process on the same global batch (`batch` sequences per micro-batch);
    asserts the per-step losses agree to PARITY_TOLERANCE. Returns (the maximum
    relative error, the run's JSON)."""
    expected = torch_losses(config, PARITY_STEPS, batch=batch, seq=PARITY_SEQ, micro_batches=micro_batches,
                            tokens=tokens, weights=weights)
    # the reference learns: the comparison is not of near-constant numbers
    assert expected[-1] < 0.8 * expected[0], expected  # measured: 3.44 -> 2.60 (B 1) ... 0.93 (B 4)
    extra = ["--micro-batches", str(micro_batches)] if micro_batches > 1 else []
    extra += ["--weights", weights] if weights else []
    got = stagec_run("-n", str(ranks), *options, *extra, "--model", config, "--seq", str(PARITY_SEQ),
                     "--steps", str(PARITY_STEPS), "--data", tokens, tmp_path=tmp_path)
    assert got["bindings"]["M"] == micro_batches
    error = max_relative_error(got["losses"], expected)
    assert error <= PARITY_TOLERANCE, (error, got["losses"], expected)
    print(f"max relative error {error:.2e}: -n {ranks} {' '.join(options + tuple(extra))}")
    return error, got


__all__ = ["compare_with_torch", "config_file", "max_relative_error", "parity_tokens", "stagec_run", "torch_losses"]
