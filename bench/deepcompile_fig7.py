"""deepcompile.md Fig. 7 (throughput) and Fig. 8 (peak memory), simulated: ZeRO-3,
FSDP, DeepCompile P (prefetch), S (selective unsharding) and P+S on the paper's jobs.

    python bench/deepcompile_fig7.py --quick                 # two points, the table
    python bench/deepcompile_fig7.py --json /tmp/fig7.json   # every point, rows also as JSON
    python bench/deepcompile_fig7.py --models llama --no-accumulation
    python bench/deepcompile_fig7.py --seqs 512,4096 --batches 1 --accumulations 16 --json /tmp/f.json

The jobs (§5.1): Llama-3-70B on 32 H100s (4 nodes of 8) and Mixtral-8x7B on 16 (2
nodes), activation checkpointing per layer (--recompute), bf16 with fp32 master
weights, gradients and Adam states (stg-autodiff's mixed precision); sequence length
512-4096 and 1-4 sequences per GPU with no accumulation, then accumulation 1-16 at
1 x 1024. Every method is a schedule in the same IR, from the same fully-sharded step
(tools/stagec_compile.py `fully_sharded_step`):

- ZeRO-3: stg-zero3 (DeepSpeed's defaults: 5e7-element prefetch bucket, 1e9 live);
- FSDP: stg-fsdp2 (one all-gather per decoder layer, next-group prefetch, reshard);
  with accumulation > 1 FSDP keeps unsharded gradients between micro-batches (§5.2)
  and runs out of memory: the row says so, with the memory it would need;
- P, S, P+S: `compile_step` (Fig. 3's loop, two rounds, simulated profiles, M = the
  paper's 80 GB - 7 GB reserved - 10%); S and P+S need stg-unshard, skipped with a
  note where this build lacks it.

The network: h100-sxm (NVLink 4 in a node, one 400 Gb/s NIC per GPU across) with the
inter-node bandwidth raised until a 32-rank all-gather of one Llama-3-70B layer
(1.7 GB) runs at the 340 GB/s the paper observed (V / T); the calibrated description
is written to a temporary directory (and named in the JSON). Each schedule is then
simulated (runtime/sim) for its iteration time and peak memory: throughput is tokens
per second per GPU.

The JSON goes only where --json says; a path git tracks is refused (the results of a
run are not the repository's).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.results_io import write_json  # noqa: E402

OBSERVED_BUS_BYTES_PER_S = 340e9  # deepcompile.md §5.1, all-gather and reduce-scatter
LAYER_BYTES = 1.7e9  # one Llama-3-70B decoder layer in bf16 (0.86e9 parameters)
METHODS = ("ZeRO-3", "FSDP", "P", "S", "P+S")
# deepcompile.md §5.2, P+S over ZeRO-3
PAPER = {
    "llama3-70b": "1.11x at seq 512 batch 1, 1.14-1.18x elsewhere; 1.28x at accumulation 16",
    "mixtral-8x7b": "1.07-1.35x; 1.54x at accumulation 16",
}


@dataclass(frozen=True)
class Job:
    model: str
    ranks: int
    seq: int
    batch: int  # sequences per GPU per micro-batch
    accumulation: int

    def label(self) -> str:
        return f"seq {self.seq} batch {self.batch} acc {self.accumulation}"


def jobs(models: list[str], quick: bool, seqs=(512, 1024, 2048, 4096), batches=(1, 2, 4),
         accumulations=(2, 4, 8, 16)) -> list[Job]:
    sizes = {"llama3-70b": 32, "mixtral-8x7b": 16}
    out = []
    for model in models:
        n = sizes[model]
        if quick:
            out.append(Job(model, n, 2048, 1, 1))
            continue
        out += [Job(model, n, s, b, 1) for s in seqs for b in batches]
        out += [Job(model, n, 1024, 1, a) for a in accumulations if a > 1]
    return out


def _ints(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}': numbers separated by commas") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"'{text}': positive numbers separated by commas")
    return values


def calibrated_hardware(directory: str) -> tuple[str, float]:
    """A copy of h100-sxm whose inter-node bandwidth makes a 32-rank all-gather of
    LAYER_BYTES take LAYER_BYTES / 340 GB/s in the network model; its path and the
    inter-node bandwidth found (bisection)."""
    from stagec.runtime.cost.hardware_description import load_hardware
    from stagec.runtime.sim.network import NetworkModel

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    base = json.load(open(os.path.join(here, "runtime/cost/hardware/h100-sxm.json")))
    path = os.path.join(directory, "h100-sxm-ib340.json")

    def rate(bandwidth: float) -> float:
        doc = dict(base, name="h100-sxm-ib340")
        doc["inter_node"] = dict(base["inter_node"], bandwidth_bytes_per_s=bandwidth,
                                 name=f"inter-node at {bandwidth / 1e9:.0f} GB/s per GPU, calibrated to "
                                      "deepcompile.md's observed 340 GB/s all-gather")
        with open(path, "w") as stream:
            json.dump(doc, stream)
        net = NetworkModel.from_hardware(load_hardware(path), 32)
        return LAYER_BYTES / (net.collective_ns("all_gather", int(LAYER_BYTES / 32), list(range(32))) / 1e9)

    lo, hi = base["inter_node"]["bandwidth_bytes_per_s"], 2e12
    for _ in range(30):
        mid = (lo * hi) ** 0.5
        lo, hi = (mid, hi) if rate(mid) < OBSERVED_BUS_BYTES_PER_S else (lo, mid)
    rate(hi)
    return path, hi


def _settings(method: str, hardware: str):
    from stagec.tools.stagec_compile import CompileSettings

    if method == "ZeRO-3":
        return CompileSettings(baseline="zero3", rounds=1, hardware=hardware)
    if method == "FSDP":
        return CompileSettings(baseline="fsdp2", rounds=1, hardware=hardware)
    flags = {"P": {"prefetch": True}, "S": {"unshard": True}, "P+S": {"prefetch": True, "unshard": True}}[method]
    enabled = {"prefetch": False, "unshard": False, "offload": False} | flags
    return CompileSettings(enabled=enabled, rounds=2, hardware=hardware)


def run_job(job: Job, hardware: str, methods: list[str]) -> dict:
    from stagec.runtime.cost.hardware_description import load_hardware
    from stagec.runtime.cost.profiling import profile_by_cost_model
    from stagec.runtime.sim.network import NetworkModel
    from stagec.runtime.sim.simulate import simulate_module
    from stagec.tools.stagec_compile import available, compile_step, fully_sharded_step

    step, bindings = fully_sharded_step(job.model, job.ranks, seq=job.seq, micro_batch=job.batch,
                                        micro_batches=job.accumulation, recompute=True)
    hw = load_hardware(hardware)
    network = NetworkModel.from_hardware(hw, job.ranks)
    tokens = job.batch * job.seq * job.accumulation  # per GPU per iteration
    row: dict = {"model": job.model, "gpus": job.ranks, "seq": job.seq, "batch": job.batch,
                 "accumulation": job.accumulation, "methods": {}}
    for method in methods:
        started = time.perf_counter()
        if method in ("S", "P+S") and not available("stg-unshard"):
            row["methods"][method] = {"skipped": "stg-unshard is not available in this build"}
            continue
        if method == "FSDP" and job.accumulation > 1:
            # FSDP2 accumulates unsharded bf16 gradients between micro-batches (§5.2): the
            # full model's gradients on every GPU; the sharded master weights B_os say how big
            masters = sum(f.bytes for f in profile_by_cost_model(step, bindings, hardware).optimizer_states
                          if f.state == "master")
            gradients = masters * job.ranks // 2  # fp32 shard x ranks -> the bf16 whole
            row["methods"][method] = {"oom": True, "unsharded_gradient_bytes": gradients,
                                      "note": f"unsharded gradients of {gradients / 1e9:.0f} GB exceed "
                                              f"{hw.memory_capacity / 1e9:.0f} GB (deepcompile.md §5.2)"}
            continue
        result = compile_step(step, bindings, _settings(method, hardware))
        report = simulate_module(result.module, network, bindings, fork=False, hardware=hw)
        seconds = report.iteration_ns / 1e9
        row["methods"][method] = {
            "iteration_ms": round(report.iteration_ns / 1e6, 3),
            "tokens_per_s_per_gpu": round(tokens / seconds, 2),
            "peak_memory_gb": round(report.peak_memory_bytes / 1e9, 2),
            "reserved_memory_gb": round(report.reserved_memory_bytes / 1e9, 2) if report.reserved_memory_bytes else None,
            "exposed_communication_ms": round(report.actors[0].exposed_communication_ns / 1e6, 3),
            "decisions": [d.to_json() for r in result.runs for d in r.decisions if r.round == result.runs[-1].round],
            "seconds": round(time.perf_counter() - started, 2),
        }
    base = row["methods"].get("ZeRO-3", {}).get("tokens_per_s_per_gpu")
    fsdp = row["methods"].get("FSDP", {}).get("tokens_per_s_per_gpu")
    for name, m in row["methods"].items():
        if "tokens_per_s_per_gpu" in m:
            if base:
                m["over_zero3"] = round(m["tokens_per_s_per_gpu"] / base, 3)
            if fsdp:
                m["over_fsdp"] = round(m["tokens_per_s_per_gpu"] / fsdp, 3)
    return row


def _cell(m: dict) -> str:
    if "skipped" in m:
        return "n/a"
    if m.get("oom"):
        return "OOM"
    ratio = f" ({m['over_zero3']:.2f}x)" if "over_zero3" in m else ""
    return f"{m['tokens_per_s_per_gpu']:,.0f}{ratio} / {m['peak_memory_gb']:.1f}"


def print_table(rows: list[dict], methods: list[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=220)
    table = Table(title="tokens/s per GPU (x over ZeRO-3) / peak memory GB, simulated", title_justify="left")
    for column in ("model", "GPUs", "seq", "batch", "acc", *methods):
        table.add_column(column, justify="right" if column not in ("model",) else "left")
    for r in rows:
        table.add_row(r["model"], str(r["gpus"]), str(r["seq"]), str(r["batch"]), str(r["accumulation"]),
                      *[_cell(r["methods"][m]) for m in methods])
    console.print(table)
    notes = {m["skipped"] for r in rows for m in r["methods"].values() if "skipped" in m}
    notes |= {m["note"] for r in rows for m in r["methods"].values() if "note" in m}
    for note in sorted(notes):
        console.print(f"note: {note}")
    for model, text in PAPER.items():
        if any(r["model"] == model for r in rows):
            console.print(f"paper, {model}, P+S over ZeRO-3: {text}")


def _tracked(path: str) -> bool:
    """Whether git tracks `path` (a result must not overwrite the repository's files)."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        return False
    try:
        done = subprocess.run(["git", "ls-files", "--error-unmatch", os.path.abspath(path)], cwd=directory,
                              capture_output=True)
    except OSError:
        return False
    return done.returncode == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one point per model (seq 2048, batch 1)")
    parser.add_argument("--models", default="llama,mixtral", help="llama, mixtral or both (default: %(default)s)")
    parser.add_argument("--seqs", type=_ints, default=(512, 1024, 2048, 4096), help="sequence lengths (default: 512-4096)")
    parser.add_argument("--batches", type=_ints, default=(1, 2, 4), help="sequences per GPU (default: 1,2,4)")
    parser.add_argument("--accumulations", type=_ints, default=(2, 4, 8, 16),
                        help="gradient-accumulation steps at seq 1024, batch 1 (default: 2,4,8,16)")
    parser.add_argument("--no-accumulation", action="store_true", help="leave out the accumulation points")
    parser.add_argument("--json", metavar="PATH", help="write the rows here (not a file git tracks)")
    args = parser.parse_args(argv)
    names = {"llama": "llama3-70b", "mixtral": "mixtral-8x7b"}
    try:
        models = [names[m.strip()] for m in args.models.split(",") if m.strip()]
    except KeyError as error:
        print(f"deepcompile_fig7: --models: {error.args[0]!r} is not llama or mixtral", file=sys.stderr)
        return 2
    if args.json and _tracked(args.json):
        print(f"deepcompile_fig7: --json {args.json}: git tracks that file; write the results elsewhere "
              "(e.g. /tmp/fig7.json)", file=sys.stderr)
        return 2
    started = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory(prefix="fig7-") as tmp:
        hardware, inter_node = calibrated_hardware(tmp)
        for job in jobs(models, args.quick, args.seqs, args.batches, () if args.no_accumulation else args.accumulations):
            print(f"{job.model}: {job.label()}", file=sys.stderr)
            rows.append(run_job(job, hardware, list(METHODS)))
            if args.json:  # after every point: a long run that stops keeps what it measured
                write_json(args.json, _document(rows, inter_node, started))
    print_table(rows, list(METHODS))
    if args.json:
        write_json(args.json, _document(rows, inter_node, started))
    return 0


def _document(rows: list[dict], inter_node: float, started: float) -> dict:
    return {"figure": "deepcompile.md Fig. 7 and Fig. 8, simulated", "network": {
        "hardware": "h100-sxm with the inter-node bandwidth calibrated", "inter_node_bytes_per_s": round(inter_node),
        "all_gather_32_ranks_bytes_per_s": OBSERVED_BUS_BYTES_PER_S}, "paper_p_plus_s_over_zero3": PAPER,
        "rows": rows, "seconds": round(time.perf_counter() - started, 1)}


if __name__ == "__main__":
    sys.exit(main())
