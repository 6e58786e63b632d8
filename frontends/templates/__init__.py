"""Model templates: GPT, Llama, MoE (Mixtral, DeepSeek-MoE), MLA and Mamba as stg IR (docs/training-ir.md).

    module = build_model(load_config("llama3-8b"), dtype="bf16")

`load_config` reads a named config (named.py), a Hugging Face config.json or a dict;
`build_model` dispatches on its model_type to the template of that architecture
(gpt.py, llama.py, moe.py, mla.py, mamba.py, sharing the pieces in blocks.py).
"""

from stagec.frontends.templates.build import TEMPLATES, build_model, example_inputs, rope_angles
from stagec.frontends.templates.config import FAMILIES, ConfigError, ModelConfig, load_config
from stagec.frontends.templates.named import NAMED_CONFIGS

__all__ = [
    "FAMILIES",
    "NAMED_CONFIGS",
    "TEMPLATES",
    "ConfigError",
    "ModelConfig",
    "build_model",
    "example_inputs",
    "load_config",
    "rope_angles",
]
