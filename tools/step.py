"""The step a command builds: a training iteration or an inference step (docs/inference.md).

`stagec stats`, `stagec trace` (and `stagec simulate`) take `--phase train|prefill|decode`
and `--context` from `add_phase_arguments`, build the module with `step_module` and bind
its symbols with `step_bindings`; all three read the same flags the same way.

- train: stagec_stats.training_step (stg-autodiff, strategy, pipeline, scheduling passes).
- prefill: the template's @prefill over `--seq` prompt tokens per sequence, writing a KV
  cache sized for `--context` positions (default: --seq);
- decode: the template's @decode of one new token per sequence over a KV cache of
  `--context` positions (default: --seq).

An inference step has no micro-batches, backward or optimizer: B is the global batch
(`--batch`, default --micro-batch per data-parallel replica), split over the
data-parallel axes (dp, fsdp, ep; the paper's DeepSeek-R1 study runs the experts over
ep and everything else data-parallel over the same ranks, stage.md §VI-C), then
stg-shard, stg-match-collectives and the scheduling passes as for training.

`build_inference_step(model, phase, batch, seq, context, strategy)` is the same thing
for a caller without argparse (the simulator's Table IX study): the module and its
bindings.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from xdsl.dialects.builtin import ModuleOp

from stagec.tools.errors import UsageError, positive_int

PHASES = ("train", "prefill", "decode")
INFERENCE_PHASES = ("prefill", "decode")


def add_phase_arguments(parser: argparse.ArgumentParser) -> None:
    """--phase and --context."""
    group = parser.add_argument_group("inference (docs/inference.md)")
    group.add_argument("--phase", choices=PHASES, default="train",
                       help="the step to build: a training iteration, or an inference step: prefill (--seq prompt "
                            "tokens per sequence, writing the KV cache) or decode (one new token per sequence over "
                            "a KV cache of --context positions) (default: %(default)s)")
    group.add_argument("--context", type=positive_int, metavar="T",
                       help="KV cache positions per sequence, T in the IR: the context a decode step attends over, "
                            "the cache a prefill fills (default: --seq)")


def is_inference(args: argparse.Namespace) -> bool:
    return getattr(args, "phase", "train") in INFERENCE_PHASES


def data_replicas(strategy: Mapping[str, int | bool]) -> int:
    """Ranks the batch is split over: the data-parallel axes dp, fsdp and ep."""
    replicas = 1
    for axis in ("dp", "fsdp", "ep"):
        replicas *= int(strategy.get(axis, 1))
    return replicas


def inference_bindings(phase: str, batch: int, seq: int, context: int | None, replicas: int) -> dict[str, int]:
    """B, S, T (and M = 1) of an inference step; a UsageError for what cannot run."""
    if phase not in INFERENCE_PHASES:
        raise UsageError(f"--phase {phase}: inference phases are {', '.join(INFERENCE_PHASES)}")
    context = seq if context is None else context
    if batch % replicas:
        raise UsageError(f"--batch {batch} does not divide over the {replicas} data-parallel ranks (dp x fsdp x ep): "
                         "each rank decodes whole sequences")
    if phase == "prefill":
        if seq < 2:
            raise UsageError(f"--phase prefill needs a prompt of at least 2 tokens, not --seq {seq}")
        if context < seq:
            raise UsageError(f"--context {context} is shorter than the prompt (--seq {seq}): the cache holds every "
                             "prompt position")
        return {"B": batch, "S": seq, "T": context, "M": 1}
    return {"B": batch, "S": 1, "T": context, "M": 1}


def _check_strategy(phase: str, strategy: Mapping[str, int | bool]) -> None:
    for option, why in (("pp", "pipeline stages"), ("cp", "context parallelism"), ("sp", "sequence parallelism"),
                        ("zero", "ZeRO (there are no optimizer states)")):
        if strategy.get(option) not in (None, 0, 1, False):
            raise UsageError(f"--{option} is not modelled for --phase {phase}: {why} of inference steps; "
                             "use dp, fsdp, ep and tp")


def inference_passes(strategy: Mapping[str, int | bool], *, fuse_gemms: bool = True) -> list:
    """stg-shard and stg-match-collectives for the strategy, then the scheduling passes."""
    from stagec.passes.schedule.pipeline import scheduling_passes
    from stagec.passes.stg_match_collectives import StgMatchCollectives
    from stagec.passes.stg_shard import StgShard

    options = {axis: size for axis, size in strategy.items() if size not in (1, False, 0)}
    passes = [StgShard(**options), StgMatchCollectives()] if options else []
    return passes + scheduling_passes(fuse_gemms=fuse_gemms)


def build_inference_step(model, phase: str, batch: int, seq: int, context: int | None = None,
                         strategy: Mapping[str, int | bool] | None = None, *, dtype: str = "bf16",
                         fuse_gemms: bool = True) -> tuple[ModuleOp, dict[str, int]]:
    """The sharded, scheduled @prefill or @decode of `model` (a named config, a config.json
    path, a dict or a ModelConfig) and the bindings its symbols take: `batch` sequences
    in all (split over dp x fsdp x ep), `seq` prompt tokens (prefill) and a KV cache of
    `context` positions (default `seq`). `strategy` is stg-shard's options, e.g.
    {"ep": 36} for the DeepSeek-R1 study of stage.md Table IX. Bad input: UsageError."""
    from stagec.dialects import make_context
    from stagec.frontends.templates import ConfigError, build_model, load_config
    from stagec.passes.diagnostics import PassError

    strategy = dict(strategy or {})
    _check_strategy(phase, strategy)
    bindings = inference_bindings(phase, batch, seq, context, data_replicas(strategy))
    try:
        module = build_model(model if not isinstance(model, str) else load_config(model), dtype, phase)
    except (ConfigError, ImportError) as error:
        raise UsageError(str(error)) from None
    for step in inference_passes(strategy, fuse_gemms=fuse_gemms):
        try:
            step.apply(make_context(), module)
        except PassError as error:
            raise UsageError(f"{step.name}: {error}") from None
    return module, bindings


# -- the commands' arguments -----------------------------------------------------------


def step_bindings(args: argparse.Namespace, micro_batches: int) -> dict[str, int]:
    """The bindings of the step `args` describe: training's B (a micro-batch of every
    replica), S and M, or an inference step's B, S, T."""
    replicas = args.dp * args.fsdp * args.ep
    if is_inference(args):
        batch = args.batch if args.batch is not None else args.micro_batch * replicas
        return inference_bindings(args.phase, batch, args.seq, args.context, replicas)
    return {"B": args.micro_batch * replicas, "S": args.seq, "M": micro_batches}


