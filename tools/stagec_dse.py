"""`stagec dse`: design-space exploration - every valid strategy of a model on a GPU
count simulated, the Pareto front of iteration time against peak memory, the points
that do not fit the HBM marked, and a plot (stage.md §VI, Fig. 8).

It only assembles: runtime/sim/dse.py enumerates and ranks, each strategy is a
`stagec simulate` command line run by runtime/sim/simulate.py in a worker process.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from collections.abc import Sequence

from stagec.tools.errors import UsageError, finite_number, positive_int, standalone_main
from stagec.tools.output import require_regular_file
from stagec.tools.job_options import DEFAULT_HARDWARE, DEFAULT_SEQ

HELP = """\
Explore the parallel strategies of a model on a number of GPUs: enumerate every
strategy the sharding rules allow - tensor parallel (with sequence parallelism) inside
a node, pipeline stages, context parallel, expert parallel for MoE models, the
data-parallel replicas as DP with ZeRO stage 0, 1 or 2 or as FSDP, activation
recompute, micro-batch size - simulate one iteration of each (`stagec simulate`),
print the Pareto front of iteration time against the reserved peak memory per GPU,
mark the strategies that do not fit --hbm, and plot them (PNG).

Every row is a `stagec simulate` command line you can rerun to see its timeline.
Memory is the reserved peak (the caching allocator, CUDA context and NCCL buffers on
top of the live tensors; docs/memory.md); GiB = 2^30 bytes.

