"""`stagec simulate`: the time of one training iteration, from the scheduled IR (no trace
files) or from any Chakra trace directory, on an analytical network.

It only assembles: the job's module as `stagec trace` builds it (training_step, the
scheduling passes) -> the emitter's node streams in memory (runtime/chakra/emit.py
build_programs) -> actors (runtime/sim/from_ir.py) or a trace directory's actors
(runtime/sim/from_chakra.py) -> the event loop (runtime/sim/engine.py) -> the report,
the Perfetto timeline. Register it with `add_parser(subcommands)`, call `run(args)`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence

from stagec.tools.errors import UsageError, standalone_main
from stagec.tools.output import require_regular_file
from stagec.tools.stagec_stats import human_bytes
from stagec.tools.job_options import add_job_arguments
from stagec.tools.progress import Progress
from stagec.tools.step import is_inference, micro_batches_for, step_bindings, step_module

HELP = """\
Simulate one training iteration and report its time: per rank, compute, exposed
communication (what compute waits for), idle time and the compute-communication
overlap, and the peak memory; optionally a timeline for Perfetto (ui.perfetto.dev).

The job is either a model and strategy, as `stagec trace` takes them - the scheduled
IR is simulated directly, no trace files - or a directory of Chakra traces (stagec's
or another tool's: <prefix>.<rank>.et and comm_group.json), as ASTRA-sim takes them.

The simulator (docs/simulator.md): each rank has a compute, a communication and a
copy engine, each running one node at a time; a node runs when what it depends on
has finished; a collective starts when all its members have issued it, on an
analytical model of the network (ASTRA-sim's analytical backend: ring, direct and
halving-doubling collectives over Ring, FullyConnected and Switch dimensions; see
docs/simulator-network.md). Ranks that behave identically are simulated once.

The network: --hardware NAME|FILE (stagec's descriptions: NVLink inside a node, the
inter-node network across nodes), or ASTRA-sim's own files --network NET.yml and
--system SYS.json as they are. A trace directory with a `<prefix>.links.json` (as
`stagec ps plan --trace` writes for Di-PS) is timed on its point-to-point links, each
with its own bandwidth (runtime/sim/links.py), unless --network is given.

examples:
  stagec simulate --model llama3-70b --tp 8 --pp 4 --dp 2 --sp --batch 128 --seq 4096
  stagec simulate --model llama3-8b --tp 8 --batch 8 --seq 4096 --timeline step.json
  stagec simulate --model gpt3-5b --fsdp 8 --batch 64 --micro-batch 8 --seq 2048 --json
  stagec simulate traces/ --network examples/astra-sim/hgx_h100_8npus.yml --system examples/astra-sim/hgx_h100_direct.json
  stagec simulate dips-traces/        (from `stagec ps plan CONFIG --trace dips-traces`)
  stagec simulate step.mlir --timeline step.json   (a module from `stagec compile -o step.mlir`)
  stagec simulate --model llama3-8b --dp 8 --batch 64 --network examples/astra-sim/hgx_h100_8npus.yml --system examples/astra-sim/hgx_h100_direct.json

Bad input is one message and exit status 2; a timeline is written whole or not at all."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("traces", nargs="?", metavar="DIR|FILE.mlir",
                        help="a Chakra trace directory, or a scheduled module written by `stagec compile`, to simulate "
                             "instead of --model")
    add_job_arguments(parser, model_required=False)
    network = parser.add_argument_group("network")
    network.add_argument("--network", metavar="NET.yml", help="ASTRA-sim analytical network configuration (with --system)")
    network.add_argument("--system", metavar="SYS.json", help="ASTRA-sim system configuration (with --network)")
    network.add_argument("--congestion", choices=("unaware", "aware"), default="unaware",
                         help="ASTRA-sim's analytical backend flavour for point-to-point messages (default: %(default)s)")
    output = parser.add_argument_group("output")
    output.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    output.add_argument("--timeline", metavar="FILE", help="write a Chrome trace / Perfetto JSON timeline")
    output.add_argument("--timeline-ranks", metavar="all|R,R-R", type=_rank_list,
                        help="ranks the timeline shows, each as its own process (default: one process per set "
                             "of identically behaving ranks, named with the ranks it stands for)")
    output.add_argument("--prefix", help="the trace files' prefix in DIR, when it holds several")
    output.add_argument("--quiet", action="store_true", help="no progress bar")


def _rank_list(text: str):
    """argparse type: "all", or ranks and ranges like 0,4-7."""
    if text == "all":
        return "all"
    ranks = []
    try:
        for part in text.split(","):
            first, _, last = part.partition("-")
            ranks.extend(range(int(first), int(last or first) + 1))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}': 'all' or ranks like 0,4-7") from None
    if not ranks or min(ranks) < 0:
        raise argparse.ArgumentTypeError(f"'{text}': 'all' or ranks like 0,4-7")
    return ranks


