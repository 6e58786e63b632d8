"""`stagec summary`: what one training job costs, in one screen.

The first command a new user runs. It compiles a real model for a real cluster (by
default Llama-3-8B on two 8-GPU H100 nodes: tensor and sequence parallel inside a
node, data parallel across the two) and reports what a person planning the job asks
first: how long one iteration takes, how fast that is (tokens/s, model FLOPs
utilization), what each GPU computes, sends and holds in memory, and whether it fits.

It only assembles: the accounting `stagec stats` prints (passes/analysis/accounting.py)
and the simulation `stagec simulate` runs (runtime/sim), on the same job options.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence

from stagec.tools.errors import UsageError, standalone_main
from stagec.tools.stagec_stats import human_bytes, human_count, human_flops
from stagec.tools.job_options import add_job_arguments

DEFAULT_JOB = {"model": "llama3-8b", "tp": 8, "sp": True, "dp": 2, "batch": 16, "seq": 4096}

HELP = """\
Compile a model for a cluster and summarize one training iteration: the iteration
time and throughput (simulated), and per GPU the FLOPs, the communication and the
peak memory against the GPU's capacity.

With no options it is Llama-3-8B (8 B parameters) on 16 H100 GPUs in two nodes of 8:
tensor parallel 8 with sequence parallelism inside each node (NVLink), data parallel
2 across the nodes (InfiniBand), 16 sequences of 4,096 tokens per iteration, bf16
with AdamW. Every option of `stagec simulate` changes the job.

examples:
  stagec summary
  stagec summary --model llama3-70b --tp 8 --pp 4 --dp 2 --sp --batch 128 --seq 4096
  stagec summary --model mixtral-8x7b --ep 8 --tp 2 --batch 16 --seq 4096 --recompute
  stagec summary --model gpt3-5b --fsdp 16 --batch 64 --seq 2048 --hardware a100-80gb --json

What each line means: README.md, "What the first command shows".
Bad input is one message and exit status 2."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_job_arguments(parser, model_required=False)
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    # `stagec simulate`'s network and timeline options, at their defaults: the summary
    # times the job on --hardware's description.
    parser.set_defaults(network=None, system=None, congestion="unaware", timeline=None, timeline_ranks=None,
                        traces=None, prefix=None)


