"""`stagec stats`: parameters, FLOPs and peak memory of one training iteration, per rank.

It only assembles the pipeline - model template -> stg-autodiff (micro-batches =
batch / micro-batch) -> strategy and pipeline passes -> the scheduling passes (the
form every backend reads; `training_passes`, which `stagec trace` runs too) ->
accounting with B = micro-batch, S = seq - and prints what passes/analysis/accounting.py
reports. Register it in a CLI with
`add_parser(subcommands)` and call `run(args)` for the parsed arguments; `main()`
runs it on its own (`python -m stagec.tools.stagec_stats`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from stagec.tools.errors import UsageError
from stagec.tools.job_options import (  # noqa: F401 (shared)
    DATA_AXES,
    DTYPES,
    OPTIMIZERS,
    STRATEGY_AXES,
    add_frontend_arguments,
    add_job_arguments,
)
from stagec.tools.step import is_inference, micro_batches_for, step_bindings, step_module

HELP = """\
Account one training iteration of a model: its parameters, FLOPs by category
(GeMM, attention, elementwise, other) and per token, and the peak device memory of
each rank, broken down into weights, gradients, optimizer states, activations and
communication buffers, from tensor lifetimes over the step (docs/memory.md).

The model is a named config or a Hugging Face config.json; stg-autodiff turns it
into a training step with batch / micro-batch micro-batches of `--micro-batch`
sequences of `--seq` tokens. Mixed precision (bf16) keeps fp32 gradients and master
weights. Units: parameters in B (1e9), FLOPs in SI units, memory in GiB (2^30 bytes).

examples:
  stagec stats --model llama3-8b --seq 4096
  stagec stats --model llama3-70b --batch 32 --micro-batch 4 --seq 4096 --recompute
  stagec stats --model examples/tiny.json --optimizer sgd --dtype f32 --json
  stagec stats --model llama3-8b --timeline-png mem.png --timeline-json mem.json

