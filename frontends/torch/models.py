"""Models for the torch frontend: Hugging Face `transformers` causal LMs built from our
named configs (no weights, no hub access), or a user's `MODULE:FACTORY`, imported and
converted into the forward program docs/training-ir.md fixes.

    module = build_torch_model("llama3-8b")                       # LlamaForCausalLM
    module = build_torch_model("mixtral-8x7b", dtype="bf16")      # MixtralForCausalLM
    module = build_torch_model("gpt3-5b")                         # GPT2LMHeadModel
    module = build_torch_model(config, frontend_target="mypkg.models:make_model")
    model = initial_model(config, "hf", "f32", seed=0)           # real weights (`stagec run`)
    module = import_model(model, config)

A model is built on the meta device: a 70B model costs no memory. `initial_model`
builds it for real instead, under a seed, for a run that starts from the module's own
initial parameters (frontends/torch/parameters.py names them as the program does).
What is exported is `CausalLMLoss`: the model's decoder, its LM head and the mean token cross-entropy
against already shifted labels, so the parameters keep Hugging Face's names
(`model.layers.0.self_attn.q_proj.weight`, `lm_head.weight`).

For Hugging Face models the import registers one attention implementation,
`stagec_sdpa`: causal `F.scaled_dot_product_attention` with `enable_gqa`, and no
attention mask (batches of whole sequences, as the training IR assumes), so that
attention is one aten op and no mask construction is exported.

A factory `MODULE:FACTORY` is called as `FACTORY(config)` with the ModelConfig (or
`FACTORY()` if it takes no argument) under the meta device (or the CPU, for
`initial_model`) and returns an nn.Module
whose forward takes (input_ids, labels) and returns the loss. The user's code (the
module's import, the factory, `.to(dtype)`, the forward under torch.export) runs with
stdout sent to stderr, so that what it prints cannot mix into stagec's output (`--json`,
the IR on stdout), and whatever it raises - any exception, SystemExit, a BaseException
of its own; not Ctrl-C or SIGTERM - is a FactoryError.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from xdsl.dialects.builtin import ModuleOp

from stagec.dialects.stg.config import config_bindings
from stagec.frontends.templates import ConfigError, ModelConfig, load_config
from stagec.frontends.templates.blocks import element_type

__all__ = ["FactoryError", "build_torch_model", "call_factory", "causal_lm_loss", "hf_model", "import_forward",
           "import_model", "initial_model", "load_factory", "torch_model"]

DYNAMIC = {"input_ids": {0: "B", 1: "S"}, "labels": {0: "B", 1: "S"}}
_TORCH_DTYPES = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "f64": "float64"}


def torch_dtype(dtype: str):
    import torch

    element_type(dtype)  # a clear error for an unknown dtype
    return getattr(torch, _TORCH_DTYPES[{"bfloat16": "bf16", "float32": "f32", "float64": "f64"}.get(dtype, dtype)])


def _causal_lm_loss():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class CausalLMLoss(nn.Module):
        """A causal LM's decoder and head with the mean token cross-entropy:
        forward(input_ids, labels) -> loss, labels already shifted."""

        def __init__(self, lm: nn.Module):
            super().__init__()
            # the decoder under its own name (model, transformer), so FQNs stay HF's
            self.decoder_name = lm.base_model_prefix
            setattr(self, self.decoder_name, getattr(lm, self.decoder_name))
            self.lm_head = lm.lm_head

        def forward(self, input_ids, labels):
            decoder = getattr(self, self.decoder_name)
            hidden = decoder(input_ids=input_ids, use_cache=False).last_hidden_state
            logits = self.lm_head(hidden)
            wide = torch.promote_types(logits.dtype, torch.float32)  # bf16 logits in f32, f64 stays
            return F.cross_entropy(logits.to(wide).reshape(-1, logits.shape[-1]), labels.reshape(-1))

    return CausalLMLoss


def causal_lm_loss(lm):
    """`CausalLMLoss` around a transformers causal LM (its `.model` and `.lm_head`)."""
    return _causal_lm_loss()(lm)


_REGISTERED = False


def register_attention() -> str:
    """Registers `stagec_sdpa` with transformers (once) and returns its name."""
    global _REGISTERED
    if not _REGISTERED:
        import torch.nn.functional as F
        from transformers import AttentionInterface
        from transformers.masking_utils import AttentionMaskInterface

        def stagec_sdpa(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
            out = F.scaled_dot_product_attention(query, key, value, is_causal=True, scale=scaling,
                                                 enable_gqa=query.shape[1] != key.shape[1])
            return out.transpose(1, 2).contiguous(), None

        AttentionInterface.register("stagec_sdpa", stagec_sdpa)
        AttentionMaskInterface.register("stagec_sdpa", lambda *args, **kwargs: None)
        _REGISTERED = True
    return "stagec_sdpa"


def _hf_config(config: ModelConfig, dtype):
    """The transformers config of one of our model configs (HF key names already)."""
    import transformers

    family = config.family
    if family == "gpt":
        keys = dict(
            vocab_size=config.vocab_size, n_embd=config.hidden_size, n_layer=config.num_hidden_layers,
            n_head=config.num_attention_heads, n_inner=config.intermediate_size,
            n_positions=config.max_position_embeddings, layer_norm_epsilon=config.layer_norm_epsilon,
            activation_function="gelu_new", tie_word_embeddings=config.tie_word_embeddings,
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
        )
        hf = _checked(config, transformers.GPT2Config, **{k: v for k, v in keys.items() if v is not None})
        hf._attn_implementation = register_attention()
        return hf
    if family == "llama":
        cls = transformers.LlamaConfig
    elif family == "mixtral":
        cls = transformers.MixtralConfig
    else:
        raise ConfigError(f"--frontend torch builds LlamaForCausalLM, MixtralForCausalLM and GPT2LMHeadModel; "
                          f"'{config.name}' is a {family} model (use --frontend template)")
    keys = dict(
        vocab_size=config.vocab_size, hidden_size=config.hidden_size, intermediate_size=config.intermediate_size,
        num_hidden_layers=config.num_hidden_layers, num_attention_heads=config.num_attention_heads,
        num_key_value_heads=config.num_key_value_heads, head_dim=config.head_dim,
        rms_norm_eps=config.rms_norm_eps, rope_theta=config.rope_theta,
        tie_word_embeddings=config.tie_word_embeddings, max_position_embeddings=config.max_position_embeddings,
    )
    if family == "mixtral":
        keys.update(num_local_experts=config.num_local_experts, num_experts_per_tok=config.num_experts_per_tok)
    # a key the config leaves out (a tiny config.json without max_position_embeddings
    # or head_dim) takes transformers' default: its strict config refuses None
    hf = _checked(config, cls, **{k: v for k, v in keys.items() if v is not None})
    hf._attn_implementation = register_attention()
    if family == "mixtral":
        from stagec.frontends.torch.moe import register_experts

        hf._experts_implementation = register_experts()
        hf.capacity_factor = float(config.capacity)
    return hf


def _checked(config: ModelConfig, cls, **keys):
    """`cls(**keys)`; a ConfigError naming the config for what transformers refuses."""
    try:
        return cls(**keys)
    except Exception as error:  # noqa: BLE001 - transformers' validation (huggingface_hub's strict dataclasses)
        raise ConfigError(f"'{config.name}': transformers' {cls.__name__} refuses it: {user_exception(error)}") from None


def hf_model(config: ModelConfig, dtype: str = "bf16", device: str = "meta"):
    """The `CausalLMLoss` of the transformers model class of `config`, on `device`."""
    import torch
    import transformers

    element = torch_dtype(dtype)
    hf_config = _hf_config(config, element)
    cls = {"llama": transformers.LlamaForCausalLM, "mixtral": transformers.MixtralForCausalLM,
           "gpt": transformers.GPT2LMHeadModel}[config.family]
    with torch.device(device):
        lm = cls(hf_config).to(element)
    lm.eval()
    return _causal_lm_loss()(lm)


class FactoryError(ConfigError):
    """A `MODULE:FACTORY` that does not give a model: a module that does not import, a
    name that is not a callable, a call that raises or returns no nn.Module, a forward
    that torch.export cannot run. The message is one line that starts with
    `FACTORY 'MODULE:FACTORY'` and holds the user's exception in one line."""


