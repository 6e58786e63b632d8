"""`stagec trace`: per-rank Chakra execution traces of one training job, for simulators
such as ASTRA-sim (stage.md §IV-B2; docs/chakra.md "Emission").

It only assembles the pipeline - model template -> stg-autodiff -> stg-shard ->
stg-match-collectives -> stg-pipeline (with --pp) - and hands the module to the
emitter (runtime/chakra/emit.py) with B, S and the mesh sizes bound; the summary's
peak memory comes from passes/analysis/accounting.py. Register it with
`add_parser(subcommands)` and call `run(args)`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from collections.abc import Sequence

from stagec.tools.errors import UsageError, positive_int, standalone_main
from stagec.tools.job_options import DEFAULT_SEQ, SCHEDULES, add_job_arguments  # noqa: F401 (shared)
from stagec.tools.stagec_stats import human_bytes, human_flops

from stagec.tools.step import is_inference, micro_batches_for, step_bindings, step_module

# Beyond these a job's output needs --yes: far more than a simulator reads in a day, and
# a typo away from filling a disk (--dp 1000000 writes a million files).
MAX_FILES = 10_000
MAX_BYTES = 20 << 30  # 20 GiB

HELP = """\
Write the Chakra execution traces of one training job: DIR/<prefix>.<rank>.et for
every rank and DIR/comm_group.json (ASTRA-sim: --workload-configuration=DIR/<prefix>
--comm-group-configuration=DIR/comm_group.json). The traces pass `stagec check-trace`.

The model is a named config or a Hugging Face config.json; stg-autodiff makes a
training step with --batch / (--micro-batch x data-parallel replicas) micro-batches,
the strategy flags shard it (stg-shard, stg-match-collectives) and --pp cuts it into
pipeline stages with a 1F1B, GPipe or interleaved 1F1B schedule (stg-pipeline;
--virtual-stages V chunks per rank). Ranks are numbered as
the mesh says: [pp, dp, fsdp, ep, cp, tp], tp fastest.

What the traces hold (docs/chakra.md "Emission"):
  - compute nodes with duration_micros from the cost model (--hardware, --profile),
    num_ops (FLOPs) and tensor_size (bytes); attention with its S^2 term; the
    optimizer step as Adam's arithmetic over fp32 master weights and states;
  - collectives with comm_type, comm_size in bytes (an all-gather's shard, the whole
    buffer otherwise) and pg_name (a key of comm_group.json); send/recv between
    pipeline stages with comm_src, comm_dst, comm_tag and comm_size;
  - data deps that follow the program, ctrl deps for stream order: one compute
    stream in schedule order, one stream per communicator, a collective issued where
    the compute stream reaches it; data-parallel gradients all-reduced once per
    iteration after accumulation, in buckets of --bucket-mb.

examples:
  stagec trace --model llama3-8b --tp 8 --batch 8 --seq 4096 --out traces/
  stagec trace --model llama3-70b --dp 2 --tp 8 --pp 4 --sp --batch 128 --micro-batch 1 --out t70b/
  stagec trace --model gpt3-5b --fsdp 8 --batch 128 --micro-batch 8 --seq 2048 --no-optimizer --out fsdp/
  stagec trace --model mixtral-8x7b --ep 8 --pp 4 --batch 128 --hardware h200 --iterations 2 --out moe/
  stagec trace --model examples/tiny.json --tp 2 --batch 2 --seq 512 --json --out small/   (also .json dumps)
  stagec trace --model deepseek-v2-lite --phase decode --ep 8 --batch 256 --context 4096 --out decode/
  stagec trace --ir step.mlir --out compiled/     (a module from `stagec compile -o step.mlir`)

--phase prefill|decode writes an inference step instead (docs/inference.md): a prefill
of --seq prompt tokens per sequence or a decode step of one token per sequence over a
KV cache of --context positions; no backward, no optimizer, no micro-batches (--batch
sequences split over dp x fsdp x ep).

Bad input (an unknown model, sizes that do not divide, a batch that is not a whole
number of micro-batches) is one message and exit status 2. The output appears whole or
not at all: the files are written into a temporary directory that becomes DIR's content
once every one is written; an error (disk full, a file too large, no permission: one
line naming the file), Ctrl-C (exit 130) or SIGTERM (exit 143) leaves DIR as it was.
DIR may hold other files, which stay; the traces of a previous job there are replaced
only with --force (its <prefix>.<rank>.et/.json, <prefix>.ranks.json and
comm_group.json, nothing else). The size of the output is estimated before anything is
written: more than the file system's free space is refused, more than
{max_files:,} files or {max_gb} GiB needs --yes."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_job_arguments(parser, model_required=False)
    parser.add_argument("--ir", metavar="FILE.mlir",
                        help="a scheduled module written by `stagec compile` (its sizes in stg.config), instead of --model")
    add_trace_output_arguments(parser)