Parallel strategies: --dp, --fsdp, --tp (with --sp for Megatron sequence
parallelism), --cp and --ep run stg-shard and stg-match-collectives; the report is
then one rank's, with its communication by collective type. --micro-batch is per
data-parallel replica (Megatron's micro-batch size); --batch is the global batch.
  stagec stats --model gpt3-5b --tp 8 --sp --batch 8
  stagec stats --model llama3-70b --dp 2 --tp 8 --fsdp 2 --batch 64 --seq 4096
--pp runs stg-pipeline after them (--schedule 1f1b, gpipe, or interleaved-1f1b with
--virtual-stages V): the report has one rank class per pipeline stage, each stage's
peak with its in-flight micro-batches.
  stagec stats --model gpt3-5b --pp 8 --batch 64 --seq 2048
  stagec stats --model llama3-70b --tp 4 --pp 2 --batch 16 --seq 4096 --schedule gpipe"""




def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_job_arguments(parser)
    output = parser.add_argument_group("output")
    output.add_argument("--json", action="store_true", help="print the report as JSON instead of tables")
    output.add_argument("--timeline-png", metavar="FILE", help="plot the memory timeline (stacked by kind, phases shaded)")
    output.add_argument("--timeline-json", metavar="FILE", help="write the memory timeline: one entry per op executed")


def add_parser(subcommands) -> argparse.ArgumentParser:
    """Add `stats` to an argparse subcommand set (`parser.add_subparsers()`)."""
    parser = subcommands.add_parser(
        "stats",
        help="parameters, FLOPs and peak memory per rank of one training iteration",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    return parser


# -- the pipeline ------------------------------------------------------------------------


# Micro-batches per replica beyond which a job is refused: the step unrolls each one,
# and time and memory grow with them (10,000 of examples/tiny.json: 9 s and 0.7 GB in
# `stagec stats`; 100,000: 70 s and 4.7 GB; 1,000,000 ran out of memory).
MAX_MICRO_BATCHES = 10_000


def check_micro_batches(micro_batches: int, given: str) -> None:
    """A usage error for more than MAX_MICRO_BATCHES per replica; `given` is the option
    that made them, as the user wrote it."""
    if micro_batches > MAX_MICRO_BATCHES:
        raise UsageError(
            f"{given} is {micro_batches:,} micro-batches per replica: stagec unrolls every micro-batch of the "
            f"iteration, and more than {MAX_MICRO_BATCHES:,} take minutes and gigabytes to build (100,000 of the "
            "smallest model: 70 s and 4.7 GB); give fewer: a larger --micro-batch, or a smaller --batch or --micro-batches")


def _check_sequence_split(args: argparse.Namespace) -> None:
    """--cp, and --tp with --sp, cut each sequence into equal parts: --seq must divide.
    Checked here, in the options' words; the program would name its own symbols (a
    local dim [B, S/tp_kv/tp_q, H] where tp is a multiple of the key/value heads)."""
    factors = [(f"--cp {args.cp}", args.cp)] if args.cp > 1 else []
    if args.sp:
        factors.append((f"--tp {args.tp} (--sp)", args.tp))
    parts = 1
    for _, n in factors:
        parts *= n
    if parts > 1 and args.seq % parts:
        named = " x ".join(f for f, _ in factors) + (f" = {parts}" if len(factors) > 1 else "")
        raise UsageError(f"--seq {args.seq} is not a multiple of {named}: each sequence is cut into {parts} equal "
                         f"parts, one per rank; give a --seq that {parts} divides (e.g. {args.seq + parts - args.seq % parts})")


def micro_batches_of(args: argparse.Namespace) -> int:
    """The number of micro-batches per replica that --batch (or --micro-batches, where
    the command has it), --micro-batch and the data-parallel axes give; a usage error
    for what cannot run."""
    if args.sp and args.tp == 1:
        raise UsageError("--sp splits the sequence over tp: give --tp N with N > 1")
    _check_sequence_split(args)
    replicas = 1
    for axis in DATA_AXES:
        replicas *= getattr(args, axis)
    step = args.micro_batch * replicas
    given = getattr(args, "micro_batches", None)
    if given is not None:
        if args.batch is not None and args.batch != given * step:
            axes = " x ".join(f"{a} {getattr(args, a)}" for a in DATA_AXES)
            raise UsageError(f"--batch {args.batch} and --micro-batches {given} disagree: --micro-batches {given} x "
                             f"--micro-batch {args.micro_batch} x {replicas} data-parallel replica(s) ({axes}) = "
                             f"{given * step} sequences; give one of the two")
        args.batch = given * step
    batch = step if args.batch is None else args.batch
    if batch % step:
        raise UsageError(
            f"--batch {batch} is not a multiple of --micro-batch {args.micro_batch} x {replicas} data-parallel "
            "replicas: the global batch is a whole number of micro-batches on every replica"
        )
    micro_batches = batch // step
    check_micro_batches(micro_batches, f"--micro-batches {given}" if given is not None else
                        f"--batch {batch} (--micro-batch {args.micro_batch} x {replicas} data-parallel replica(s) "
                        "a micro-batch)")
    iterations = getattr(args, "iterations", 1)
    if iterations > 1 and micro_batches * iterations > MAX_MICRO_BATCHES:
        # the iterations are unrolled too (traces and simulation chain them)
        raise UsageError(
            f"--iterations {iterations} x {micro_batches:,} micro-batch(es) per replica are "
            f"{iterations * micro_batches:,} micro-batch steps: stagec unrolls every one, and more than "
            f"{MAX_MICRO_BATCHES:,} take minutes and gigabytes to build; give fewer --iterations (one iteration "
            "is the steady state)")
    if args.pp > 1 and micro_batches < 2:
        raise UsageError(f"--pp {args.pp} needs at least 2 micro-batches per replica; --batch {batch} gives {micro_batches}")
    virtual = getattr(args, "virtual_stages", 1)
    if virtual > 1 and args.schedule != "interleaved-1f1b":
        raise UsageError(f"--virtual-stages {virtual} needs --schedule interleaved-1f1b (--schedule {args.schedule} "
                         "runs one model chunk per pipeline rank)")
    if args.schedule == "interleaved-1f1b" and args.pp > 1 and micro_batches % args.pp:
        raise UsageError(f"--schedule interleaved-1f1b needs a multiple of --pp {args.pp} micro-batches per replica "
                         f"(as Megatron-LM); the job has {micro_batches}")
    return micro_batches


def training_passes(args: argparse.Namespace, micro_batches: int) -> list:
    """The pass pipeline every command runs on the model for its flags: stg-autodiff,
    then stg-shard and stg-match-collectives for the strategy flags, stg-pipeline with
    --pp, then the scheduling passes (docs/scheduled-ir.md; --no-gemm-fusion and
    --bucket-mb where the command has them)."""
    from stagec.passes.schedule.pipeline import scheduling_passes
    from stagec.passes.stg_autodiff import StgAutodiff
    from stagec.passes.stg_bucket_gradients import DEFAULT_BUCKET_MB
    from stagec.passes.stg_match_collectives import StgMatchCollectives
    from stagec.passes.stg_pipeline import StgPipeline
    from stagec.passes.stg_shard import StgShard

    passes = [StgAutodiff(optimizer=args.optimizer, micro_batches=micro_batches, recompute=args.recompute)]
    if strategy := strategy_options(args):
        passes += [StgShard(**strategy), StgMatchCollectives()]
    if args.pp > 1:
        passes.append(StgPipeline(pp=args.pp, schedule=args.schedule, seq_len=args.seq,
                                  virtual_stages=getattr(args, "virtual_stages", 1)))
    return passes + scheduling_passes(fuse_gemms=not getattr(args, "no_gemm_fusion", False),
                                      bucket_mb=getattr(args, "bucket_mb", DEFAULT_BUCKET_MB))


def training_step(args: argparse.Namespace, micro_batches: int):
    """The model (--model through the template or, with --frontend torch, the torch
    frontend) through training_passes; bad input is a UsageError naming the pass."""
    from stagec.dialects import make_context
    from stagec.frontends.templates import ConfigError, build_model, load_config
    from stagec.passes.diagnostics import PassError

    from stagec.tools.progress import status

    with status(f"building {args.model}", getattr(args, "quiet", False)) as update:
        try:
            if args.frontend == "torch":
                from stagec.frontends.torch.models import build_torch_model

                update(f"importing {args.model} from torch (torch.export, torch-mlir)")
                module = build_torch_model(args.model, args.torch_factory or "hf", args.dtype)
            else:
                module = build_model(load_config(args.model), args.dtype)
        except (ConfigError, ImportError) as error:
            raise UsageError(str(error)) from None
        for step in training_passes(args, micro_batches):
            update(f"compiling {args.model}: {step.name}")
            try:
                step.apply(make_context(), module)
            except PassError as error:
                raise UsageError(f"{step.name}: {error}") from None
    return module


def strategy_options(args: argparse.Namespace) -> dict:
    """stg-shard's options for the flags given: {"dp": 2, "tp": 8, "sp": True}."""
    options: dict = {a: getattr(args, a) for a in STRATEGY_AXES if a != "pp" and getattr(args, a) > 1}
    if args.sp:
        options["sp"] = True
    if args.zero:
        options["zero"] = args.zero
    return options


