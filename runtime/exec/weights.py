"""Initial weights: the same global tensors on every rank, from a seed.

The model templates declare their parameters (names, shapes, stacks per layer) but no
initialisation, so the runtime uses the usual one for these decoder models (Hugging
Face's `_init_weights` with `initializer_range`): every matrix and embedding from
N(0, std), norm weights at 1 and biases at 0. Each parameter's generator is seeded
from the run's seed and the parameter's name alone, so a rank that reads only some
parameters (a pipeline stage) draws the same values as a rank that reads them all,
and a single-process reference can rebuild them (`initial_weight`).
"""

from __future__ import annotations

import zlib

import torch

DEFAULT_STD = 0.02


def initial_weight(name: str, shape: tuple[int, ...], dtype: torch.dtype = torch.float32, *,
                   seed: int = 0, std: float = DEFAULT_STD) -> torch.Tensor:
    """The global initial value of parameter `name` (stacked per layer: [L, ...])."""
    leaf = name.rsplit(".", 1)[-1]
    owner = name.rsplit(".", 2)[-2] if name.count(".") >= 1 else ""
    if leaf == "bias":
        return torch.zeros(shape, dtype=dtype)
    if "norm" in owner or "ln_" in owner or owner in ("norm", "norm_f"):
        return torch.ones(shape, dtype=dtype)
    generator = torch.Generator().manual_seed((seed * 1_000_003 + zlib.crc32(name.encode())) % (1 << 63))
    return (torch.randn(shape, generator=generator, dtype=torch.float32) * std).to(dtype)


def initializer(seed: int = 0, std: float = DEFAULT_STD):
    """`initial(name, shape, dtype)` for LocalState."""
    return lambda name, shape, dtype: initial_weight(name, shape, dtype, seed=seed, std=std)
