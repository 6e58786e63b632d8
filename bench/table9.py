"""stage.md Table IX (§VI-C, the DeepSeek-R1 inference system study) side by side with
`stagec simulate`.

    python bench/table9.py                   # print the table
    python bench/table9.py --json out.json   # also write the rows there
    python bench/table9.py --keep DIR        # keep the config.json and network files
    python bench/table9.py --all-to-all ring # ASTRA-sim's ring all-to-all, for comparison

The study (docs/inference.md, "Table IX"): 144 GPUs as 4 clusters of 36, 2 of 72 or
1 of 144; in a cluster, the routed experts over expert parallelism (ep = the cluster)
and everything else data-parallel over the same ranks; 2048 sequences over all
clusters. Prefill: 1024 prompt tokens per sequence (the table's 524,288 tokens = 512 x
1024). Decode: one new token per sequence over a KV cache of DECODE_CONTEXT positions.

What stagec needs that the paper leaves open, and the choices made here:
- the model: the named config `deepseek-r1` with 288 experts, DeepSeek's deployment
  of the 256 routed experts plus 32 redundant copies (288 = 8 x 36 = 4 x 72 = 2 x 144;
  the routing stays top-8);
- the batch: 14 sequences per GPU (504, 1008, 2016 per cluster): the table's 512,
  1024, 2048 are 14.2 per GPU, and stagec runs whole sequences per rank;
- the expert capacity: the least factor >= 1 that gives whole slots per expert and
  source rank (decode: one slot, 18/7; prefill: 399 slots, 513/512);
- the network: H100 SXM nodes of 8 GPUs (runtime/cost/hardware/h100-sxm.json, the
  paper's validation machines), all-to-alls as NCCL and DeepEP run them (direct, every
  peer at once), bounded by each GPU's 400 Gb/s NIC for the bytes that leave its node.
  stagec's analytical network has no hierarchical direct all-to-all that serialises a
  NIC, so each cluster gets ASTRA-sim files of one congestion-aware Switch whose
  per-GPU bandwidth makes its direct all-to-all take exactly that NIC-bound time
  (`network_dicts`).

Every row runs `stagec simulate --json` in this process on those files. Prints the
table; writes the file --json names (bench/results/table9.json is the recorded one). `--all-to-all ring`
runs the same rows on ASTRA-sim's ring all-to-all instead, for comparison (to --json
only).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import platform
import shutil
import sys
import tempfile
from fractions import Fraction

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
from progress_bar import each  # noqa: E402  (bench/, the script's own folder)
from results_io import write_json  # noqa: E402


# stage.md Table IX: (phase, cluster GPUs) -> (sequences per cluster, tokens, step ms,
# tokens/s per GPU).
PAPER = {
    ("decode", 36): (512, 512, 227.483, 62.520),
    ("decode", 72): (1024, 1024, 187.483, 75.859),
    ("decode", 144): (2048, 2048, 163.681, 86.890),
    ("prefill", 36): (512, 524_288, 2051.994, 7097.270),
    ("prefill", 72): (1024, 1_048_576, 2866.145, 5081.235),
    ("prefill", 144): (2048, 2_097_152, 3723.360, 3911.401),
}
CLUSTERS = (36, 72, 144)
SYSTEM_GPUS = 144
SEQUENCES_PER_GPU = 14
PROMPT = 1024
DECODE_CONTEXT = 1024  # the prompt's cache: 1.0 GB of latents per GPU, 0.35 ms of a 38 ms step
EXPERTS = 288  # 256 routed + 32 redundant (DeepSeek's inference system, EP deployment)
HARDWARE = "h100-sxm"


def deployment_config(phase: str, experts: int = EXPERTS) -> dict:
    """DeepSeek-R1's config.json as the study deploys it: `experts` routed experts
    (redundant copies included) and the capacity factor of `capacity_factor`."""
    from stagec.frontends.templates import NAMED_CONFIGS

    config = {k: v for k, v in NAMED_CONFIGS["deepseek-r1"].items() if not k.startswith("_")}
    factor = capacity_factor(phase, experts, config["num_experts_per_tok"])
    return {**config, "n_routed_experts": experts, "capacity_factor": f"{factor.numerator}/{factor.denominator}"}


def capacity_factor(phase: str, experts: int = EXPERTS, top_k: int = 8,
                    sequences_per_gpu: int = SEQUENCES_PER_GPU) -> Fraction:
    """The least factor >= 1 with whole slots per expert and source rank: each rank's
    dispatch buffer is [E, C/ep, H] with C/ep = factor * top_k * b * S / E for its b
    sequences of S tokens, so C/ep = ceil(top_k * b * S / E)."""
    pairs = top_k * sequences_per_gpu * (PROMPT if phase == "prefill" else 1)
    return Fraction(math.ceil(Fraction(pairs, experts)) * experts, pairs)


def local_gpus(cluster: int, per_node: int, system: int = SYSTEM_GPUS) -> int:
    """The fewest GPUs of its own cluster any rank has in its node, clusters laid out
    on consecutive GPUs of the system (36 = 4 nodes and half of a fifth)."""
    fewest = per_node
    for first in range(0, system, cluster):
        for node in range(first // per_node, (first + cluster - 1) // per_node + 1):
            lo, hi = max(first, node * per_node), min(first + cluster, (node + 1) * per_node)
            fewest = min(fewest, hi - lo)
    return fewest


def network_dicts(cluster: int, hardware, all_to_all: str = "direct") -> tuple[dict, dict]:
    """ASTRA-sim's network YAML and system JSON (as dicts) for one cluster.

    A direct all-to-all of S bytes per rank sends S/n to each peer at once. The bytes
    that stay in the node go over NVLink (360 GB/s), the rest through the GPU's own NIC
    (45 GB/s): the NIC takes longest, S * r / B_nic for the remote share r = (n - k)/n,
    k the rank's cluster GPUs in its node (the worst-placed rank's, who finishes
    last). A congestion-aware Switch of n GPUs at bandwidth B runs a direct all-to-all
    in (n-2)*m/B + 2*(latency + m/B) = S/B + 2*latency, m = S/n (ASTRA-SIM.md): with
    B = B_nic / r that is the NIC-bound time, plus the inter-node latency (two 3.3 us
    hops = the description's 6.6 us).

    `all_to_all="ring"` instead gives ASTRA-sim's ring all-to-all on one Switch of n
    GPUs at the NIC's bandwidth (congestion unaware, ASTRA-sim's default): n(n-1)/2
    steps of S/n, each rank sending (n-1)/2 * S (docs/inference.md compares the two)."""
    if all_to_all not in ("direct", "ring"):
        raise ValueError(f"all_to_all must be direct or ring, not {all_to_all!r}")
    link = hardware.inter_node
    remote = Fraction(cluster - local_gpus(cluster, hardware.gpus_per_node), cluster)
    if all_to_all == "ring":
        remote = Fraction(1)
    bandwidth = link.bandwidth * link.efficiency / remote / (1 << 30)  # ASTRA-sim GB/s = 2^30 B/s
    network = {"topology": ["Switch"], "npus_count": [cluster], "bandwidth": [float(bandwidth)],
               "latency": [link.latency_us * 1000.0 / 2]}
    kinds = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")
    system = {f"{kind}-implementation": [all_to_all] for kind in kinds}
    system.update({"endpoint-delay": 10, "active-chunks-per-dimension": 1, "preferred-dataset-splits": 1,
                   "local-mem-bw": hardware.memory_bandwidth * hardware.efficiency.memory / 1e9})
    return network, system


def write_inputs(directory: str, phase: str, cluster: int, all_to_all: str = "direct") -> dict[str, str]:
    """The config.json and the ASTRA-sim files of one row, written into `directory`."""
    from stagec.runtime.cost.hardware_description import load_hardware

    import yaml

    os.makedirs(directory, exist_ok=True)
    network, system = network_dicts(cluster, load_hardware(HARDWARE), all_to_all)
    paths = {"config": os.path.join(directory, f"deepseek-r1-{EXPERTS}e-{phase}.json"),
             "network": os.path.join(directory, f"cluster{cluster}-{all_to_all}.yml"),
             "system": os.path.join(directory, f"cluster{cluster}-{all_to_all}.json")}
    for key, text in (("config", json.dumps(deployment_config(phase), indent=2)),
                      ("network", yaml.safe_dump(network, default_flow_style=None)),
                      ("system", json.dumps(system, indent=2))):
        temporary = f"{paths[key]}.tmp-{os.getpid()}"
        with open(temporary, "w", encoding="utf-8") as stream:
            stream.write(text + "\n")
        os.replace(temporary, paths[key])
    return paths


def simulate_argv(paths: dict[str, str], phase: str, cluster: int, all_to_all: str = "direct") -> list[str]:
    """`stagec simulate`'s arguments for one row."""
    batch = SEQUENCES_PER_GPU * cluster
    argv = ["--model", paths["config"], "--phase", phase, "--ep", str(cluster), "--batch", str(batch),
            "--seq", str(PROMPT if phase == "prefill" else 1), "--network", paths["network"],
            "--system", paths["system"], "--congestion", "aware" if all_to_all == "direct" else "unaware", "--hardware", HARDWARE, "--json", "--quiet"]
    if phase == "decode":
        argv += ["--context", str(DECODE_CONTEXT)]
    return argv