def _describe(strategy: dict) -> str:
    return " ".join(f"{k}={'true' if v is True else v}" for k, v in strategy.items()) or "one rank"


PLOT_FORMATS = ("png", "pdf", "svg")


def _check_plot_path(path: str | None) -> None:
    """--timeline-png: a format matplotlib writes, named by its extension (checked
    before any work, so a typo costs nothing)."""
    if path is None:
        return
    extension = os.path.splitext(path)[1].lower().removeprefix(".")
    if extension not in PLOT_FORMATS:
        raise UsageError(f"--timeline-png '{path}': the plot's format comes from its extension; name it FILE.png "
                         f"(or .{', .'.join(PLOT_FORMATS[1:])})")


def run(args: argparse.Namespace) -> None:
    from stagec.passes.analysis.accounting import AccountingError, account

    _check_plot_path(args.timeline_png)
    from stagec.tools.output import require_regular_file

    require_regular_file("--timeline-png", args.timeline_png)
    if args.profile:
        # stats reports no times, which is all a profile changes; a file that is not
        # one is still an error rather than silently taken
        from stagec.tools.stagec_trace import _cost_model

        _cost_model(args)
    micro_batches = micro_batches_for(args)
    strategy = strategy_options(args)
    module = step_module(args, micro_batches)
    replicas = args.dp * args.fsdp * args.ep
    bindings = step_bindings(args, micro_batches)
    try:
        result = account(module, bindings)
        if args.no_optimizer:
            result = result.without_phase("optimizer")
    except AccountingError as error:
        raise UsageError(str(error)) from None
    if is_inference(args):
        _print_inference(result, args, strategy, bindings)
        return
    setup = {
        "strategy": _describe(strategy | ({"pp": args.pp, "schedule": args.schedule} if args.pp > 1 else {})
                              | ({"virtual_stages": args.virtual_stages} if args.virtual_stages > 1 else {})),
        "batch": micro_batches * args.micro_batch * replicas,
        "micro_batch": args.micro_batch,
        "micro_batches": micro_batches,
        "seq": args.seq,
        "dtype": args.dtype,
        "optimizer": args.optimizer + (" (compute left out)" if args.no_optimizer else ""),
        "recompute": args.recompute,
    }
    title = result.model or args.model
    reserved = _reserved(result, args.hardware)
    _write_timelines(result, args, title)
    if args.json:
        doc = result.to_json()
        doc["model"] = title
        doc["setup"] = setup
        doc["hardware"] = args.hardware
        for entry, peak in zip(doc["rank_classes"], reserved):
            entry["reserved_memory"] = peak.to_json()
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_tables(result, title, setup, reserved)


