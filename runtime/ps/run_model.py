"""The model a `stagec ps run` trains, taken from the plan's model description.

`stagec ps plan` turns a CONFIG's `model` (a named config or a config.json, HF keys that
override it, the dtype of the moved parameters: `config.ModelSpec`) into Di-PS layers
and their bytes, read from the model template (`config.model_layers`). The clusters
train `model.TinyLlama`. This module makes them one model:

- `run_model_spec` reads the same HF config and gives the TinyLlama of its sizes
  (`model.ModelSpec`), or refuses — one line, file and key first (`PsConfigError`) —
  a model the runtime cannot train: not a Llama (model_type llama or mistral: the
  runtime has no MoE, MLA, Mamba or GPT-2 blocks), parameters moved in a dtype other
  than f32 (the clusters train and push float32), sequences longer than the model's
  positions;
- `check_run_model` proves that what the plan places on the slaves is what the
  clusters push: for every layer of the plan, the bytes of the runtime model's tensors
  under its prefix, grouped as a cluster groups them (`wire.group_by_layer`), equal
  the layer's bytes in the plan; and it refuses a model whose processes would not fit
  in this machine's memory (every role runs here, `launcher.Supervisor`).

Both run before any process starts and build the model on torch's meta device, so a
100B-parameter plan is refused without allocating it. What the runtime does not
take from the HF config: rope_scaling (positions stay within `seq`, 32 by default)
and attention or MLP biases (the Llama template builds none either); `seq` and
`batch` are run settings, not the model's (`tokens_per_step` is the simulation's).
"""

from __future__ import annotations

import os

from stagec.runtime.ps.config import ModelSpec as ModelDescription
from stagec.runtime.ps.config import PsConfigError
from stagec.runtime.ps.model import ModelSpec
from stagec.runtime.ps.plan import Plan

__all__ = ["check_run_model", "describe", "pushed_layer_bytes", "run_model_spec", "run_memory_bytes"]

# What one role holds per byte of the parameters it owns, as multiples of the
# parameters' f32 bytes. A cluster: parameters, gradients, AdamW's two moments, the
# round's base copy and the push's copy (cluster.py) = 6. A slave, for its layers:
# parameters, momentum, the pending update's two, and a pool buffer per cluster
# (slave.py) = 4 + clusters.
_CLUSTER_COPIES = 6
_SLAVE_COPIES = 4


def run_model_spec(model: ModelDescription, source: str, *, seq: int = 32, batch: int = 8,
                   seed: int = 0) -> ModelSpec:
    """The TinyLlama of `model` (a CONFIG's model description); PsConfigError if the
    runtime cannot train it."""
    from stagec.frontends.templates import ConfigError, load_config

    try:
        config = load_config(model.name, **model.overrides)
    except ConfigError as error:
        raise PsConfigError(f"{source}: key 'model': {error}") from None
    except (TypeError, ValueError) as error:
        raise PsConfigError(f"{source}: key 'model.overrides': {error}") from None
    if config.family != "llama":
        raise PsConfigError(f"{source}: key 'model': '{config.name}' is a {config.model_type} model, which the PS "
                            f"runtime cannot train; `stagec ps run` trains Llama models (model_type llama or "
                            f"mistral); `stagec ps plan` still plans and simulates this one")
    if model.dtype != "f32":
        raise PsConfigError(f"{source}: key 'model.dtype': the plan moves {model.dtype} parameters, the PS runtime "
                            f"trains and pushes f32; give dtype: f32 to run it")
    if config.max_position_embeddings and seq > config.max_position_embeddings:
        raise PsConfigError(f"{source}: key 'model': sequences of {seq} tokens exceed the model's "
                            f"max_position_embeddings {config.max_position_embeddings}; give a shorter run.model.seq")
    return ModelSpec(vocab=config.vocab_size, hidden=config.hidden_size, intermediate=config.intermediate_size,
                     layers=config.num_hidden_layers, heads=config.num_attention_heads,
                     kv_heads=config.num_key_value_heads, head_dim=config.head_dim,
                     tie_embeddings=config.tie_word_embeddings, rope_theta=config.rope_theta,
                     norm_eps=config.rms_norm_eps, seq=seq, batch=batch, seed=seed)


