"""The model a `stagec ps run` trains, taken from the plan's model description.

`stagec ps plan` turns a CONFIG's `model` (a named config or a config.json, HF keys that
override it, the dtype of the moved parameters: `config.ModelSpec`) into Di-PS layers
and their bytes, read from the model template (`config.model_layers`), and records all
three in the plan (`Plan.model`, `model_overrides`, `model_dtype`), so the ps program it
prints rebuilds the same model on its own (`plan_description`). The clusters train
`model.TinyLlama`. This module makes them one model:

- `run_model_spec` reads the same HF config and gives the TinyLlama of its sizes
  (`model.ModelSpec`), or refuses — one line, file and key first (`PsConfigError`) —
  a model the runtime cannot train: not a Llama (model_type llama or mistral: the
  runtime has no MoE, MLA, Mamba or GPT-2 blocks), parameters moved in a dtype other
  than f32 (the clusters train and push float32), sequences longer than the model's
  positions, a rope_scaling whose rope_type is not one `model.rope_inv_freq` computes
  (default, dynamic, linear, llama3: Llama 3.1 and 3.2's scaling, as transformers
  computes them);
- `check_run_model` proves that what the plan places on the slaves is what the
  clusters push: for every layer of the plan, the bytes of the runtime model's tensors
  under its prefix, grouped as a cluster groups them (`wire.group_by_layer`), equal
  the layer's bytes in the plan; and it refuses a model whose processes would not fit
  in this machine's memory (every role runs here, `launcher.Supervisor`).

Both run before any process starts and build the model on torch's meta device, so a
100B-parameter plan is refused without allocating it. Taken from the HF config: the
sizes, a tied head, rope_theta, rms_norm_eps and rope_scaling (or transformers 5's
rope_parameters). Not taken: attention or MLP biases (the Llama template builds none
either); `seq` and `batch` are run settings, not the model's (`tokens_per_step` is
the simulation's). Errors name the part of the user's file they concern: a CONFIG's
key (`key 'model.overrides'`), or the ps program's model (`'ps.program' overrides`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

from stagec.runtime.ps.config import ModelSpec as ModelDescription
from stagec.runtime.ps.config import PsConfigError
from stagec.runtime.ps.model import ModelSpec
from stagec.runtime.ps.plan import Plan

__all__ = ["check_run_model", "describe", "plan_description", "pushed_layer_bytes", "run_model_spec",
           "run_memory_bytes"]

# What one role holds per byte of the parameters it owns, as multiples of the
# parameters' f32 bytes. A cluster: parameters, gradients, AdamW's two moments, the
# round's base copy and the push's copy (cluster.py) = 6. A slave, for its layers:
# parameters, momentum, the pending update's two, and a pool buffer per cluster
# (slave.py) = 4 + clusters.
_CLUSTER_COPIES = 6
_SLAVE_COPIES = 4


def plan_description(plan: Plan) -> ModelDescription:
    """The model description a plan records (a ps program's `model`, `dtype` and
    `overrides`): the CONFIG's, for a plan made from one."""
    return ModelDescription(plan.model, dict(plan.model_overrides), plan.model_dtype)


def _key(source: str, key: str) -> str:
    """How an error names `key` of a CONFIG's model ("model", "model.overrides", ...)
    in `source`: the key itself in a CONFIG, the ps.program's field in a ps program."""
    if not source.endswith(".mlir"):
        return f"key '{key}'"
    return f"'ps.program' {key.split('.', 1)[1] if '.' in key else key}"


def _rope_scaling(config, overrides: Mapping) -> tuple[object, float]:
    """The HF config's rope_scaling and rope_theta. transformers 5 writes both into
    rope_parameters instead: read it where the overrides give it (and not
    rope_scaling), or where the config has no rope_scaling; its rope_theta counts where
    the config has no rope_theta."""
    raw = config.raw
    parameters = raw.get("rope_parameters")
    given = "rope_parameters" in overrides and "rope_scaling" not in overrides
    if isinstance(parameters, Mapping) and (given or raw.get("rope_scaling") is None):
        theta = parameters.get("rope_theta") if raw.get("rope_theta") is None else None
        if isinstance(theta, (int, float)) and not isinstance(theta, bool) and math.isfinite(theta) and theta > 0:
            rope_theta = float(theta)
        else:
            rope_theta = config.rope_theta
        return {k: v for k, v in parameters.items() if k != "rope_theta"}, rope_theta
    return raw.get("rope_scaling"), config.rope_theta