def add_parser(subcommands) -> argparse.ArgumentParser:
    parser = subcommands.add_parser(
        "simulate", help="simulate a training iteration: time, exposed communication, overlap, memory",
        description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    return parser


def _network(args: argparse.Namespace, world: int):
    from stagec.runtime.sim.network import NetworkModel

    if (args.network is None) != (args.system is None):
        raise UsageError("--network and --system go together (ASTRA-sim's network YAML and system JSON)")
    try:
        if args.network is not None:
            network = NetworkModel.from_astra(args.network, args.system, congestion=args.congestion)
        else:
            from stagec.runtime.cost.hardware_description import load_hardware

            network = NetworkModel.from_hardware(load_hardware(args.hardware), world)
    except (OSError, ValueError) as error:
        raise UsageError(str(error)) from None
    if network.world < world:
        raise UsageError(f"the network has {network.world} NPUs, the job {world} ranks: give a network of at least {world}")
    return network


def run(args: argparse.Namespace) -> None:
    if (args.traces is None) == (args.model is None):
        raise UsageError("give a trace directory or --model (not both)")
    require_regular_file("--timeline", args.timeline)
    if args.timeline_ranks is not None and args.timeline is None:
        raise UsageError("--timeline-ranks chooses the ranks --timeline FILE shows: give --timeline too")
    started = time.perf_counter()
    with Progress(args.quiet) as progress:
        if args.traces is not None and args.traces.endswith(".mlir"):
            result = _simulate_ir(args, progress)
        elif args.traces is not None:
            result = _simulate_traces(args, progress)
        else:
            result = _simulate_model(args, progress)
    result.extra["seconds"] = round(time.perf_counter() - started, 3)
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_summary(args, result)


def _simulate_traces(args, progress):
    from stagec.runtime.sim.engine import SimulationError
    from stagec.runtime.sim.from_chakra import TraceReadError
    from stagec.runtime.sim.network import CollectiveError
    from stagec.runtime.sim.simulate import simulate_trace_dir

    network = None
    if args.network is None and args.system is None:
        from stagec.runtime.chakra.check import find_trace_files
        from stagec.runtime.sim.links import LINKS_FILE, LinkNetwork

        try:
            prefix, files = find_trace_files(args.traces, args.prefix)
        except ValueError as error:
            raise UsageError(str(error)) from None
        world = max(files) + 1
        # A directory with per-link bandwidths (`stagec ps plan --trace`) is timed on them.
        links = os.path.join(args.traces, LINKS_FILE.format(prefix=prefix))
        if os.path.exists(links):
            try:
                network = LinkNetwork.from_file(links)
            except ValueError as error:
                raise UsageError(str(error)) from None
    else:
        world = 0
    if network is None:
        network = _network(args, world)
    try:
        return simulate_trace_dir(args.traces, network, prefix=args.prefix, timeline=args.timeline, progress=progress,
                                  timeline_ranks=args.timeline_ranks)
    except (TraceReadError, SimulationError, CollectiveError) as error:
        raise UsageError(str(error)) from None
    except OSError as error:
        raise _timeline_error(args, error) from None


def _check_timeline_ranks(args, world: int) -> None:
    """Before anything is built: --timeline-ranks names ranks of the job (the simulator
    checks it again for a trace directory, whose ranks it learns as it reads)."""
    from stagec.runtime.sim.engine import SimulationError
    from stagec.runtime.sim.simulate import timeline_ranks_of

    try:
        timeline_ranks_of(args.timeline_ranks, world)
    except SimulationError as error:
        raise UsageError(str(error)) from None


def _timeline_error(args, error: OSError) -> UsageError:
    """The only file a simulation writes is the timeline."""
    return UsageError(f"cannot write the timeline '{args.timeline}': {error.strerror or error}")


def _simulate_ir(args, progress):
    """A scheduled module with its sizes in stg.config (`stagec compile -o`)."""
    from stagec.passes.analysis.accounting import world_ranks
    from stagec.passes.analysis.liveness import Evaluator
    from stagec.runtime.chakra.emit import EmitError, EmitOptions
    from stagec.runtime.sim.engine import SimulationError
    from stagec.runtime.sim.network import CollectiveError
    from stagec.runtime.sim.simulate import simulate_module
    from stagec.tools.stagec_compile import load_compiled
    from stagec.tools.stagec_trace import _cost_model

    module, bindings = load_compiled(args.traces)
    world = len(world_ranks(module, Evaluator(bindings)))
    _check_timeline_ranks(args, world)
    network = _network(args, world)
    try:
        result = simulate_module(module, network, bindings, cost=_cost_model(args),
                                 options=EmitOptions(iterations=args.iterations, optimizer=not args.no_optimizer),
                                 timeline=args.timeline, progress=progress, hardware=_hardware(args),
                                 timeline_ranks=args.timeline_ranks)
    except (EmitError, SimulationError, CollectiveError) as error:
        raise UsageError(str(error)) from None
    except OSError as error:
        raise _timeline_error(args, error) from None
    result.extra["model"] = args.traces
    return result


def _simulate_model(args, progress):
    from stagec.runtime.chakra.emit import EmitError, EmitOptions
    from stagec.runtime.sim.engine import SimulationError
    from stagec.runtime.sim.network import CollectiveError
    from stagec.runtime.sim.simulate import simulate_module
    from stagec.tools.stagec_trace import _cost_model

    if args.bucket_mb < 0:
        raise UsageError(f"--bucket-mb {args.bucket_mb} must be >= 0")
    micro_batches = micro_batches_for(args)
    cost = _cost_model(args)
    module = step_module(args, micro_batches)
    bindings = step_bindings(args, micro_batches)
    world = args.dp * args.fsdp * args.ep * args.cp * args.tp * args.pp
    _check_timeline_ranks(args, world)
    network = _network(args, world)
    options = EmitOptions(iterations=args.iterations, optimizer=not args.no_optimizer and not is_inference(args))
    try:
        result = simulate_module(module, network, bindings, cost=cost, options=options, timeline=args.timeline,
                                 progress=progress, hardware=_hardware(args), timeline_ranks=args.timeline_ranks)
    except (EmitError, SimulationError, CollectiveError) as error:
        raise UsageError(str(error)) from None
    except OSError as error:
        raise _timeline_error(args, error) from None
    result.extra["model"] = args.model
    result.extra["strategy"] = _strategy(args)
    result.extra["phase"] = args.phase
    if is_inference(args):
        tokens = bindings["B"] * (1 if args.phase == "decode" else args.seq)
        result.extra["tokens"] = tokens
        result.extra["tokens_per_s_per_gpu"] = tokens / (result.iteration_ns / 1e9) / world
    return result


def _hardware(args):
    from stagec.runtime.cost.hardware_description import load_hardware

    try:
        return load_hardware(args.hardware)
    except (OSError, ValueError) as error:
        raise UsageError(f"--hardware: {error}") from None


def _strategy(args) -> str:
    axes = [f"{a}={getattr(args, a)}" for a in ("pp", "dp", "fsdp", "ep", "cp", "tp") if getattr(args, a) > 1]
    return " ".join(axes + (["sp"] if args.sp else []) + ([f"zero={args.zero}"] if args.zero else [])) or "one rank"


def _ms(ns: float) -> str:
    return f"{ns / 1e6:,.3f}"


def _print_summary(args, result) -> None:
    from rich.console import Console
    from rich.table import Table

    from stagec.tools.stagec_trace import _ranks_text

    console = Console(file=sys.stdout, width=None if sys.stdout.isatty() else 160, soft_wrap=True)
    what = result.extra.get("model", result.source)
    strategy = result.extra.get("strategy")
    console.print(
        f"[bold]{what}[/bold]: {result.world} ranks{', ' + strategy if strategy else ''}; "
        f"{len(result.actors)} simulated (identical ranks once); network: {result.network}"
    )
    step = "iteration" if result.extra.get("phase", "train") == "train" else f"{result.extra['phase']} step"
    console.print(f"{step} time: [bold]{_ms(result.iteration_ns)} ms[/bold]"
                  + (f" (mean of {result.iterations})" if result.iterations > 1 else ""))
    if "tokens" in result.extra:
        console.print(f"{result.extra['tokens']:,} tokens: {result.extra['tokens_per_s_per_gpu']:,.1f} tokens/s per GPU")
    table = Table(title="per rank, times in ms", title_justify="left")
    for column in ("ranks", "finish", "compute", "exposed comm", "communication", "overlap", "copy", "idle",
                   "live peak", "reserved peak"):
        table.add_column(column, justify="left" if column == "ranks" else "right")
    for a in result.actors:
        table.add_row(
            _ranks_text(a.ranks), _ms(a.finish_ns), _ms(a.compute_ns), _ms(a.exposed_communication_ns),
            _ms(a.communication_ns), f"{a.overlap_ratio:.0%}" if a.communication_ns else "-",
            _ms(a.copy_ns) if a.copy_ns else "-", _ms(a.idle_ns),
            human_bytes(a.peak_memory_bytes) if a.peak_memory_bytes is not None else "n/a",
            human_bytes(a.reserved_memory_bytes) if a.reserved_memory_bytes is not None else "n/a",
        )
    console.print(table)
    if args.timeline:
        console.print(f"timeline: {args.timeline} (open in ui.perfetto.dev)")
    console.print(f"simulated in {result.extra.get('seconds', 0):.1f} s")


def main(argv: Sequence[str] | None = None) -> int:
    return standalone_main("stagec simulate", HELP, add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