def run_row(phase: str, cluster: int, directory: str, all_to_all: str = "direct") -> dict:
    """Simulate one row with `stagec simulate --json`; the row beside the paper's."""
    from stagec.tools import stagec_simulate

    argv = simulate_argv(write_inputs(directory, phase, cluster, all_to_all), phase, cluster, all_to_all)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = stagec_simulate.main(argv)
    if status:
        raise RuntimeError(f"stagec simulate {' '.join(argv)} failed ({status}): {err.getvalue().strip()}")
    report = json.loads(out.getvalue())
    (rank,) = report["ranks"]  # every rank of a cluster behaves alike: one actor
    paper_batch, paper_tokens, paper_ms, paper_throughput = PAPER[(phase, cluster)]
    return {
        "phase": phase, "gpus": cluster, "clusters": SYSTEM_GPUS // cluster, "all_to_all": all_to_all,
        "batch": SEQUENCES_PER_GPU * cluster, "tokens": report["tokens"],
        "step_ms": report["iteration_ns"] / 1e6, "tokens_per_s_per_gpu": report["tokens_per_s_per_gpu"],
        "compute_ms": rank["compute_ns"] / 1e6, "exposed_communication_ms": rank["exposed_communication_ns"] / 1e6,
        "reserved_peak_gb": (report["reserved_memory_bytes"] or 0) / 1e9,
        "paper": {"batch": paper_batch, "tokens": paper_tokens, "step_ms": paper_ms,
                  "tokens_per_s_per_gpu": paper_throughput},
        # the files as `--keep DIR` writes them
        "command": "stagec simulate " + " ".join(a.replace(directory, "DIR") for a in argv
                                                 if a not in ("--json", "--quiet")),
    }