def _reserved(result, hardware: str) -> list:
    """Each rank class's reserved peak (passes/analysis/reserved.py) on `hardware`."""
    from stagec.passes.analysis.reserved import reserved_memory
    from stagec.runtime.cost.hardware_description import HardwareError, load_hardware

    try:
        described = load_hardware(hardware)
    except HardwareError as error:
        raise UsageError(f"--hardware: {error}") from None
    return [reserved_memory(rc.memory, described) for rc in result.rank_classes]


def _timeline_path(path: str, index: int, count: int) -> str:
    if count == 1:
        return path
    stem, ext = os.path.splitext(path)
    return f"{stem}.class{index}{ext}"


def _write_timelines(result, args: argparse.Namespace, title: str) -> None:
    from stagec.passes.analysis.memory import plot_timeline
    from stagec.tools.output import output_stream

    classes = result.rank_classes
    for i, rc in enumerate(classes):
        timeline = rc.memory.timeline
        if args.timeline_json:
            with output_stream(_timeline_path(args.timeline_json, i, len(classes))) as stream:
                doc = {"model": title, "ranks": list(rc.ranks), **timeline.to_json()}
                json.dump(doc, stream, separators=(",", ":"))
                stream.write("\n")
            if args.timeline_json != "-":
                print(f"wrote {_timeline_path(args.timeline_json, i, len(classes))}: the memory timeline of ranks "
                      f"{_ranks(rc.ranks)}", file=sys.stderr)
        if args.timeline_png:
            path = _timeline_path(args.timeline_png, i, len(classes))
            try:
                plot_timeline(timeline, path, f"{title}: memory per rank over one step (ranks {_ranks(rc.ranks)})")
            except OSError as error:
                raise UsageError(f"cannot write the plot '{path}': {error.strerror or error}") from None
            print(f"wrote {path}: the memory timeline plot of ranks {_ranks(rc.ranks)}", file=sys.stderr)


def _print_inference(result, args: argparse.Namespace, strategy: dict, bindings: dict) -> None:
    """An inference step's report: the tokens it processes and its KV cache beside the
    training report's FLOPs and memory (the table of _print_tables)."""
    setup = {
        "phase": args.phase,
        "strategy": _describe(strategy),
        "batch": bindings["B"],
        "seq": bindings["S"],
        "context": bindings["T"],
        "tokens": result.tokens,
        "kv_cache_bytes_per_rank": {
            _ranks(rc.ranks): rc.memory.persistent.get("kv_cache", 0) for rc in result.rank_classes
        },
        "dtype": args.dtype,
    }
    title = result.model or args.model
    _write_timelines(result, args, title)
    if args.json:
        doc = result.to_json()
        doc["model"] = title
        doc["setup"] = setup
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    from rich.console import Console

    Console(file=sys.stdout, soft_wrap=True).print(
        f"{args.phase} step: {setup['batch']} sequence(s), {setup['seq']} new token(s) each = "
        f"{setup['tokens']:,} tokens processed, over a KV cache of {setup['context']} positions; "
        f"KV cache per rank: " + ", ".join(f"ranks {r}: {human_bytes(b)}" for r, b in setup["kv_cache_bytes_per_rank"].items())
    )
    _print_tables(result, title, {**setup, "micro_batches": 1, "micro_batch": setup["batch"],
                                  "optimizer": "no optimizer", "recompute": False})