def run_model_spec(model: ModelDescription, source: str, *, seq: int = 32, batch: int = 8,
                   seed: int = 0) -> ModelSpec:
    """The TinyLlama of `model` (a CONFIG's model description, or the one a plan
    records: `plan_description`); PsConfigError if the runtime cannot train it.
    `source` is the user's file (a CONFIG, a ps program's .mlir, a plan's JSON)."""
    from stagec.frontends.templates import ConfigError, load_config
    from stagec.runtime.ps.model import rope_scaling_problem

    try:
        config = load_config(model.name, **model.overrides)
    except ConfigError as error:
        raise PsConfigError(f"{source}: {_key(source, 'model')}: {error}") from None
    except (TypeError, ValueError) as error:
        raise PsConfigError(f"{source}: {_key(source, 'model.overrides')}: {error}") from None
    if config.family != "llama":
        raise PsConfigError(f"{source}: {_key(source, 'model')}: '{config.name}' is a {config.model_type} model, "
                            f"which the PS runtime cannot train; `stagec ps run` trains Llama models (model_type "
                            f"llama or mistral); `stagec ps plan` still plans and simulates this one")
    if model.dtype != "f32":
        raise PsConfigError(f"{source}: {_key(source, 'model.dtype')}: the plan moves {model.dtype} parameters, the "
                            f"PS runtime trains and pushes f32; plan it with dtype: f32 to run it")
    if config.max_position_embeddings and seq > config.max_position_embeddings:
        raise PsConfigError(f"{source}: {_key(source, 'model')}: sequences of {seq} tokens exceed the model's "
                            f"max_position_embeddings {config.max_position_embeddings}; give a shorter run.model.seq")
    scaling, theta = _rope_scaling(config, model.overrides)
    problem = rope_scaling_problem(scaling)
    if problem:
        given = next((k for k in ("rope_scaling", "rope_parameters") if k in model.overrides), None)
        raise PsConfigError(f"{source}: {_key(source, f'model.overrides.{given}' if given else 'model')}: "
                            f"'{config.name}': {problem}")
    return ModelSpec(vocab=config.vocab_size, hidden=config.hidden_size, intermediate=config.intermediate_size,
                     layers=config.num_hidden_layers, heads=config.num_attention_heads,
                     kv_heads=config.num_key_value_heads, head_dim=config.head_dim,
                     tie_embeddings=config.tie_word_embeddings, rope_theta=theta,
                     norm_eps=config.rms_norm_eps, rope_scaling=_plain(scaling), seq=seq, batch=batch, seed=seed)


def _plain(value):
    """A JSON value as plain dicts and lists (a deployment.json writes it)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


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
    from stagec.runtime.ps.model import rope_scaling_problem
    from stagec.runtime.ps.wire import WireError

    sizes = (spec.vocab, spec.hidden, spec.intermediate, spec.layers, spec.heads, spec.kv_heads, spec.seq, spec.batch)
    if any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in sizes) or spec.heads % spec.kv_heads \
            or not isinstance(spec.head_dim, int) or spec.dim < 2 or spec.dim % 2:
        fields = ", ".join(f"{k} {v!r}" for k, v in spec.to_json().items())
        raise PsConfigError(f"{source}: the run's model cannot be built ({fields}): its sizes must be positive "
                            f"integers, heads a multiple of kv_heads, the head size even (rotary)")
    problem = rope_scaling_problem(spec.rope_scaling)
    if problem:  # a run.model given as JSON; run_model_spec has checked the plan's own
        raise PsConfigError(f"{source}: the run's model cannot be built: {problem}")
    hint = ("the plan's layers are not this model's: plan it again from its model (`stagec ps plan CONFIG`), "
            "or give run.model the sizes it was planned with")
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
        raise PsConfigError(f"{source}: {_key(source, 'model')}: {sum(pushed) / 4:.3g} parameters; "
                            f"{len(plan.clusters)} clusters "
                            f"and {plan.num_slaves} slaves on this machine would hold about {need / 2**30:.3g} GiB, "
                            f"it has {have / 2**30:.3g} GiB; `stagec ps run` runs every role here: give a smaller "
                            f"model (`stagec ps plan` plans and simulates this one)")
