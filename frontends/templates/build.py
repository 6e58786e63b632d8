"""`build_model`: a config's forward program as stg IR, by its model_type; and the
inputs that program reads (`rope_angles`, `example_inputs`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from xdsl.dialects.builtin import ModuleOp

from stagec.frontends.templates.blocks import element_type
from stagec.dialects.stg.names import Phase
from stagec.frontends.templates.config import ConfigError, ModelConfig, load_config
from stagec.frontends.templates.gpt import build_gpt
from stagec.frontends.templates.llama import build_llama
from stagec.frontends.templates.mamba import build_mamba
from stagec.frontends.templates.mla import build_deepseek_v2
from stagec.frontends.templates.moe import build_deepseek_moe, build_mixtral

if TYPE_CHECKING:
    import torch

__all__ = ["PHASES", "TEMPLATES", "build_model", "example_inputs", "rope_angles"]

PHASES = tuple(p.value for p in Phase)  # train, prefill, decode

TEMPLATES: dict[str, Callable[..., ModuleOp]] = {
    "gpt": build_gpt,
    "llama": build_llama,
    "mixtral": build_mixtral,
    "deepseek_moe": build_deepseek_moe,
    "deepseek_v2": build_deepseek_v2,
    "mamba": build_mamba,
}


def build_model(config: ModelConfig | str | Mapping[str, Any], dtype: str = "bf16", phase: str = "train") -> ModuleOp:
    """The forward program of `config` (a ModelConfig, a named config, a config.json
    path or a dict) with parameters in `dtype` (bf16, f16, f32, f64). `phase` "prefill"
    or "decode" builds that inference step instead (@prefill / @decode returning the
    next token's logits, with a KV cache per layer; docs/inference.md)."""
    if not isinstance(config, ModelConfig):
        config = load_config(config)
    element_type(dtype)
    if phase not in PHASES:
        raise ConfigError(f"unknown phase '{phase}'; use one of {', '.join(PHASES)}")
    if phase == "train":
        return TEMPLATES[config.family](config, dtype)
    return TEMPLATES[config.family](config, dtype, phase)


def rope_angles(seq_len: int, head_dim: int, theta: float = 10000.0, dtype: torch.dtype | None = None) -> torch.Tensor:
    """The rotary angles [S, 1, D] (float32 unless `dtype`): angle[s, 0, d] =
    s * theta^(-2*(d mod D/2)/D), HF's convention (each frequency twice, for
    rotate_half's two halves)."""
    import torch  # only the numeric helpers need torch; building IR does not

    if head_dim % 2:
        raise ValueError(f"rotary embedding needs an even head_dim, not {head_dim}")
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float64), inv_freq)
    return torch.cat([angles, angles], dim=-1).unsqueeze(1).to(dtype or torch.float32)


def example_inputs(config: ModelConfig | str | Mapping[str, Any], batch: int, seq_len: int,
                   dtype: str = "bf16", seed: int = 0) -> dict[str, torch.Tensor]:
    """Seeded inputs of the forward program keyed by input name: `input_ids` and
    `labels` [B, S] int64 (labels are the ids shifted left by one, then a random
    last token), GPT's `position_ids`, and `rope.angles` [S, 1, D] float32 (the IR's
    input type for every model dtype; the program casts it)."""
    import torch

    if not isinstance(config, ModelConfig):
        config = load_config(config)
    element_type(dtype)
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(config.vocab_size, (batch, seq_len + 1), generator=generator)
    inputs = {"input_ids": ids[:, :-1].contiguous(), "labels": ids[:, 1:].contiguous()}
    if config.family == "gpt":
        if seq_len > config.max_position_embeddings:
            raise ValueError(f"S = {seq_len} exceeds n_positions = {config.max_position_embeddings}")
        inputs["position_ids"] = torch.arange(seq_len).expand(batch, seq_len).contiguous()
    if config.rotary_dim is not None:
        inputs["rope.angles"] = rope_angles(seq_len, config.rotary_dim, config.rope_theta)
    return inputs
