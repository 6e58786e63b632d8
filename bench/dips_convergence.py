"""Di-PS against synchronous and asynchronous DiLoCo on the paper's emulated testbed
(di-ps.md §5.1: four clusters with extra delays of 0, 16, 33 and 50% of an iteration).

    python bench/dips_convergence.py --png curves.png [--json PATH] [--quick] [--pushes N]
                                     [--inner-steps 16] [--step-time S] [--model tiny|0.6m]
                                     [--modes dips,sync,async]

By default the issue's scale: a 0.6M-parameter Llama, H = 16, 1M tokens (256 pushes),
100 ms iterations - about 3 minutes a mode here. `--quick` is the tests' 23K-parameter
model, 48 pushes of 50 ms iterations (about 15 s a mode), where the budget's granularity
caps the speed-up near 1.20x (docs/dips-runtime.md "Measured").

Every mode runs the same deployment as real processes on loopback (runtime/ps/launcher):
a tiny Llama (runtime/ps/model.py), the same token budget (`--pushes` x H x batch x seq
tokens), the same inner AdamW and outer Nesterov settings. An iteration is padded to
`--step-time` seconds so that the emulated delays, not the machine's noise, set the
clusters' speeds. Every committed version's global parameters are evaluated on
held-out data afterwards (the slaves keep every snapshot), which gives the loss curves
against wall time (measured from the first data chunk handed out, so the processes'
start-up is not counted). Prints a table (final evaluation loss, wall time, speed-up over
synchronous DiLoCo, versions, excluded pushes) and writes the curves as a PNG.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

from stagec.runtime.ps.deployment import Deployment
from stagec.runtime.ps.launcher import evaluate, free_port_block, run
from stagec.runtime.ps.model import ModelSpec, TinyLlama, default_layer_prefixes
from stagec.runtime.ps.plan import Cluster, Layer, Plan, Transfer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results_io import write_json  # noqa: E402

DELAYS = (0.0, 0.16, 0.33, 0.5)  # di-ps.md §5.1
MODELS = {
    "tiny": ModelSpec(),  # the tests' model: 23K parameters
    # issue 19's scale reference ("4 processes of a 0.6M-parameter Llama"): 610K parameters
    "0.6m": ModelSpec(vocab=256, hidden=128, intermediate=344, layers=3, heads=4, kv_heads=2),
}


def emulated_plan(spec: ModelSpec, inner_steps: int, slaves: int = 2, grace_s: float = 0.05) -> Plan:
    """Layers dealt round-robin to slaves; in push step s cluster c sends the layers of
    slave (c + s) mod n, so no two clusters meet at one slave (Fig. 5)."""
    layers = tuple(Layer(p, 0) for p in default_layer_prefixes(spec))
    owner = tuple(i % slaves for i in range(len(layers)))
    n = len(DELAYS)
    schedule = tuple(tuple(Transfer(c, l, owner[l]) for c in range(n) for l in range(len(layers))
                           if owner[l] == (c + s) % slaves) for s in range(slaves))
    return Plan(clusters=tuple(Cluster(f"c{i}", 1.0 / (1 + d), d) for i, d in enumerate(DELAYS)),
                bandwidth=tuple(tuple(1e9 for _ in range(n)) for _ in range(n)), ps_cluster=0, num_slaves=slaves,
                layers=layers, slave_of_layer=owner, push_schedule=schedule, inner_steps=inner_steps,
                grace_window_s=grace_s, heartbeat_s=0.5, missed_heartbeats=6)


def run_mode(mode: str, args, spec: ModelSpec) -> dict:
    plan = emulated_plan(spec, args.inner_steps, grace_s=args.grace)
    tokens = args.pushes * args.inner_steps * spec.batch * spec.seq
    work = tempfile.mkdtemp(prefix=f"dips-conv-{mode}-")
    dep = Deployment(plan=plan, mode=mode, model=spec, workdir=work, total_tokens=tokens,
                     master_port=free_port_block(1), data_port=free_port_block(len(plan.layers)),
                     inner_lr=args.inner_lr, step_time_s=args.step_time, keep_snapshots=10 ** 6,
                     round_timeout_s=60.0, data_timeout_s=30.0)
    summary = run(dep, b"bench-" + mode.encode(), timeout_s=args.timeout)
    start = json.loads(dep.path("master", "state.json").read_text())["first_chunk_time"]
    curve = [(0.0, evaluate(dep, 0))]
    for entry in summary.log:
        if entry.get("committed"):
            curve.append((entry["time"] - start, evaluate(dep, entry["version"])))
    excluded = sum(len(e.get("excluded", [])) for e in summary.log)
    aborted = sum(1 for e in summary.log if e.get("aborted"))
    return {"mode": mode, "finished": summary.finished, "tokens": summary.tokens, "wall_s": summary.training_s,
            "process_wall_s": summary.wall_s, "eval_loss": summary.eval_loss, "versions": summary.version,
            "excluded": excluded, "aborted": aborted, "curve": curve, "workdir": work,
            "max_eval_loss": max(l for _, l in curve)}


NAMES = {"dips": "Di-PS", "sync": "sync DiLoCo", "async": "async DiLoCo (no penalty)"}


def plot_curves(results: list[dict], path: str) -> None:
    """Evaluation loss against wall time, one line per mode. The y axis ends a little
    above the initial loss: a diverging run (its loss reaches millions, or NaN) would
    flatten the others; its points past the top are drawn on the top edge as crosses."""
    import math

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    losses = [l for r in results for _, l in r["curve"] if math.isfinite(l)]
    top = 1.15 * max(r["curve"][0][1] for r in results)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for r in results:
        xs, ys = zip(*r["curve"])
        shown = [y if math.isfinite(y) and y <= top else float("nan") for y in ys]
        line, = ax.plot(xs, shown, marker=".", label=NAMES[r["mode"]])
        off = [x for x, y in zip(xs, ys) if not (math.isfinite(y) and y <= top)]
        if off:
            ax.plot(off, [top] * len(off), "x", color=line.get_color(), clip_on=False,
                    label=f"{NAMES[r['mode']]}: {len(off)} versions off the scale (diverged)")
    ax.set_ylim(0.95 * min(losses), top)
    ax.set_xlabel("wall time (s)")
    ax.set_ylabel("evaluation loss")
    ax.set_title("Di-PS vs DiLoCo, 4 emulated clusters (delays 0/16/33/50%)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, fontsize="small")
    ax.grid(alpha=0.3)
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=120, bbox_inches="tight")
    os.replace(tmp, path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--png", required=True, help="write the loss curves here")
    parser.add_argument("--json", metavar="PATH", help="write the table and curves here")
    parser.add_argument("--quick", action="store_true",
                        help="the small run: --model tiny --pushes 48 --step-time 0.05 (default: the issue's scale, "
                             "--model 0.6m --pushes 256 --step-time 0.1)")
    parser.add_argument("--pushes", type=int, help="token budget in pushes of H steps (default: 256, quick 48)")
    parser.add_argument("--inner-steps", type=int, default=16, help="H")
    parser.add_argument("--step-time", type=float,
                        help="seconds an iteration is padded to (default: 0.1, quick 0.05)")
    parser.add_argument("--model", choices=sorted(MODELS),
                        help="the clusters' Llama: tiny (23K parameters) or 0.6m (610K, the issue's scale run) "
                             "(default: 0.6m, quick tiny)")
    parser.add_argument("--inner-lr", type=float, default=3e-3)
    parser.add_argument("--grace", type=float, default=0.05, help="Di-PS grace window, seconds")
    parser.add_argument("--modes", default="dips,sync,async")
    parser.add_argument("--timeout", type=float, default=900.0)
    args = parser.parse_args(argv)
    defaults = {"model": "tiny", "pushes": 48, "step_time": 0.05} if args.quick else \
        {"model": "0.6m", "pushes": 256, "step_time": 0.1}
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    spec = MODELS[args.model]
    results = [run_mode(mode, args, spec) for mode in args.modes.split(",")]
    sync = next((r for r in results if r["mode"] == "sync"), None)
    names = NAMES
    params = sum(p.numel() for p in TinyLlama(spec).parameters())
    print(f"Llama of {params:,} parameters ({spec.layers} layers, hidden {spec.hidden}, vocab {spec.vocab}), "
          f"4 clusters with extra delays "
          f"{', '.join(f'{d:.0%}' for d in DELAYS)} of a {args.step_time * 1000:.0f} ms iteration, "
          f"H = {args.inner_steps}, {args.pushes * args.inner_steps * spec.batch * spec.seq:,} tokens")
    print(f"{'mode':<28}{'eval loss':>10}{'vs sync':>9}{'wall s':>8}{'speed-up':>10}{'versions':>9}"
          f"{'excluded':>9}{'max loss':>9}")
    for r in results:
        vs = f"{(r['eval_loss'] / sync['eval_loss'] - 1):+.1%}" if sync else "-"
        speed = f"{sync['wall_s'] / r['wall_s']:.2f}x" if sync and r["wall_s"] else "-"
        print(f"{names[r['mode']]:<28}{r['eval_loss']:>10.4f}{vs:>9}{r['wall_s']:>8.1f}{speed:>10}"
              f"{r['versions']:>9}{r['excluded']:>9}{r['max_eval_loss']:>9.3f}"
              + ("" if r["finished"] else "  (did not finish)"))
    plot_curves(results, args.png)
    print(f"loss curves: {args.png}")
    if args.json:
        write_json(args.json, {"delays": DELAYS, "inner_steps": args.inner_steps, "step_time_s": args.step_time,
                               "pushes": args.pushes, "grace_window_s": args.grace, "model": args.model,
                               "parameters": params, "results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