examples:
  stagec dse --model llama3-70b --gpus 1024 --hbm 80
  stagec dse --model llama3-8b --gpus 64 --hbm 80 --batch 128 --seq 8192 --plot dse.png
  stagec dse --model mixtral-8x7b --gpus 64 --hbm 80 --json > dse.json"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, metavar="NAME|config.json", help="a named model config or a config.json")
    parser.add_argument("--gpus", required=True, type=positive_int, help="number of GPUs")
    parser.add_argument("--hbm", required=True, type=finite_number, metavar="GiB", help="device memory per GPU, GiB")
    parser.add_argument("--batch", type=positive_int, metavar="SEQUENCES",
                        help="global batch in sequences (default: an eighth of --gpus, at least 8)")
    parser.add_argument("--seq", type=positive_int, default=DEFAULT_SEQ, metavar="S",
                        help="sequence length, S in the IR (default: %(default)s)")
    parser.add_argument("--dtype", default="bf16", choices=("bf16", "f16", "f32"),
                        help="parameter and activation type; bf16 and f16 keep fp32 gradients and master weights "
                             "(default: %(default)s)")
    parser.add_argument("--hardware", default=DEFAULT_HARDWARE, metavar="NAME|FILE",
                        help="the GPU and its links: compute durations, network, GPUs per node; h100-sxm, a100-80gb, "
                             "h200 or a file (default: %(default)s)")
    parser.add_argument("--micro-batch-sizes", default="1,2", metavar="LIST",
                        help="micro-batch sizes (sequences per micro-batch, --micro-batch of the other commands) to "
                             "try, comma-separated (default: %(default)s)")
    parser.add_argument("--max-cp", type=positive_int, default=4, help="largest context-parallel degree (default: %(default)s)")
    parser.add_argument("--jobs", type=positive_int, help="worker processes (default: one per core)")
    parser.add_argument("--plot", metavar="FILE.png",
                        help="plot iteration time against memory, the Pareto front marked (default: no plot)")
    parser.add_argument("--json", action="store_true", help="print every point as JSON instead of the table")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def add_parser(subcommands) -> argparse.ArgumentParser:
    parser = subcommands.add_parser(
        "dse", help="explore parallel strategies: simulate each, Pareto front of time vs memory, plot",
        description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    return parser


def evaluate(base: list[str], hardware_name: str, hbm_bytes: int, strategy):
    """One strategy simulated (a worker process's job); errors become the point's."""
    from stagec.runtime.sim.dse import Point
    from stagec.runtime.sim.gc_paused import gc_paused

    point = Point(strategy)
    # The passes, like the simulation, make millions of objects the collector would
    # rescan to no end (gc_paused.py). The strategy's module is garbage by the time
    # the collector resumes, so its first collection frees it, once.
    with gc_paused():
        report = _simulate(base, hardware_name, strategy, point)
    if report is None:
        return point
    point.iteration_ns = report.iteration_ns
    point.live_bytes = report.peak_memory_bytes
    point.reserved_bytes = report.reserved_memory_bytes
    if point.reserved_bytes is None:
        point.error = "the memory analysis cannot account this strategy"
        return point
    point.fits = point.reserved_bytes <= hbm_bytes
    return point


# what evaluating a strategy imports beyond this module's own imports (the passes and
# the simulator import lazily); tests/unit/sim/test_dse.py checks the list is complete
_EVALUATION_MODULES = (
    "xdsl.utils.exceptions",
    "stagec.dialects.torch",
    "stagec.passes.analysis.accounting", "stagec.passes.analysis.calls", "stagec.passes.analysis.comm",
    "stagec.passes.analysis.memory", "stagec.passes.analysis.reserved",
    "stagec.passes.autodiff.optimizer", "stagec.passes.autodiff.reverse",
    "stagec.passes.pipeline.accumulation", "stagec.passes.pipeline.builder", "stagec.passes.pipeline.partition",
    "stagec.passes.pipeline.schedule", "stagec.passes.pipeline.step",
    "stagec.passes.shard.propagate", "stagec.passes.shard.solver", "stagec.passes.shard.strategy",
    "stagec.passes.schedule.pipeline", "stagec.passes.stg_autodiff", "stagec.passes.stg_match_collectives",
    "stagec.passes.stg_pipeline", "stagec.passes.stg_shard",
    "stagec.runtime.chakra.emit", "stagec.runtime.sim.astra_config", "stagec.runtime.sim.from_ir",
    "stagec.runtime.sim.memory", "stagec.runtime.sim.network", "stagec.runtime.sim.simulate",
    "stagec.tools.stagec_cli", "stagec.tools.stagec_stats", "stagec.tools.stagec_trace", "stagec.tools.step",
)


def preload() -> None:
    """Import, once, what evaluating a strategy imports: explore forks a process per
    strategy, and each inherits the parent's modules instead of importing its own."""
    import importlib

    for name in _EVALUATION_MODULES:
        importlib.import_module(name)
    from stagec.passes.schedule.pipeline import scheduling_passes
    from stagec.tools.stagec_cli import _parser

    _parser()  # and the subcommands' modules
    scheduling_passes(fuse_gemms=True, bucket_mb=1)


def _simulate(base: list[str], hardware_name: str, strategy, point):
    """`stagec simulate`'s report on the strategy, or None with the reason in `point`."""
    from xdsl.utils.exceptions import DiagnosticException

    from stagec.runtime.chakra.emit import EmitError
    from stagec.runtime.cost.hardware_description import load_hardware
    from stagec.runtime.sim.engine import SimulationError
    from stagec.runtime.sim.network import NetworkModel
    from stagec.runtime.sim.simulate import simulate_module
    from stagec.tools.stagec_cli import _parser
    from stagec.tools.stagec_trace import _cost_model
    from stagec.tools.step import micro_batches_for, step_bindings, step_module

    try:
        args = _parser().parse_args(["simulate", *base, *strategy.argv()])
        micro_batches = micro_batches_for(args)
        module = step_module(args, micro_batches)
        bindings = step_bindings(args, micro_batches)
        hardware = load_hardware(hardware_name)
        world = args.dp * args.fsdp * args.ep * args.cp * args.tp * args.pp
        network = NetworkModel.from_hardware(hardware, world)
        return simulate_module(module, network, bindings, cost=_cost_model(args), fork=False, hardware=hardware,
                               outer_stages=True)
    except (UsageError, DiagnosticException, EmitError, SimulationError, ValueError) as error:
        point.error = str(error).splitlines()[0][:200]
        return None


def run(args: argparse.Namespace) -> None:
    from stagec.frontends.templates import ConfigError, load_config
    from stagec.runtime.cost.hardware_description import load_hardware
    from stagec.runtime.sim.dse import explore, pareto_front, plot, strategies

    try:
        config = load_config(args.model)
    except ConfigError as error:
        raise UsageError(str(error)) from None
    try:
        hardware = load_hardware(args.hardware)
    except (OSError, ValueError) as error:
        raise UsageError(f"--hardware: {error}") from None
    try:
        sizes = sorted({int(x) for x in args.micro_batch_sizes.split(",")})
    except ValueError:
        raise UsageError(f"--micro-batch-sizes '{args.micro_batch_sizes}': comma-separated whole numbers, e.g. 1,2,4") from None
    if not sizes or sizes[0] < 1:
        raise UsageError(f"--micro-batch-sizes '{args.micro_batch_sizes}': sizes of at least 1")
    if args.hbm <= 0:
        raise UsageError(f"--hbm {args.hbm}: a positive size in GiB, e.g. 80")
    require_regular_file("--plot", args.plot)
    if args.plot is not None and not args.plot.lower().endswith(".png"):
        raise UsageError(f"--plot '{args.plot}': the plot is a PNG file; name it FILE.png")
    batch = args.batch or max(8, args.gpus // 8)
    candidates = strategies(config, args.gpus, batch, args.seq, gpus_per_node=hardware.gpus_per_node,
                            micro_batches=sizes, max_cp=args.max_cp)
    if not candidates:
        raise UsageError(f"no strategy of {args.model} fits {args.gpus} GPUs with a batch of {batch} sequences of "
                         f"{args.seq}: try another --batch or --seq")
    hbm_bytes = int(args.hbm * 2**30)
    base = ["--model", args.model, "--batch", str(batch), "--seq", str(args.seq), "--dtype", args.dtype,
            "--hardware", args.hardware, "--quiet"]
    job = functools.partial(evaluate, base, args.hardware, hbm_bytes)
    jobs = args.jobs or os.cpu_count() or 1
    preload()
    started = time.perf_counter()
    show = not args.quiet and (sys.stderr.isatty() or bool(os.environ.get("STAGEC_PROGRESS")))
    if show:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("simulating strategies"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      transient=True) as bar:
            task = bar.add_task("dse", total=len(candidates))
            points = explore(job, candidates, jobs=jobs, progress=lambda d, t: bar.update(task, completed=d))
    else:
        points = explore(job, candidates, jobs=jobs)
    elapsed = time.perf_counter() - started
    for p in pareto_front(points):
        p.pareto = True
    title = (f"{args.model} on {args.gpus} GPUs ({args.hardware}), batch {batch} x {args.seq}: "
             f"{sum(p.error is None for p in points)} strategies")
    if args.plot is not None and any(p.error is None for p in points):
        try:
            plot(points, args.plot, hbm_bytes=hbm_bytes, title=title)
        except OSError as error:
            raise UsageError(f"--plot '{args.plot}': {error.strerror or error}") from None
    if args.json:
        json.dump({"model": args.model, "gpus": args.gpus, "hbm_bytes": hbm_bytes, "batch": batch, "seq": args.seq,
                   "seconds": round(elapsed, 1), "points": [p.to_json() for p in points]}, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return
    _print(args, points, batch, elapsed)


def _print(args, points, batch: int, elapsed: float) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(file=sys.stdout, width=None if sys.stdout.isatty() else 160, soft_wrap=True)
    done = [p for p in points if p.error is None]
    fits = [p for p in done if p.fits]
    console.print(f"[bold]{args.model}[/bold] on {args.gpus} GPUs, batch {batch} x {args.seq}: {len(points)} "
                  f"strategies, {len(done)} simulated, {len(fits)} fit {args.hbm:g} GiB, "
                  f"{len(points) - len(done)} refused by the passes; {elapsed:.0f} s")
    table = Table(title="Pareto front: iteration time vs reserved peak memory", title_justify="left")
    for column in ("strategy", "iteration s", "reserved GiB", "live GiB", "fits"):
        table.add_column(column, justify="left" if column == "strategy" else "right")
    for p in sorted((p for p in done if p.pareto), key=lambda p: p.iteration_ns):
        table.add_row(p.strategy.label, f"{p.iteration_ns / 1e9:.3f}", f"{p.reserved_bytes / 2**30:.1f}",
                      f"{p.live_bytes / 2**30:.1f}", "yes" if p.fits else "[red]no[/red]")
    console.print(table)
    best = min(fits, key=lambda p: p.iteration_ns, default=None)
    if best is not None:
        console.print(f"fastest that fits: {best.strategy.label}, {best.iteration_ns / 1e9:.3f} s: "
                      f"stagec simulate --model {args.model} --batch {batch} --seq {args.seq} {' '.join(best.strategy.argv())}")
    else:
        console.print(f"[red]no strategy fits {args.hbm:g} GiB[/red]")
    if args.plot is not None:
        console.print(f"plot: {args.plot}")


def main(argv: Sequence[str] | None = None) -> int:
    return standalone_main("stagec dse", HELP, add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