def add_trace_output_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, metavar="DIR", help="directory for the traces (created if missing)")
    emission = parser.add_argument_group("emission")
    emission.add_argument("--prefix", default="trace", help="file name prefix: DIR/<prefix>.<rank>.et (default: %(default)s)")
    emission.add_argument("--json", action="store_true", help="also write DIR/<prefix>.<rank>.json, each trace decoded for reading (small jobs)")
    emission.add_argument("--workers", type=positive_int, metavar="N", help="processes writing files (default: one per core, at most 8)")
    emission.add_argument("--quiet", action="store_true", help="no progress bar")
    emission.add_argument("--force", action="store_true",
                          help="replace the traces of a previous job in DIR (only its trace, rank-class and comm_group.json files)")
    emission.add_argument("--yes", action="store_true",
                          help=f"write a large output: more than {MAX_FILES:,} files or {MAX_BYTES >> 30} GiB (default: refused)")


def add_parser(subcommands) -> argparse.ArgumentParser:
    parser = subcommands.add_parser(
        "trace", help="per-rank Chakra execution traces of a training job (ASTRA-sim)",
        description=_help(), formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    return parser


def _micro_batches(args: argparse.Namespace) -> int:
    micro_batches = micro_batches_for(args)
    if not args.prefix or "/" in args.prefix or args.prefix.startswith("."):
        raise UsageError(f"--prefix '{args.prefix}': a plain file name prefix")
    if args.bucket_mb < 0:
        raise UsageError(f"--bucket-mb {args.bucket_mb} must be >= 0")
    return micro_batches


def _cost_model(args: argparse.Namespace):
    from stagec.runtime.cost import CostModel
    from stagec.runtime.cost.hardware_description import load_hardware
    from stagec.runtime.cost.profile import load_profile

    # each file on its own, so that the message names the option at fault
    try:
        hardware = load_hardware(args.hardware)
    except (OSError, ValueError) as error:
        raise UsageError(f"--hardware: {error}") from None
    try:
        profile = load_profile(args.profile) if args.profile else None
        return CostModel(hardware, profile)
    except (OSError, ValueError) as error:
        raise UsageError(f"--profile: {error}") from None


def run(args: argparse.Namespace) -> None:
    from stagec.runtime.chakra.emit import EmitError, EmitOptions, build_programs, emit_traces
    from stagec.runtime.chakra.staging import PreviousJobError, file_list, previous_output

    if (args.ir is None) == (args.model is None):
        raise UsageError("give --model or --ir (a module from `stagec compile`), not both")
    micro_batches = _micro_batches(args)
    cost = _cost_model(args)
    # --out first: a refusal should not wait for the job to be built
    if not args.out:
        raise UsageError("--out '': give a directory path")
    if os.path.lexists(args.out) and not os.path.isdir(args.out):
        raise UsageError(f"--out '{args.out}' is not a directory")
    replaced, kept = previous_output(args.out)
    if replaced and not args.force:
        raise UsageError(_previous_job(args, replaced))
    started = time.perf_counter()
    if args.ir is not None:
        from stagec.tools.stagec_compile import load_compiled

        module, bindings = load_compiled(args.ir)
        micro_batches, args.model, args.seq = bindings["M"], args.ir, bindings["S"]
    else:
        module = step_module(args, micro_batches)
        bindings = step_bindings(args, micro_batches)
    options = EmitOptions(
        iterations=args.iterations, optimizer=not args.no_optimizer and not is_inference(args),
        prefix=args.prefix, workers=args.workers or 0,
    )
    try:
        programs = build_programs(module, bindings, cost=cost, options=options)
    except EmitError as error:
        raise UsageError(str(error)) from None
    memory = _peak_memory(module, bindings)
    try:
        report = _write(module, args, bindings, cost, options, programs, emit_traces)
    except PreviousJobError as error:  # written meanwhile
        raise UsageError(_previous_job(args, error.files)) from None
    except EmitError as error:  # OutputError: a file that cannot be written
        raise UsageError(str(error)) from None
    if replaced and kept:
        print(f"{_PROG}: --force replaced the previous job's traces in '{args.out}' and kept the other files there: "
              f"{file_list(kept)}", file=sys.stderr)
    elapsed = time.perf_counter() - started
    _print_summary(args, report, memory, micro_batches, elapsed)


_PROG = "stagec"


def _previous_job(args: argparse.Namespace, files) -> str:
    from stagec.runtime.chakra.staging import file_list

    return (f"--out '{args.out}' holds the traces of another job ({file_list(files)}): "
            f"give --force to replace them (other files stay), or another directory")


def _free_space(path: str) -> tuple[int, int | None]:
    """Free bytes and inodes (None: not counted) of the file system `path` would be on."""
    path = os.path.abspath(path)
    while not os.path.exists(path):
        path = os.path.dirname(path)
    free = shutil.disk_usage(path).free
    try:
        stat = os.statvfs(path)
        inodes = stat.f_favail if stat.f_files else None  # some file systems count none
    except OSError:
        inodes = None
    return free, inodes


def _confirm(args: argparse.Namespace):
    """emit_traces' check of the OutputEstimate: refuse what does not fit on the disk,
    and a large output without --yes; nothing is written yet."""

    def check(estimate) -> None:
        size = human_bytes(estimate.bytes)
        what = f"this job writes {estimate.files:,} files, about {size}, into '{args.out}'"
        free, inodes = _free_space(args.out)
        # each file takes at least one 4 KiB block on common file systems
        if estimate.bytes + 4096 * estimate.files > free:
            raise UsageError(f"{what}, but its file system has {human_bytes(free)} free; "
                             f"write fewer ranks or choose another --out")
        if inodes is not None and estimate.files > inodes:
            raise UsageError(f"{what}, but its file system has room for {inodes:,} more files; "
                             f"write fewer ranks or choose another --out")
        if not args.yes and (estimate.files > MAX_FILES or estimate.bytes > MAX_BYTES):
            raise UsageError(f"{what}: more than {MAX_FILES:,} files or {MAX_BYTES >> 30} GiB; "
                             f"give --yes to write it")

    return check


def _write(module, args, bindings, cost, options, programs, emit_traces):
    world = programs[1].world or 1
    common = dict(cost=cost, options=options, programs=programs, refuse_previous=not args.force, json_dumps=args.json,
                  confirm=_confirm(args))
    if args.quiet or not sys.stderr.isatty() and not os.environ.get("STAGEC_PROGRESS"):
        return emit_traces(module, args.out, bindings, **common)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("writing traces"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  transient=True) as progress:
        task = progress.add_task("ranks", total=world)
        return emit_traces(module, args.out, bindings, **common,
                           progress=lambda done, total: progress.update(task, completed=done))


def _peak_memory(module, bindings) -> dict[tuple[int, ...], int]:
    """Peak bytes per rank class (accounting.py), keyed by the class's ranks; empty if
    the analysis cannot account this module."""
    from stagec.passes.analysis.accounting import account

    try:
        result = account(module, bindings)
    except Exception:  # noqa: BLE001 - the summary then says "n/a"; the traces do not depend on it
        return {}
    return {tuple(rc.ranks): rc.memory.peak_bytes for rc in result.rank_classes}


def _ranks_text(ranks) -> str:
    ranks = list(ranks)
    if len(ranks) == 1:
        return str(ranks[0])
    step = ranks[1] - ranks[0]
    if all(b - a == step for a, b in zip(ranks, ranks[1:])):
        return f"{ranks[0]}-{ranks[-1]}" if step == 1 else f"{ranks[0]}..{ranks[-1]} step {step}"
    return f"{ranks[0]}, {ranks[1]}, ... ({len(ranks)})"


def _print_summary(args, report, memory, micro_batches: int, elapsed: float) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(file=sys.stdout, width=None if sys.stdout.isatty() else 160, soft_wrap=True)
    axes = [f"{a}={getattr(args, a)}" for a in ("pp", "dp", "fsdp", "ep", "cp", "tp") if getattr(args, a) > 1]
    strategy = " ".join(axes + (["sp"] if args.sp else []) + ([f"zero={args.zero}"] if args.zero else [])) or "one rank"
    total_nodes = sum(len(p) * len(p.ranks) for p in report.programs)
    if is_inference(args):
        bindings = step_bindings(args, micro_batches)
        what = (f"{args.phase} step of {bindings['B']} sequence(s) x {bindings['S']} token(s) = "
                f"{bindings['B'] * bindings['S']:,} tokens over a KV cache of {bindings['T']} positions, "
                f"{args.iterations} step(s)")
    else:
        what = (f"{micro_batches} micro-batch(es) of {args.micro_batch} x {args.seq} tokens per replica, "
                f"{args.iterations} iteration(s){'' if not args.no_optimizer else ', no optimizer'}")
    console.print(
        f"[bold]{args.model}[/bold]: {report.world} ranks, {len(report.programs)} rank class(es), {strategy}; {what}"
    )
    table = Table(title="per rank of each class, whole trace", title_justify="left")
    for column in ("ranks", "nodes", "FLOPs", "all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                   "send", "recv", "peak memory"):
        table.add_column(column, justify="right" if column != "ranks" else "left")
    for program in report.programs:
        totals = program.totals()
        counts = program.counts()

        def comm(kind: str) -> str:
            n = counts.get(kind, 0)
            return f"{n:,} / {human_bytes(totals.get(f'{kind}_bytes', 0))}" if n else "-"

        peak = memory.get(tuple(program.ranks))
        table.add_row(
            _ranks_text(program.ranks), f"{len(program):,}", human_flops(totals["flops"]),
            comm("all_reduce"), comm("all_gather"), comm("reduce_scatter"), comm("all_to_all"),
            comm("send"), comm("recv"), human_bytes(peak) if peak is not None else "n/a",
        )
    console.print(table)
    console.print(
        f"wrote {report.files:,} traces ({total_nodes:,} nodes) and comm_group.json ({len(report.groups):,} groups) "
        f"to {report.directory} in {elapsed:.1f} s"
    )


def _help() -> str:
    return HELP.format(max_files=MAX_FILES, max_gb=MAX_BYTES >> 30)


def main(argv: Sequence[str] | None = None) -> int:
    return standalone_main("stagec trace", _help(), add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
