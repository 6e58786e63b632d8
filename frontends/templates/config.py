"""Model configs in Hugging Face's `config.json` vocabulary.

A `ModelConfig` holds the sizes a template needs, under HF's key names, read from a
dict, a named config (named.py) or a `config.json` file (`load_config`). Older key
spellings are accepted where HF's own configs use them: GPT-2's `n_embd`, `n_layer`,
`n_head`, `n_inner`, `n_positions`; Mamba's `d_model`, `d_state`, `dt_rank`;
DeepSeek's `n_routed_experts` for Mixtral's `num_local_experts`.

stagec adds one key of its own: `capacity_factor` (default 1.0), the expert capacity
C = capacity_factor * top_k * B * S / E of the MoE templates: a positive number, or an
exact fraction as a string ("18/7") or a `fractions.Fraction`, for a capacity no
decimal gives (one slot per expert and rank in a decode step, docs/inference.md).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

__all__ = ["FAMILIES", "ConfigError", "ModelConfig", "load_config"]


class ConfigError(ValueError):
    """A config that names no known model, misses a key or holds a bad value."""


# model_type -> the template family that builds it
FAMILIES: dict[str, str] = {
    "gpt2": "gpt",
    "gpt": "gpt",
    "llama": "llama",
    "mistral": "llama",
    "mixtral": "mixtral",
    "deepseek": "deepseek_moe",
    "deepseek_v2": "deepseek_v2",
    # DeepSeek-V3/R1: V2's MLA and DeepSeek-MoE at V3's sizes; V3's sigmoid, group-limited
    # router is built as V2's softmax top-k (named.py "deepseek-r1", docs/inference.md)
    "deepseek_v3": "deepseek_v2",
    "mamba": "mamba",
}

# HF's default for tie_word_embeddings differs per model class (PretrainedConfig says
# True; LlamaConfig, MixtralConfig and the DeepSeek configs pass False).
_TIED_BY_DEFAULT = {"gpt": True, "mamba": True}

# Each canonical key and the other spellings HF configs use for it, first match wins.
_ALIASES: dict[str, tuple[str, ...]] = {
    "hidden_size": ("hidden_size", "n_embd", "d_model"),
    "num_hidden_layers": ("num_hidden_layers", "n_layer"),
    "num_attention_heads": ("num_attention_heads", "n_head"),
    "intermediate_size": ("intermediate_size", "n_inner"),
    "max_position_embeddings": ("max_position_embeddings", "n_positions"),
    "num_local_experts": ("num_local_experts", "n_routed_experts"),
    "layer_norm_epsilon": ("layer_norm_epsilon", "layer_norm_eps"),
    "state_size": ("state_size", "d_state"),
    "time_step_rank": ("time_step_rank", "dt_rank"),
}

_COMMON = ("hidden_size", "num_hidden_layers", "vocab_size")
_REQUIRED: dict[str, tuple[str, ...]] = {
    "gpt": (*_COMMON, "num_attention_heads", "max_position_embeddings"),
    "llama": (*_COMMON, "num_attention_heads", "intermediate_size"),
    "mixtral": (*_COMMON, "num_attention_heads", "intermediate_size", "num_local_experts"),
    "deepseek_moe": (
        *_COMMON, "num_attention_heads", "intermediate_size", "num_local_experts",
        "num_experts_per_tok", "moe_intermediate_size",
    ),
    "deepseek_v2": (
        *_COMMON, "num_attention_heads", "intermediate_size", "num_local_experts",
        "num_experts_per_tok", "moe_intermediate_size", "kv_lora_rank",
        "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
    ),
    "mamba": (*_COMMON, "state_size"),
}


@dataclass(frozen=True)
class ModelConfig:
    """The sizes of one model, under HF's key names (None: the model has no such part).

    `name` is what the module's `stg.model` attribute says; `source` where the values
    came from (a file path or the published config a named config copies)."""

    name: str
    model_type: str
    hidden_size: int
    num_hidden_layers: int
    vocab_size: int
    num_attention_heads: int | None = None
    num_key_value_heads: int | None = None
    head_dim: int | None = None
    intermediate_size: int | None = None
    max_position_embeddings: int | None = None
    rms_norm_eps: float = 1e-6
    layer_norm_epsilon: float = 1e-5
    rope_theta: float = 10000.0
    tie_word_embeddings: bool = False
    # mixture of experts
    num_local_experts: int | None = None
    num_experts_per_tok: int | None = None
    moe_intermediate_size: int | None = None
    n_shared_experts: int | None = None
    first_k_dense_replace: int = 0
    norm_topk_prob: bool = False
    routed_scaling_factor: float = 1.0
    capacity_factor: float | Fraction = 1.0
    # multi-head latent attention
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    v_head_dim: int | None = None
    # Mamba
    state_size: int | None = None
    time_step_rank: int | None = None
    expand: int | None = None
    source: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def family(self) -> str:
        return FAMILIES[self.model_type]

    @property
    def capacity(self) -> Fraction:
        """capacity_factor as an exact fraction (1.25 -> 5/4, "18/7" -> 18/7) for
        symbolic sizes."""
        return Fraction(str(self.capacity_factor))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], name: str | None = None, source: str = "") -> ModelConfig:
        """Reads a config.json's dict; `source` names it in error messages."""
        where = source or "config"
        model_type = data.get("model_type")
        if model_type not in FAMILIES:
            raise ConfigError(
                f"{where}: model_type {model_type!r} has no template; supported: "
                + ", ".join(sorted(FAMILIES))
            )
        family = FAMILIES[model_type]

        def get(key: str, default: Any = None) -> Any:
            for spelling in _ALIASES.get(key, (key,)):
                if data.get(spelling) is not None:
                    return data[spelling]
            return default

        for key in _REQUIRED[family]:
            if get(key) is None:
                spellings = " or ".join(f"'{k}'" for k in _ALIASES.get(key, (key,)))
                raise ConfigError(f"{where}: missing required key {spellings} (model_type '{model_type}')")

        def integer(key: str, default: Any = None) -> int | None:
            value = get(key, default)
            if value is None:
                return None
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"{where}: '{key}' must be a non-negative integer, not {value!r}")
            return value

        def number(key: str, default: float) -> float:
            value = get(key, default)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ConfigError(f"{where}: '{key}' must be a positive number, not {value!r}")
            return float(value)

        def boolean(key: str, default: bool) -> bool:
            # bool("false") is True: a quoted "false" would tie the head without a word
            value = get(key, default)
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: '{key}' must be true or false, not {value!r}")
            return value

        def capacity_factor() -> float | Fraction:
            value = get("capacity_factor", 1.0)
            if isinstance(value, (str, Fraction)):
                try:
                    exact = Fraction(value)
                except (ValueError, ZeroDivisionError):
                    exact = None
                if exact is None or exact <= 0:
                    raise ConfigError(f"{where}: 'capacity_factor' must be a positive number or fraction "
                                      f"like \"18/7\", not {value!r}")
                return exact
            return number("capacity_factor", 1.0)

        hidden = integer("hidden_size")
        heads = integer("num_attention_heads")
        fields: dict[str, Any] = dict(
            name=name or data.get("_name_or_path") or model_type,
            model_type=model_type,
            hidden_size=hidden,
            num_hidden_layers=integer("num_hidden_layers"),
            vocab_size=integer("vocab_size"),
            num_attention_heads=heads,
            max_position_embeddings=integer("max_position_embeddings"),
            rms_norm_eps=number("rms_norm_eps", 1e-6),
            layer_norm_epsilon=number("layer_norm_epsilon", 1e-5),
            rope_theta=number("rope_theta", 10000.0),
            tie_word_embeddings=boolean("tie_word_embeddings", _TIED_BY_DEFAULT.get(family, False)),
            capacity_factor=capacity_factor(),
            source=source,
            raw=dict(data),
        )
        if family == "mamba":
            expand = integer("expand", 2)
            rank = get("time_step_rank", "auto")
            fields.update(
                expand=expand,
                intermediate_size=integer("intermediate_size", expand * hidden),
                state_size=integer("state_size"),
                time_step_rank=math.ceil(hidden / 16) if rank == "auto" else integer("time_step_rank"),
            )
        else:
            if get("head_dim") is None and heads and hidden % heads:
                raise ConfigError(
                    f"{where}: hidden_size {hidden} is not divisible by num_attention_heads {heads}; give 'head_dim'"
                )
            fields.update(
                num_key_value_heads=integer("num_key_value_heads", heads),
                head_dim=integer("head_dim", hidden // heads if heads else None),
                intermediate_size=integer("intermediate_size", 4 * hidden if family == "gpt" else None),
            )
        if family in ("mixtral", "deepseek_moe", "deepseek_v2"):
            fields.update(
                num_local_experts=integer("num_local_experts"),
                num_experts_per_tok=integer("num_experts_per_tok", 2),
                moe_intermediate_size=integer("moe_intermediate_size"),
                n_shared_experts=integer("n_shared_experts"),
                first_k_dense_replace=integer("first_k_dense_replace", 0),
                # Mixtral always renormalises its top-k weights; DeepSeek says so per config
                norm_topk_prob=bool(get("norm_topk_prob", family == "mixtral")),
                routed_scaling_factor=number("routed_scaling_factor", 1.0),
            )
        if family == "deepseek_v2":
            fields.update(
                q_lora_rank=integer("q_lora_rank"),
                kv_lora_rank=integer("kv_lora_rank"),
                qk_nope_head_dim=integer("qk_nope_head_dim"),
                qk_rope_head_dim=integer("qk_rope_head_dim"),
                v_head_dim=integer("v_head_dim"),
            )
        config = cls(**fields)
        config._check(where)
        return config

    def _check(self, where: str) -> None:
        def bad(message: str):
            raise ConfigError(f"{where}: {message}")

        for key in ("hidden_size", "num_hidden_layers", "vocab_size"):
            if not getattr(self, key):
                bad(f"'{key}' must be positive")
        if self.family == "mamba":
            return
        n, kv = self.num_attention_heads, self.num_key_value_heads
        if not n or not kv or n % kv:
            bad(f"num_attention_heads ({n}) must be a positive multiple of num_key_value_heads ({kv})")
        if not self.head_dim:
            bad("head_dim must be positive")
        if self.family != "gpt" and self.head_dim % 2:
            bad(f"head_dim ({self.head_dim}) must be even for rotary embedding")
        if self.family in ("llama", "gpt"):
            return
        e, k = self.num_local_experts, self.num_experts_per_tok
        if not e or not k or k > e:
            bad(f"num_experts_per_tok ({k}) must be between 1 and the number of experts ({e})")
        if self.first_k_dense_replace >= self.num_hidden_layers:
            bad(f"first_k_dense_replace ({self.first_k_dense_replace}) leaves no MoE layer")
        if self.family == "deepseek_v2" and self.qk_rope_head_dim % 2:
            bad(f"qk_rope_head_dim ({self.qk_rope_head_dim}) must be even for rotary embedding")

    @property
    def rotary_dim(self) -> int | None:
        """The last dim of the `rope.angles` input (None: the model takes none)."""
        if self.family in ("llama", "mixtral", "deepseek_moe"):
            return self.head_dim
        if self.family == "deepseek_v2":
            return self.qk_rope_head_dim
        return None


def load_config(name_or_path: str | os.PathLike | Mapping[str, Any], **overrides: Any) -> ModelConfig:
    """A named config (see named.py), a `config.json` path or a dict; `overrides`
    replace keys before reading (e.g. capacity_factor=1.25)."""
    from stagec.frontends.templates.named import NAMED_CONFIGS

    if isinstance(name_or_path, Mapping):
        return ModelConfig.from_dict({**name_or_path, **overrides})
    text = os.fspath(name_or_path)
    if text in NAMED_CONFIGS:
        data = NAMED_CONFIGS[text]
        return ModelConfig.from_dict({**data, **overrides}, name=text, source=data.get("_source", text))
    if os.path.isdir(text) and os.path.isfile(os.path.join(text, "config.json")):
        text = os.path.join(text, "config.json")
    if not os.path.isfile(text):
        if text.endswith(".json") or os.sep in text:
            raise ConfigError(f"no such config file: {text}")
        raise ConfigError(
            f"unknown model '{text}'; named configs: {', '.join(NAMED_CONFIGS)} (or give a config.json path)"
        )
    try:
        with open(text, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read config {text}: {error}") from None
    except json.JSONDecodeError as error:
        raise ConfigError(f"{text}:{error.lineno}:{error.colno}: not valid JSON: {error.msg}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{text}: a config.json holds a JSON object, not {type(data).__name__}")
    name = data.get("_name_or_path") or os.path.splitext(os.path.basename(text))[0]
    if name == "config":
        name = os.path.basename(os.path.dirname(os.path.abspath(text))) or name
    return ModelConfig.from_dict({**data, **overrides}, name=name, source=text)