def describe(spec: ModelSpec) -> str:
    return (f"Llama vocab {spec.vocab}, hidden {spec.hidden}, intermediate {spec.intermediate}, {spec.layers} layers, "
            f"{spec.heads} heads of {spec.dim}, {spec.kv_heads} KV heads{', tied head' if spec.tie_embeddings else ''}")


def _meta_parameters(spec: ModelSpec) -> dict:
    import torch

    from stagec.runtime.ps.model import TinyLlama

    with torch.device("meta"):
        return dict(TinyLlama(spec).named_parameters())


def pushed_layer_bytes(spec: ModelSpec, plan: Plan) -> tuple[int, ...]:
    """The bytes a cluster of `spec` pushes for each layer of `plan` (its tensors
    grouped by the plan's prefixes as cluster.py groups them); WireError if a
    parameter belongs to no layer or a layer has no parameter."""
    from stagec.runtime.ps.wire import group_by_layer

    groups = group_by_layer(_meta_parameters(spec), plan.layers)
    return tuple(sum(t.numel() * t.element_size() for t in group.values()) for group in groups)


def run_memory_bytes(plan: Plan, model_bytes: int) -> int:
    """What the run's processes hold in parameters and their copies, all roles
    together (the constants above): every cluster the whole model, the slaves the
    whole model once between them."""
    clusters = len(plan.clusters)
    return model_bytes * (clusters * _CLUSTER_COPIES + _SLAVE_COPIES + clusters)


def _physical_memory() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_run_model(plan: Plan, spec: ModelSpec, source: str, memory: int | None = None) -> None:
    """PsConfigError unless the clusters of `spec` push exactly the plan's layers and
    bytes, and the run fits in `memory` bytes (default: this machine's)."""
    from stagec.runtime.ps.wire import WireError

    sizes = (spec.vocab, spec.hidden, spec.intermediate, spec.layers, spec.heads, spec.kv_heads, spec.seq, spec.batch)
    if any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in sizes) or spec.heads % spec.kv_heads \
            or not isinstance(spec.head_dim, int) or spec.dim < 2 or spec.dim % 2:
        fields = ", ".join(f"{k} {v!r}" for k, v in spec.to_json().items())
        raise PsConfigError(f"{source}: the run's model cannot be built ({fields}): its sizes must be positive "
                            f"integers, heads a multiple of kv_heads, the head size even (rotary)")
    hint = "run the CONFIG the plan was made from (a ps program names its model but not its overrides)"
    try:
        pushed = pushed_layer_bytes(spec, plan)
    except WireError as error:
        raise PsConfigError(f"{source}: the run's model ({describe(spec)}) is not the plan's: {error}; {hint}") \
            from None
    for layer, nbytes in zip(plan.layers, pushed):
        if layer.nbytes != nbytes:
            raise PsConfigError(f"{source}: layer '{layer.prefix}': the plan moves {layer.nbytes} bytes, the run's "
                                f"model ({describe(spec)}) pushes {nbytes}; {hint}")
    need = run_memory_bytes(plan, sum(pushed))
    have = _physical_memory() if memory is None else memory
    if need > have:
        raise PsConfigError(f"{source}: key 'model': {sum(pushed) / 4:.3g} parameters; {len(plan.clusters)} clusters "
                            f"and {plan.num_slaves} slaves on this machine would hold about {need / 2**30:.3g} GiB, "
                            f"it has {have / 2**30:.3g} GiB; `stagec ps run` runs every role here: give a smaller "
                            f"model (`stagec ps plan` plans and simulates this one)")
