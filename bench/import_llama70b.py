"""Benchmark: import the 80-layer Llama-3-70B-dims model end to end through the torch
frontend - torch.export (non-strict, meta device), torch-mlir's FX importer, the
translation into xDSL, convert-torch-to-stg (with the fold into one stg.repeat) - timed
per phase, and check the result against the template: its ops, and the per-rank
Chakra trace node counts by category under TP=8 and FSDP=8 at the full depth (the test
suite compares them at 2 layers).

    python bench/import_llama70b.py                    # HF LlamaForCausalLM if installed
    python bench/import_llama70b.py --model plain      # the plain-PyTorch decoder of the tests
    python bench/import_llama70b.py --layers 8         # fewer layers, quicker

Prints a table and, with --json FILE, writes it there (bench/results/import_llama70b.json is the recorded one). The conversion itself
must take under 5 s (issue 6); the exit code is 1 if it does not.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONVERT_BUDGET_S = 5.0


def _model(kind: str, config):
    import torch

    from stagec.frontends.torch import models

    if kind == "hf":
        return models.hf_model(config, "bf16")
    sys.path.insert(0, str(ROOT / "tests" / "unit" / "torch_frontend"))
    from llama_torch import make_model

    with torch.device("meta"):
        return make_model(config).to(torch.bfloat16).eval()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=("hf", "plain"), default=None,
                        help="hf (transformers' LlamaForCausalLM; default when installed) or plain")
    parser.add_argument("--layers", type=int, default=80)
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE "
                        "(bench/results/import_llama70b.json holds the recorded ones; default: print only)")
    args = parser.parse_args(argv)
    if args.model is None:
        try:
            import transformers  # noqa: F401

            args.model = "hf"
        except ImportError:
            args.model = "plain"

    from stagec.frontends.templates import build_model, load_config
    from stagec.frontends.torch.importer import export, import_exported
    from stagec.frontends.torch.models import DYNAMIC, config_symbols, example_args
    from stagec.passes.convert_torch_to_stg import convert_torch_to_stg

    config = dataclasses.replace(load_config("llama3-70b"), num_hidden_layers=args.layers)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    model = _model(args.model, config)
    timings["build (meta)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    program = export(model, example_args(config.vocab_size), DYNAMIC)
    timings["torch.export"] = time.perf_counter() - t0
    phases: dict[str, float] = {}
    torch_module = import_exported(program, DYNAMIC, phases)
    timings["FX import (torch-mlir)"] = phases["fx_import"]
    timings["translate to xDSL"] = phases["translate"]
    torch_ops = sum(1 for _ in torch_module.walk())
    t0 = time.perf_counter()
    module = convert_torch_to_stg(torch_module, config.name, config_symbols(config))
    timings["convert-torch-to-stg"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    module.verify()
    timings["verify"] = time.perf_counter() - t0
    total = sum(timings.values())

    template = build_model(config)
    stg_ops = sum(1 for _ in module.walk())
    same_ops = sorted(op.name for op in module.walk()) == sorted(op.name for op in template.walk())
    traces = {name: _trace_counts(module, template, strategy) for name, strategy in STRATEGIES.items()}
    rss_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20

    print(f"Llama-3-70B dims, {args.layers} layers, {args.model} model: torch ops {torch_ops:,} -> stg ops {stg_ops:,}")
    width = max(map(len, timings))
    for phase, seconds in timings.items():
        print(f"  {phase:<{width}}  {seconds:8.2f} s")
    print(f"  {'total':<{width}}  {total:8.2f} s")
    print(f"  peak RSS {rss_gib:.2f} GiB; the program is the template's op for op: {same_ops}")
    for name, entry in traces.items():
        print(f"  {name}: trace nodes per rank {entry['imported']['nodes']:,} imported, "
              f"{entry['template']['nodes']:,} template (largest category difference "
              f"{100 * entry['max_relative_difference']:.2f}%)")
    ok = timings["convert-torch-to-stg"] < CONVERT_BUDGET_S
    print(f"  conversion under {CONVERT_BUDGET_S:.0f} s: {ok}")
    counts_ok = all(e["max_relative_difference"] <= 0.01 for e in traces.values())
    print(f"  trace counts within 1% of the template: {counts_ok}")

    doc = {
        "benchmark": "import_llama70b", "model": args.model, "layers": args.layers,
        "seconds": timings, "total_seconds": total, "torch_ops": torch_ops, "stg_ops": stg_ops,
        "same_ops_as_template": same_ops, "trace_counts": traces, "peak_rss_gib": rss_gib,
        "convert_budget_seconds": CONVERT_BUDGET_S, "convert_within_budget": ok,
        "machine": {"python": platform.python_version(), "processor": platform.processor() or platform.machine()},
        "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    print(json.dumps(doc, indent=2))
    if args.json:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        temporary = out.with_name(f"{out.name}.tmp-{os.getpid()}")
        temporary.write_text(json.dumps(doc, indent=2) + "\n")
        os.replace(temporary, out)
        print(f"wrote {out}")
    return 0 if ok and counts_ok else 1


STRATEGIES = {"tp8": ({"tp": 8}, 1), "fsdp8": ({"fsdp": 8}, 8)}  # (stg-shard options, sequences per rank)
SEQ = 4096


def _trace_counts(module, template, strategy) -> dict:
    """Rank 0's trace node counts by category, imported and template, one micro-batch."""
    from stagec.dialects import make_context
    from stagec.passes.schedule.pipeline import schedule
    from stagec.passes.stg_autodiff import StgAutodiff
    from stagec.passes.stg_match_collectives import StgMatchCollectives
    from stagec.passes.stg_shard import StgShard
    from stagec.runtime.chakra.emit import build_programs

    options, batch = strategy
    out = {}
    for name, m in (("imported", module.clone()), ("template", template.clone())):
        StgAutodiff(optimizer="adamw").apply(make_context(), m)
        StgShard(**options).apply(make_context(), m)
        StgMatchCollectives().apply(make_context(), m)
        programs, _ = build_programs(schedule(m), {"B": batch, "S": SEQ, "M": 1})
        out[name] = {"nodes": len(programs[0]), **programs[0].counts()}
    keys = set(out["imported"]) | set(out["template"])
    out["max_relative_difference"] = max(
        abs(out["imported"].get(k, 0) - out["template"].get(k, 0)) / max(out["template"].get(k, 0), 1) for k in keys
    )
    return out


if __name__ == "__main__":
    sys.exit(main())