@contextlib.contextmanager
def user_code() -> Iterator[None]:
    """Run a user's module, factory or forward: what it prints goes to stderr."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


def is_interrupt(error: BaseException) -> bool:
    """Ctrl-C or SIGTERM (stagec's Terminated), which stop stagec rather than report
    the user's code; everything else the user's code raises is its failure."""
    from stagec.tools.errors import Terminated

    return isinstance(error, (KeyboardInterrupt, Terminated))


def user_exception(error: BaseException) -> str:
    """`Type: first line of the message (file:line)`, where file:line is where it was
    raised (a SyntaxError's own position)."""
    try:
        message = str(error)
    except BaseException as broken:  # noqa: BLE001 - the user's __str__
        if is_interrupt(broken):
            raise
        message = f"(its message cannot be shown: str() raised {type(broken).__name__})"
    text = next((line.strip() for line in message.splitlines() if line.strip()), "")
    if isinstance(error, SyntaxError):
        text = error.msg or text
        where = f"{error.filename}:{error.lineno}" if error.filename else ""
    else:
        tb = error.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        where = f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb is not None else ""
    if len(text) > 200:
        text = text[:197] + "..."
    return f"{type(error).__name__}{': ' + text if text else ''}{f' ({where})' if where else ''}"


def load_factory(target: str):
    """`MODULE:FACTORY` -> the callable (FactoryError for anything else)."""
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise FactoryError(f"FACTORY '{target}' is not MODULE:FACTORY (e.g. mypkg.models:make_model)")
    # The module is found from the current directory too, as `python -m` finds it: the
    # `stagec` console script's sys.path starts at its own bin/ directory, so
    # `stagec import examples.tiny_lm:make_model` in a clone would miss examples/.
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        with user_code():
            module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name == module_name or module_name.startswith(f"{e.name}."):  # the module itself, not one it imports
            raise FactoryError(f"FACTORY '{target}': cannot import '{module_name}': {e}") from None
        raise FactoryError(f"FACTORY '{target}': importing '{module_name}' raised {user_exception(e)}") from None
    except BaseException as e:  # noqa: BLE001 - the user's module: a syntax error, an exception at import
        if is_interrupt(e):
            raise
        raise FactoryError(f"FACTORY '{target}': importing '{module_name}' raised {user_exception(e)}") from None
    factory = module
    for part in attr.split("."):  # `MODULE:Class.method` too
        try:
            with user_code():
                factory = getattr(factory, part)
        except AttributeError:
            raise FactoryError(f"FACTORY '{target}': '{module_name}' has no '{attr}'") from None
        except BaseException as e:  # noqa: BLE001 - a user's property or __getattr__
            if is_interrupt(e):
                raise
            raise FactoryError(f"FACTORY '{target}': looking up '{attr}' raised {user_exception(e)}") from None
    if not callable(factory):
        raise FactoryError(f"FACTORY '{target}' is {_describe(factory)}, not callable: give a function or class "
                           f"that returns the nn.Module")
    return factory


def _describe(value) -> str:
    text = repr(value)
    text = text if len(text) <= 40 else text[:37] + "..."
    return f"{type(value).__name__} {text}" if value is not None else "None"


def call_factory(factory, config: ModelConfig | None, target: str | None = None):
    """`FACTORY(config)`, or `FACTORY()` when it takes no argument or there is no
    config; the nn.Module it returns (FactoryError for anything else)."""
    import torch

    name = target or getattr(factory, "__qualname__", repr(factory))
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a builtin or C callable without a signature
        params = {}
    required = [p for p in params.values() if p.default is p.empty
                and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if config is None and required:
        raise FactoryError(f"FACTORY '{name}' takes the model config ({required[0].name}): give --model NAME|config.json")
    try:
        with user_code():
            model = factory(config) if params and config is not None else factory()
    except BaseException as e:  # noqa: BLE001 - the user's code (sys.exit() in it too)
        if is_interrupt(e):
            raise
        raise FactoryError(f"FACTORY '{name}' raised {user_exception(e)}") from None
    if not isinstance(model, torch.nn.Module):
        raise FactoryError(f"FACTORY '{name}' returned {_describe(model)}, not a torch.nn.Module "
                           f"(whose forward(input_ids, labels) returns the loss)")
    return model


def in_dtype(model, dtype: str, target: str):
    """`model.to(dtype).eval()`: the user's module, whose `to` or `eval` may raise."""
    try:
        with user_code():
            return model.to(torch_dtype(dtype)).eval()
    except BaseException as e:  # noqa: BLE001 - the user's nn.Module (an override of to or eval)
        if is_interrupt(e):
            raise
        raise FactoryError(f"FACTORY '{target}': moving its module to {dtype} (module.to, module.eval) raised "
                           f"{user_exception(e)}") from None


def export_error(target: str, error: BaseException) -> FactoryError:
    """torch.export could not run the factory's model: its forward raised or is not
    traceable."""
    return FactoryError(f"FACTORY '{target}': torch.export of its forward(input_ids, labels) failed: "
                        f"{user_exception(error)}")


def example_args(vocab: int, device: str = "meta", batch: int = 2, seq: int = 16):
    import torch

    ids = torch.randint(0, vocab, (batch, seq), device=device) if device != "meta" else torch.zeros(
        (batch, seq), dtype=torch.long, device=device)
    return ids, ids.clone()


def import_forward(model, vocab_size: int, name: str = "torch", config: Mapping[str, int] | None = None,
                   timings: dict[str, float] | None = None, device: str | None = None) -> ModuleOp:
    """Export, import and convert `model` (forward(input_ids, labels) -> loss) into a
    forward program named `name`; `config` gives symbol values that win over inferred ones."""
    import time

    from stagec.frontends.torch.importer import import_module
    from stagec.passes.convert_torch_to_stg import convert_torch_to_stg

    timings = timings if timings is not None else {}
    if device is None:
        p = next(iter(model.parameters()), None)
        device = "meta" if p is not None and p.device.type == "meta" else "cpu"
    args = example_args(vocab_size, device)
    torch_module = import_module(model, args, DYNAMIC, timings=timings)
    t0 = time.perf_counter()
    module = convert_torch_to_stg(torch_module, name, dict(config or {}))
    timings["convert"] = time.perf_counter() - t0
    return module


def config_symbols(config: ModelConfig) -> dict[str, int]:
    """The symbol values the template binds for `config`, so that a static size means
    the same symbol in both (e.g. Mixtral's expert size is FE, not F)."""
    from stagec.frontends.templates import build_model

    module = build_model(config, "f32")
    return config_bindings(module)


def torch_model(config: ModelConfig, frontend_target: str = "hf", dtype: str = "bf16", device: str = "meta"):
    """The nn.Module of `config` on `device`, in `dtype`: transformers' class wrapped in
    `CausalLMLoss` (`frontend_target="hf"`), or what `MODULE:FACTORY` returns, in eval
    mode. On "meta" nothing is allocated; on "cpu" the parameters are the module's own
    initialisation, drawn from torch's global generator (seed it first)."""
    import torch

    if frontend_target == "hf":
        return hf_model(config, dtype, device)
    factory = load_factory(frontend_target)
    with torch.device(device):
        model = call_factory(factory, config, frontend_target)
    return in_dtype(model, dtype, frontend_target)


def initial_model(config: ModelConfig, frontend_target: str = "hf", dtype: str = "f32", *, seed: int = 0):
    """`torch_model` built for real (on the CPU) after `torch.manual_seed(seed)`: the
    module's own initial parameters, the same in every process for the same seed.
    The caller's random state is left as it was."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return torch_model(config, frontend_target, dtype, "cpu")


def import_model(model, config: ModelConfig, frontend_target: str = "hf",
                 timings: dict[str, float] | None = None) -> ModuleOp:
    """The forward program of `model` (a `torch_model` of `config`), its sizes named
    by the template's symbols; a factory's forward that torch.export cannot run is a
    FactoryError."""
    symbols = config_symbols(config)
    if frontend_target == "hf":
        return import_forward(model, config.vocab_size, config.name, symbols, timings)
    from stagec.passes.diagnostics import PassError

    try:
        with user_code():
            return import_forward(model, config.vocab_size, config.name, symbols, timings)
    except PassError:
        raise
    except BaseException as error:  # noqa: BLE001 - the user's forward under torch.export
        if is_interrupt(error):
            raise
        raise export_error(frontend_target, error) from None


def build_torch_model(model_name_or_config: str | ModelConfig | Mapping[str, Any], frontend_target: str = "hf",
                      dtype: str = "bf16", timings: dict[str, float] | None = None) -> ModuleOp:
    """The forward program of a model through the torch frontend: the transformers
    class of a named config / config.json / dict (`frontend_target="hf"`), or
    `MODULE:FACTORY` called with the config, built on the meta device."""
    config = model_name_or_config if isinstance(model_name_or_config, ModelConfig) else load_config(model_name_or_config)
    return import_model(torch_model(config, frontend_target, dtype), config, frontend_target, timings)