def study(directory: str | None = None, all_to_all: str = "direct") -> list[dict]:
    """Every row of Table IX, decode then prefill, in cluster order."""
    work = directory or tempfile.mkdtemp(prefix="stagec-table9-")
    try:
        rows = [(phase, cluster) for phase in ("decode", "prefill") for cluster in CLUSTERS]
        return [run_row(phase, cluster, work, all_to_all) for phase, cluster in each(rows, "Table IX rows")]
    finally:
        if directory is None:
            shutil.rmtree(work, ignore_errors=True)


def format_table(rows: list[dict]) -> str:
    lines = [f"{'phase':<8} {'GPUs':>5} {'batch':>11} {'tokens':>19} {'step ms':>21} {'tokens/s per GPU':>21} "
             f"{'compute ms':>10} {'exposed comm ms':>15} {'reserved GB':>11}",
             f"{'':<8} {'':>5} {'stagec paper':>11} {'stagec     paper':>19} {'stagec    paper':>21} "
             f"{'stagec    paper':>21}"]
    for r in rows:
        p = r["paper"]
        lines.append(
            f"{r['phase']:<8} {r['gpus']:>5} {r['batch']:>5} {p['batch']:>5} {r['tokens']:>9,} {p['tokens']:>9,} "
            f"{r['step_ms']:>10,.1f} {p['step_ms']:>10,.1f} {r['tokens_per_s_per_gpu']:>10,.1f} "
            f"{p['tokens_per_s_per_gpu']:>10,.1f} {r['compute_ms']:>10,.1f} {r['exposed_communication_ms']:>15,.1f} "
            f"{r['reserved_peak_gb']:>11.1f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON to FILE (bench/results/table9.json "
                        "holds the recorded ones; default: print only)")
    parser.add_argument("--keep", metavar="DIR", help="write the config.json and network files to DIR and keep them")
    parser.add_argument("--all-to-all", choices=("direct", "ring"), default="direct",
                        help="direct: NIC-bound, as NCCL/DeepEP run it (the study's); ring: ASTRA-sim's ring "
                             "all-to-all at the NIC's bandwidth, for comparison (default: %(default)s)")
    args = parser.parse_args(argv)
    rows = study(args.keep, args.all_to_all)
    print("stage.md Table IX, DeepSeek-R1 on 144 GPUs: stagec simulate beside the paper")
    print(format_table(rows))
    network = "NIC-bound direct" if args.all_to_all == "direct" else "ASTRA-sim ring"
    print(f"\n{EXPERTS} experts (256 + 32 redundant), {SEQUENCES_PER_GPU} sequences per GPU, prefill {PROMPT} tokens, "
          f"decode context {DECODE_CONTEXT}; {HARDWARE}, {network} all-to-all (docs/inference.md, Table IX)")
    doc = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
           "rows": rows}
    if args.json:
        write_json(args.json, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