# -- human units ----------------------------------------------------------------------------


def human_count(n: float) -> str:
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:g}"


def human_flops(n: float) -> str:
    for unit, scale in (("EFLOP", 1e18), ("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:g} FLOP"


def human_bytes(n: float) -> str:
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{int(n)} B"


def _ranks(ranks: Sequence[int]) -> str:
    if len(ranks) == 1:
        return str(ranks[0])
    if list(ranks) == list(range(ranks[0], ranks[0] + len(ranks))):
        return f"{ranks[0]}-{ranks[-1]}"
    return ", ".join(map(str, ranks))


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else ""


def _reserved_rows(table, peak) -> None:
    """The reserved peak's parts under the live peak (passes/analysis/reserved.py)."""
    table.add_section()
    for label, value in (
        ("reserved: live peak", peak.live_peak_bytes),
        ("reserved: allocator slack", peak.allocator_slack_bytes),
        ("reserved: library workspaces", peak.library_workspace_bytes),
        ("reserved: CUDA context", peak.cuda_context_bytes),
        (f"reserved: NCCL buffers ({len(peak.communicators)} comm.)", peak.nccl_bytes),
    ):
        table.add_row(label, human_bytes(value), _share(value, peak.peak_bytes))
    table.add_row("[bold]reserved peak memory[/bold]", f"[bold]{human_bytes(peak.peak_bytes)}[/bold]", "")


def _print_tables(result, title: str, setup: dict, reserved: Sequence = ()) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(file=sys.stdout, soft_wrap=True)  # lines naming files never wrap mid-path
    recompute = ", recompute" if setup["recompute"] else ""
    console.print(f"[bold]{title}[/bold]: {human_count(result.params)} parameters ({result.params:,})")
    console.print(
        f"batch {setup['batch']} = {setup['micro_batches']} micro-batch(es) x {setup['micro_batch']} "
        f"sequence(s) of {setup['seq']} tokens per replica; {setup['dtype']}, {setup['optimizer']}{recompute}; "
        f"strategy: {setup['strategy']}"
    )
    for i, rc in enumerate(result.rank_classes):
        table = Table(title=f"rank class: ranks {_ranks(rc.ranks)} ({len(rc.ranks)} rank{'s' if len(rc.ranks) > 1 else ''})",
                      title_justify="left")
        table.add_column("per rank, per iteration")
        table.add_column("value", justify="right")
        table.add_column("share", justify="right")
        table.add_row("parameters", f"{human_count(rc.params)}", _share(rc.params, result.params))
        table.add_section()
        flops = rc.flops
        for name, label in (("gemm", "GeMM"), ("attention", "attention"), ("elementwise", "elementwise"), ("other", "other")):
            value = getattr(flops, name)
            table.add_row(f"FLOPs {label}", human_flops(value), _share(value, flops.total))
        table.add_row("[bold]FLOPs total[/bold]", f"[bold]{human_flops(flops.total)}[/bold]", "")
        if result.tokens:
            table.add_row("FLOPs per token", human_flops(flops.total / result.tokens), "")
        table.add_section()
        mem = rc.memory
        for kind, value in mem.breakdown.items():
            table.add_row(f"at peak: {kind.replace('_', ' ')}", human_bytes(value), _share(value, mem.peak_bytes))
        table.add_row("[bold]peak memory[/bold]", f"[bold]{human_bytes(mem.peak_bytes)}[/bold]", "")
        if i < len(reserved):
            _reserved_rows(table, reserved[i])
        comm = rc.comm.as_dict()
        if comm:
            table.add_section()
            for kind, entry in comm.items():
                table.add_row(f"{kind.replace('_', ' ')} ({entry['ops']:,} ops)", human_bytes(entry["bytes"]), "")
        console.print(table)
        console.print(f"  peak at {mem.peak_location}")