def micro_batches_for(args: argparse.Namespace) -> int:
    """Training: stagec_stats.micro_batches_of; an inference step has one batch."""
    from stagec.tools.stagec_stats import micro_batches_of

    if not is_inference(args):
        if getattr(args, "context", None) is not None:
            raise UsageError("--context sets the KV cache of --phase prefill or decode; a training step has none")
        return micro_batches_of(args)
    if getattr(args, "micro_batches", None) is not None:
        raise UsageError(f"--micro-batches: an inference step (--phase {args.phase}) runs its batch at once")
    if getattr(args, "recompute", False):
        raise UsageError(f"--recompute: an inference step (--phase {args.phase}) has no backward")
    _check_strategy(args.phase, {a: getattr(args, a, 1) for a in ("pp", "cp", "sp", "zero")})
    step_bindings(args, 1)  # checks the sizes
    return 1


def step_module(args: argparse.Namespace, micro_batches: int) -> ModuleOp:
    """The module of the step `args` describe (training_step for --phase train)."""
    from stagec.tools.stagec_stats import strategy_options, training_step

    if not is_inference(args):
        return training_step(args, micro_batches)
    if args.frontend != "template":
        raise UsageError(f"--phase {args.phase} builds the model from its template; --frontend torch imports "
                         "training programs only")
    batch = step_bindings(args, 1)["B"]
    module, _ = build_inference_step(args.model, args.phase, batch, args.seq, args.context,
                                     strategy_options(args), dtype=args.dtype,
                                     fuse_gemms=not getattr(args, "no_gemm_fusion", False))
    return module
