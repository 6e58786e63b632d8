"""The NCCL path of csrc on one GPU, and the all-gather time curve T_c(V).

    python bench/gpu_smoke.py                              # writes the JSON where --json says (bench/results/gpu_smoke.json is the recorded one)
    python bench/gpu_smoke.py --json out.json --max-mib 256 --iters 20

For a machine with a GPU (the `device` tool's, or any CUDA machine with stagec
installed). Checks, each against numpy on the host:
- NCCL with one rank: all-reduce (sum, avg), all-gather, reduce-scatter, broadcast and
  a group of them on device buffers from csrc's device pool (one rank: every result
  equals the input, bit for bit);
- offload/reload on the copy stream through pinned host buffers: the tensor is
  overwritten on the device between the two, and the reload restores it;
- T_c(V): the all-gather's time for whole-tensor sizes V = 4 KiB, 16 KiB, ... up to
  `--max-mib`, each the mean of `--iters` operations issued back to back (timed from
  the host: the last handle's wait covers them all, queued on one stream), the profile
  curve DeepCompile's passes read (deepcompile.md §4).
Prints the checks and the curve, writes them as JSON (`--json`). Without a GPU it prints
"gpu_smoke: no GPU: <why>" and exits 1.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np

import stagec.csrc as csrc

HERE = os.path.dirname(os.path.abspath(__file__))


def to_host(cuda, device_array, count: int) -> np.ndarray:
    # A device pool's array is a bare DLPack object (no shape attribute): sizes travel
    # beside it.
    host = np.empty(count, dtype=np.float32)
    cuda.copy_to_host(host, device_array)
    return host


def checks(cuda, pool, comm) -> list[dict]:
    results = []

    def record(name: str, got: np.ndarray, expected: np.ndarray) -> None:
        ok = bool(np.array_equal(got, expected))
        results.append({"check": name, "ok": ok})
        print(f"  {'ok  ' if ok else 'FAIL'} {name}")

    n = 1 << 20
    values = (np.arange(n) % 977).astype(np.float32)  # exact in float32 sums of one rank
    x = pool.acquire((n,), "float32")
    out = pool.acquire((n,), "float32")

    for op in ("sum", "avg", "max"):
        cuda.copy_to_device(x, values)
        comm.all_reduce(x, op).wait()
        record(f"all_reduce {op} (one rank: unchanged)", to_host(cuda, x, n), values)
    cuda.copy_to_device(x, values)
    cuda.fill(out, -1.0)
    comm.all_gather(x, out).wait()
    record("all_gather (one rank: a copy)", to_host(cuda, out, n), values)
    cuda.fill(out, -1.0)
    comm.reduce_scatter(x, out, "sum").wait()
    record("reduce_scatter (one rank: a copy)", to_host(cuda, out, n), values)
    comm.broadcast(x, 0).wait()
    record("broadcast from 0", to_host(cuda, x, n), values)
    cuda.fill(out, -1.0)
    y = pool.acquire((n,), "float32")
    cuda.copy_to_device(y, values)
    # Separate buffers: the ops of a group may run concurrently.
    group = comm.group([cuda.Op.all_gather(x, out), cuda.Op.all_reduce(y, "sum")])
    group.wait()
    record("group: all_gather", to_host(cuda, out, n), values)
    record("group: all_reduce", to_host(cuda, y, n), values)

    offloader = cuda.CudaOffloader(comm.device)
    copy, offloading = offloader.offload(x)
    offloading.wait()
    cuda.fill(x, 0.0)
    cuda.synchronize(comm.device)
    record("device overwritten before reload", to_host(cuda, x, n), np.zeros(n, np.float32))
    offloader.reload(copy, x).wait()
    record("offload/reload round trip (copy stream, pinned)", to_host(cuda, x, n), values)
    record("pinned copy holds the bytes", copy.to_numpy("float32"), values)
    return results


def all_gather_curve(cuda, pool, comm, max_bytes: int, iters: int) -> list[dict]:
    curve = []
    size = 4096
    while size <= max_bytes:
        elements = size // 4
        x = pool.acquire((elements // comm.size,), "float32")
        out = pool.acquire((elements,), "float32")
        for _ in range(3):
            comm.all_gather(x, out).wait()
        cuda.synchronize(comm.device)
        start = time.perf_counter()
        handles = [comm.all_gather(x, out) for _ in range(iters)]
        handles[-1].wait()  # one stream: the last completes after all the others
        seconds = (time.perf_counter() - start) / iters
        curve.append({"bytes": size, "seconds": seconds, "gbps": size / seconds / 1e9})
        print(f"  {size:>12} B  {seconds * 1e6:>10.1f} us  {size / seconds / 1e9:>8.2f} GB/s")
        del handles, x, out
        size *= 4
    return curve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE (bench/results/ holds the recorded ones; default: print only)")
    parser.add_argument("--max-mib", type=float, default=1024)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--device", type=int, default=0)
    args = parser.parse_args()
    if args.max_mib <= 0 or args.iters < 1:
        print("gpu_smoke: --max-mib must be positive and --iters at least 1", file=sys.stderr)
        sys.exit(2)
    try:
        count = csrc.require_gpu()
        cuda = csrc.cuda()
        comm = cuda.NcclCommunicator(cuda.unique_id(), 0, 1, args.device)
        pool = cuda.device_pool(args.device)
    except csrc.NoGpuError as error:
        print(f"gpu_smoke: {error}", file=sys.stderr)
        sys.exit(1)
    print(f"NCCL {cuda.nccl_version()}, {count} GPU(s), rank 0 of 1 on GPU {args.device}")
    print("checks:")
    results = checks(cuda, pool, comm)
    print("all-gather T_c(V):")
    curve = all_gather_curve(cuda, pool, comm, int(args.max_mib * 2**20), args.iters)
    doc = {
        "bench": "gpu_smoke",
        "nccl_version": cuda.nccl_version(),
        "gpus": count,
        "ranks": 1,
        "machine": {"platform": platform.platform()},
        "checks": results,
        "all_gather_curve": curve,
        "pool": pool.stats(),
    }
    sys.path.insert(0, HERE)
    from results_io import write_json

    if args.json:
        write_json(args.json, doc)
    print(f"written {args.json}")
    if not all(r["ok"] for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
