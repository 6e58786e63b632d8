"""`stagec run --device cuda` on a GPU against plain PyTorch on the same GPU (issue 18
item 2; docs/run.md "GPUs").

    python bench/gpu_run.py                                # prints the table
    python bench/gpu_run.py --json bench/results/gpu_run_h100.json --profile bench/results/measured_h100.json

For a machine with a GPU and stagec installed with both csrc modules (`pip install -e
".[test]"`: the mpich wheel gives mpiexec and the MPI world that starts the ranks, the
NCCL wheel the GPU runtime) and a CUDA build of torch. Checks:

1. parity: `stagec run -n 1 --device cuda` of the parity tests' tiny Llama
   (tests/unit/templates/tiny_configs.py), 20 AdamW steps in fp32 at seq 8 on the
   token file whose next token is the previous one plus 1 (mod V), against the same
   model in plain PyTorch (tests/unit/templates/torch_models.py) trained on the same
   GPU by torch.optim.AdamW from the same initial weights and batches: per-step loss
   relative error at most 1e-5 (issue 18's bound).
2. offload: the one-rank program of tests/unit/exec/test_rank_program.py (offload a
   parameter, release it, reload it twice, add) run by RankProgram in this process on
   the GPU, through csrc's CudaOffloader (copy stream, pinned host buffers): after
   steps 1 and 2 the parameter is 2w and 4w, bit for bit (doubling is exact in f32).
   With 2 GPUs or more also `stagec run -n 2 --fsdp 2 --offload --memory-limit
   0.000048 --device cuda` (stg-offload's decision, as tests/unit/exec exercises
   --offload) against PyTorch, 1e-5, with its offloaded bytes > 0; with one GPU that
   run is reported as not run (NCCL takes one GPU per rank).
3. profile: `stagec run -n 1 --device cuda --steps 3 --profile PATH` writes a
   measured version 2 profile: every position of the step timed (> 0 us) and P_mem
   read (> 0 bytes). With 2 GPUs or more the FSDP run is profiled instead, and its
   T_c(V) is NCCL's all-gather curve.

Prints a table (check, value, bound, ok) and writes it as JSON (`--json`). Exits 1 if a
check fails; without a GPU (or without a CUDA torch) it prints "gpu_run: no GPU: <why>"
and exits 1 before running anything. `--device cpu` runs the same checks on the CPU
(the script's own test where there is no GPU; not a GPU result).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)  # the parity tests' reference model and token file
sys.path.insert(0, HERE)

TOLERANCE = 1e-5  # issue 18: per-step losses equal to 1e-5 relative
STEPS, SEQ, LR = 20, 8, 1e-2


def require_device(kind: str) -> str:
    """A line naming the device, or SystemExit(1) with "gpu_run: no GPU: ..."."""
    import torch

    import stagec.csrc as csrc

    if kind == "cpu":
        return "CPU (--device cpu: a check of this script, not a GPU result)"
    try:
        count = csrc.require_gpu()
    except (csrc.NoGpuError, csrc.MissingExtensionError) as error:
        print(f"gpu_run: {error}", file=sys.stderr)
        raise SystemExit(1) from None
    if not torch.cuda.is_available():
        print(f"gpu_run: no GPU: torch {torch.__version__} is not a CUDA build (csrc sees {count} GPU(s)); "
              "install a CUDA torch", file=sys.stderr)
        raise SystemExit(1)
    return f"{count} x {torch.cuda.get_device_name(0)}, NCCL {csrc.cuda().nccl_version()}"


def gpus(kind: str) -> int:
    """Ranks the checks may start: one per GPU; on the CPU 2 (the FSDP checks run too)."""
    import stagec.csrc as csrc

    return csrc.gpu_count() if kind == "cuda" else 2


def torch_losses(kind: str, config_path: str, tokens: str, batch: int) -> list[float]:
    """The tiny Llama in plain PyTorch on the device (run_testing.torch_losses, moved)."""
    import torch

    from stagec.frontends.templates import load_config
    from stagec.runtime.exec import Batches
    from tests.unit.exec.run_testing import load_initial_weights
    from tests.unit.templates.torch_models import reference_model

    device = torch.device(kind)
    config = load_config(config_path)
    model = reference_model(config).float()
    load_initial_weights(model)
    model = model.to(device)
    batches = Batches(config, {"input_ids": (batch, SEQ), "rope.angles": (SEQ, 1, config.rotary_dim)}, tokens=tokens)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0)
    losses = []
    for step in range(STEPS):
        data = {k: v.to(device) for k, v in batches.batch(step).items()}
        optimizer.zero_grad()
        loss = model(data["input_ids"].reshape(-1, SEQ), data["labels"].reshape(-1, SEQ), data["rope.angles"])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def stagec_run(kind: str, tmp: str, *args: str) -> dict:
    from stagec.tools.stagec_cli import main

    out = os.path.join(tmp, f"run{len(os.listdir(tmp))}.json")
    code = main(["run", *args, "--device", kind, "--quiet", "--lr", str(LR), "--json", out])
    if code not in (0, None):
        raise RuntimeError(f"stagec run {' '.join(args)} --device {kind} exited {code}")
    with open(out) as f:
        return json.load(f)


def relative_error(got: list[float], expected: list[float]) -> float:
    return max(abs(a - e) / abs(e) for a, e in zip(got, expected, strict=True))


def offload_program(kind: str) -> tuple[bool, str]:
    """Check 2's one-rank program through the device's offloader (module doc)."""
    import torch

    import stagec.csrc as csrc
    from stagec.runtime.exec import RankProgram, initial_weight
    from stagec.runtime.exec.device import CudaDevice, RankDevice
    from tests.unit.exec.test_rank_program import STEP
    from tests.unit.interpreter.interp_testing import parse

    device = CudaDevice(0) if kind == "cuda" else RankDevice()
    program = RankProgram(parse(STEP), {}, csrc.world(), seed=3, device=device)
    w = initial_weight("w", (4,), seed=3).to(device.torch)
    held = []
    for step, factor in ((1, 2), (2, 4)):
        program.step({}, step)
        held.append(torch.equal(program.state.entries[("params", "w", ())][0], factor * w))
    return all(held), type(program.execution.offloader).__name__


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--profile", metavar="FILE", help="keep the measured profile here (bench/results/ for a record)")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="cpu: run the checks on the CPU (this script's own test) (default: %(default)s)")
    args = parser.parse_args()
    machine = require_device(args.device)
    from results_io import write_json

    from tests.unit.exec.run_testing import config_file, parity_tokens

    print(f"gpu_run: {machine}")
    rows: list[dict] = []

    def record(check: str, value, bound: str, ok: bool | None, note: str = "") -> None:
        rows.append({"check": check, "value": value, "bound": bound, "ok": ok, "note": note})

    from pathlib import Path

    with tempfile.TemporaryDirectory(prefix="gpu_run-") as tmp:
        tmp_path = Path(tmp)
        config, tokens = config_file(tmp_path), parity_tokens(tmp_path)
        runs = tmp_path / "runs"
        runs.mkdir()
        common = ["--model", config, "--seq", str(SEQ), "--steps", str(STEPS), "--data", tokens]

        # 1. parity on one GPU
        start = time.perf_counter()
        expected = torch_losses(args.device, config, tokens, batch=1)
        got = stagec_run(args.device, str(runs), "-n", "1", *common)
        error = relative_error(got["losses"], expected)
        record("-n 1 vs torch, 20 AdamW fp32 steps: max relative loss error", f"{error:.2e}", f"<= {TOLERANCE:g}",
               error <= TOLERANCE, f"losses {expected[0]:.4f} -> {expected[-1]:.4f}; median step "
               f"{got['median_step_seconds'] * 1e3:.1f} ms; {time.perf_counter() - start:.0f} s")

        # 2. offload through the device's offloader
        exact, offloader = offload_program(args.device)
        record("offload/reload program (RankProgram in-process): w -> 2w -> 4w", "exact" if exact else "differs",
               "bit for bit", exact, offloader)
        two = gpus(args.device) >= 2
        fsdp = ["-n", "2", "--fsdp", "2"]
        if two:
            expected2 = torch_losses(args.device, config, tokens, batch=2)
            run = stagec_run(args.device, str(runs), *fsdp, "--offload", "--memory-limit", "0.000048",
                             "--profiler", "cost-model", *common)
            error2 = relative_error(run["losses"], expected2)
            moved = run["executed"].get("offloaded bytes", 0)
            record("-n 2 --fsdp 2 --offload vs torch: max relative loss error", f"{error2:.2e}", f"<= {TOLERANCE:g}",
                   error2 <= TOLERANCE and moved > 0, f"{moved} bytes offloaded per step on rank 0")
        else:
            record("-n 2 --fsdp 2 --offload vs torch", "not run", f"<= {TOLERANCE:g}", None,
                   "needs 2 GPUs (one per NCCL rank)")

        # 3. a measured profile
        from stagec.runtime.cost.profile import load_profile

        profile_path = os.path.abspath(args.profile) if args.profile else str(tmp_path / "measured.json")
        profiled = [*fsdp, "--model", config, "--seq", str(SEQ)] if two else ["-n", "1", "--model", config,
                                                                              "--seq", str(SEQ)]
        stagec_run(args.device, str(runs), *profiled, "--steps", "3", "--profile", profile_path)
        profile = load_profile(profile_path)
        positions = profile.schedule.positions
        timed = all(p.micros > 0 for p in positions)
        mem = min(p.mem_before_bytes for p in positions)
        curve = {n: len(s) for (kind, n), s in profile.collectives.items() if kind == "all_gather"}
        record(f"--profile ({'-n 2 --fsdp 2' if two else '-n 1'}): positions timed, min P_mem",
               f"{len(positions)} positions, min P_mem {mem} B", "every position > 0 us and > 0 B",
               timed and mem > 0 and (bool(curve) or not two),
               f"T_c(V) points: {curve or 'none (one rank: no all-gather group)'}; {profile_path if args.profile else 'not kept'}")

    width = max(len(r["check"]) for r in rows)
    print(f"{'check':<{width}}  {'value':<28}  {'bound':<30}  ok")
    for r in rows:
        ok = {True: "ok", False: "FAIL", None: "-"}[r["ok"]]
        print(f"{r['check']:<{width}}  {str(r['value']):<28}  {r['bound']:<30}  {ok}  {r['note']}")
    if args.json:
        write_json(args.json, {"bench": "gpu_run", "device": args.device, "machine": machine,
                               "platform": platform.platform(), "checks": rows})
        print(f"written {args.json}")
    if any(r["ok"] is False for r in rows):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