def add_parser(subcommands) -> argparse.ArgumentParser:
    parser = subcommands.add_parser(
        "summary", help="what one training iteration of a job costs: time, throughput, FLOPs, traffic, memory",
        description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    return parser


def _apply_default_job(args: argparse.Namespace) -> None:
    """No --model: the default job, whole (a strategy without a model is not one)."""
    if args.model is not None:
        return
    strategy = ("dp", "fsdp", "ep", "cp", "tp", "pp")
    if any(getattr(args, axis) != 1 for axis in strategy) or args.sp or args.batch or args.micro_batches:
        raise UsageError("a strategy or batch needs --model (with no options, the summary is of the default job: "
                         + _describe_default() + ")")
    for key, value in DEFAULT_JOB.items():
        setattr(args, key, value)


def _describe_default() -> str:
    return " ".join(f"--{k}" if v is True else f"--{k} {v}" for k, v in DEFAULT_JOB.items())


def run(args: argparse.Namespace) -> None:
    from stagec.passes.analysis.accounting import AccountingError, account
    from stagec.tools.progress import Progress
    from stagec.tools.stagec_simulate import _hardware, _simulate_model, _strategy
    from stagec.tools.step import micro_batches_for, step_bindings, step_module

    if args.phase != "train":
        raise UsageError("stagec summary is of a training iteration; for --phase prefill|decode use stagec simulate")
    _apply_default_job(args)
    started = time.perf_counter()
    micro_batches = micro_batches_for(args)
    with Progress(args.quiet) as progress:
        simulated = _simulate_model(args, progress)
        try:
            accounted = account(step_module(args, micro_batches), step_bindings(args, micro_batches))
            if args.no_optimizer:
                accounted = accounted.without_phase("optimizer")
        except AccountingError as error:
            raise UsageError(str(error)) from None
    hardware = _hardware(args)
    summary = _summary(args, accounted, simulated, hardware, micro_batches, _strategy(args))
    summary["seconds"] = round(time.perf_counter() - started, 3)
    if args.json:
        json.dump(summary, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print(summary)


def _summary(args, accounted, simulated, hardware, micro_batches: int, strategy: str) -> dict:
    """The numbers, per GPU at the busiest rank class (the one that finishes last)."""
    world = simulated.world
    iteration_s = simulated.iteration_ns / 1e9
    tokens = accounted.tokens
    slowest = max(simulated.actors, key=lambda a: a.finish_ns)
    classes = accounted.rank_classes
    peak_class = max(classes, key=lambda rc: rc.memory.peak_bytes)
    flops_class = max(classes, key=lambda rc: rc.flops.total)
    # Model FLOPs utilization: the whole job's FLOPs over what the GPUs could do in the
    # iteration at their dense matmul peak in the job's dtype (recomputation counts, so
    # with --recompute this is the hardware FLOPs utilization).
    total_flops = sum(rc.flops.total * len(rc.ranks) for rc in classes)
    peak_flops = hardware.matmul_flops.get(args.dtype)
    mfu = total_flops / (iteration_s * world * peak_flops) if peak_flops and iteration_s else None
    nodes = -(-world // hardware.gpus_per_node)
    communication = {kind: entry for kind, entry in flops_class.comm.as_dict().items()}
    reserved = simulated.reserved_memory_bytes
    return {
        "model": accounted.model or args.model,
        "parameters": accounted.params,
        "hardware": hardware.name,
        "hardware_description": hardware.description,
        "gpus": world,
        "nodes": nodes,
        "gpus_per_node": hardware.gpus_per_node,
        "strategy": strategy,
        "batch": micro_batches * args.micro_batch * args.dp * args.fsdp * args.ep,
        "micro_batches": micro_batches,
        "micro_batch": args.micro_batch,
        "seq": args.seq,
        "dtype": args.dtype,
        "optimizer": args.optimizer + (" (compute left out)" if args.no_optimizer else ""),
        "recompute": args.recompute,
        "tokens_per_iteration": tokens,
        "iteration_s": iteration_s,
        "tokens_per_s": tokens / iteration_s if iteration_s else None,
        "tokens_per_s_per_gpu": tokens / iteration_s / world if iteration_s else None,
        "mfu": mfu,
        "flops_per_gpu": flops_class.flops.total,
        "flops_per_token": total_flops / tokens if tokens else None,
        "compute_s": slowest.compute_ns / 1e9,
        "communication_s": slowest.communication_ns / 1e9,
        "exposed_communication_s": slowest.exposed_communication_ns / 1e9,
        "idle_s": slowest.idle_ns / 1e9,
        "communication_bytes_per_gpu": {k: v["bytes"] for k, v in communication.items()},
        "parameters_per_gpu": peak_class.params,
        "peak_memory_bytes": peak_class.memory.peak_bytes,
        "memory_breakdown_bytes": dict(peak_class.memory.breakdown),
        "reserved_memory_bytes": reserved,
        "gpu_memory_bytes": hardware.memory_capacity,
        "fits": (reserved if reserved is not None else peak_class.memory.peak_bytes) <= hardware.memory_capacity,
    }


def _seconds(s: float) -> str:
    return f"{s * 1e3:,.1f} ms" if s < 10 else f"{s:,.1f} s"


def _print(s: dict) -> None:
    from rich.console import Console

    console = Console(file=sys.stdout, soft_wrap=True)
    recompute = ", recompute" if s["recompute"] else ""
    console.print(f"[bold]{s['model']}[/bold] ({human_count(s['parameters'])} parameters) on {s['gpus']} "
                  f"{s['hardware']} GPUs ({s['nodes']} node{'s' if s['nodes'] > 1 else ''} of "
                  f"{s['gpus_per_node']}): {s['strategy']}")
    console.print(f"one iteration: {s['batch']} sequences of {s['seq']:,} tokens ({s['tokens_per_iteration']:,} tokens) "
                  f"in {s['micro_batches']} micro-batch(es) of {s['micro_batch']} per replica; {s['dtype']}, "
                  f"{s['optimizer']}{recompute}")
    console.print()
    mfu = f"; MFU {s['mfu']:.0%}" if s["mfu"] is not None else ""
    console.print(f"[bold]time[/bold]           {_seconds(s['iteration_s'])} per iteration: "
                  f"{s['tokens_per_s']:,.0f} tokens/s ({s['tokens_per_s_per_gpu']:,.0f} per GPU){mfu}")
    console.print(f"[bold]compute[/bold]        {human_flops(s['flops_per_gpu'])} per GPU "
                  f"({human_flops(s['flops_per_token'])} per token): {_seconds(s['compute_s'])} busy")
    traffic = ", ".join(f"{kind.replace('_', '-')} {human_bytes(b)}"
                        for kind, b in sorted(s["communication_bytes_per_gpu"].items(), key=lambda kv: -kv[1]))
    console.print(f"[bold]communication[/bold]  {traffic or 'none'} per GPU: {_seconds(s['communication_s'])} on the "
                  f"network, {_seconds(s['exposed_communication_s'])} of it exposed (compute waits)")
    parts = ", ".join(f"{k.replace('_', ' ')} {human_bytes(v)}" for k, v in s["memory_breakdown_bytes"].items() if v)
    reserved = s["reserved_memory_bytes"]
    verdict = "[green]fits[/green]" if s["fits"] else "[red]does not fit[/red]"
    console.print(f"[bold]memory[/bold]         peak {human_bytes(s['peak_memory_bytes'])} per GPU ({parts})"
                  + (f"; {human_bytes(reserved)} reserved with the CUDA context and NCCL buffers" if reserved else "")
                  + f": {verdict} in the GPU's {s['gpu_memory_bytes'] / 1e9:g} GB ({human_bytes(s['gpu_memory_bytes'])})")
    console.print()
    console.print("next: stagec stats (the full accounting), stagec simulate --timeline step.json (a Perfetto timeline), "
                  "stagec dse (every strategy), stagec trace (Chakra traces for ASTRA-sim); each takes the same options")


def main(argv: Sequence[str] | None = None) -> int:
    return standalone_main("stagec summary", HELP, add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
