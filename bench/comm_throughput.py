"""All-gather and reduce-scatter throughput through csrc against a plain MPI program.

    python bench/comm_throughput.py                          # 4 ranks, 1/16/64 MiB
    python bench/comm_throughput.py --ranks 4 --sizes-mib 4,64 --iters 20 --json out.json

Both sides run the same operations on the same sizes with the same launcher (mpiexec
from the mpich wheel) and the same MPI library: "plain" is a C program compiled with
mpicc at bench time making the calls csrc makes (MPI_Iallgather /
MPI_Ireduce_scatter_block, then MPI_Wait) and, as a second reference, the blocking
MPI_Allgather / MPI_Reduce_scatter_block (MPICH picks other algorithms for those);
"csrc" is stagec.csrc's MpiCommunicator from Python (the nonblocking call and a
handle's wait), so the ratio is what the csrc layer costs. A size is the whole tensor in float32: the all-gather's output,
the reduce-scatter's input. Each side times `--iters` back-to-back operations between
two barriers; plain and csrc alternate for `--rounds` rounds and each keeps its best
round (the machine is shared: compare within one run, not across runs). Bus bandwidth
is nccl-tests' convention, size * (n - 1) / n / time. Prints a table with the ratio
csrc / plain of bandwidth and writes the results as JSON where `--json FILE`
says (bench/results/comm_throughput.json is the recorded one).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

PLAIN_C = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* argv: iters size_bytes...; prints one JSON line per (op, size) on rank 0. */
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  int iters = atoi(argv[1]);
  double start = 0;
  for (int a = 2; a < argc; ++a) {
    long total = atol(argv[a]) / 4; /* float32 elements of the whole tensor */
    long block = total / n;
    float* whole = malloc(total * sizeof(float));
    float* part = malloc(block * sizeof(float));
    for (long i = 0; i < total; ++i) whole[i] = (float)(i % 1000);
    for (long i = 0; i < block; ++i) part[i] = (float)rank;
    /* ops 0, 1: the calls csrc makes (nonblocking, then a wait); 2, 3: the blocking ones. */
    for (int op = 0; op < 4; ++op) {
      for (int i = -2; i < iters; ++i) { /* two warm-up operations first */
        if (i == 0) {
          MPI_Barrier(MPI_COMM_WORLD);
          start = MPI_Wtime();
        }
        MPI_Request request;
        if (op == 0) {
          MPI_Iallgather(part, block, MPI_FLOAT, whole, block, MPI_FLOAT, MPI_COMM_WORLD, &request);
          MPI_Wait(&request, MPI_STATUS_IGNORE);
        } else if (op == 1) {
          MPI_Ireduce_scatter_block(whole, part, block, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &request);
          MPI_Wait(&request, MPI_STATUS_IGNORE);
        } else if (op == 2) {
          MPI_Allgather(part, block, MPI_FLOAT, whole, block, MPI_FLOAT, MPI_COMM_WORLD);
        } else {
          MPI_Reduce_scatter_block(whole, part, block, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        }
      }
      MPI_Barrier(MPI_COMM_WORLD);
      double seconds = (MPI_Wtime() - start) / iters;
      static const char* names[] = {"all_gather", "reduce_scatter", "all_gather blocking",
                                    "reduce_scatter blocking"};
      if (rank == 0)
        printf("{\"op\": \"%s\", \"bytes\": %ld, \"seconds\": %.9f}\n", names[op],
               block * 4 * n, seconds);
    }
    free(whole);
    free(part);
  }
  MPI_Finalize();
  return 0;
}
"""


def csrc_worker(iters: int, sizes: list[int]) -> None:
    """The csrc side, run by every rank under mpiexec (`--worker`)."""
    import numpy as np

    import stagec.csrc as csrc

    comm = csrc.world()
    rank, n = comm.rank, comm.size
    token = np.zeros(1, dtype=np.float32)

    def barrier() -> None:
        comm.all_reduce(token, "sum").wait()

    mpi_time = __import__("time").perf_counter
    for size in sizes:
        block = size // 4 // n
        whole = (np.arange(block * n) % 1000).astype(np.float32)
        part = np.full(block, rank, dtype=np.float32)
        for op in ("all_gather", "reduce_scatter"):
            def once() -> None:
                if op == "all_gather":
                    comm.all_gather(part, whole).wait()
                else:
                    comm.reduce_scatter(whole, part, "sum").wait()
            once()
            once()
            barrier()
            start = mpi_time()
            for _ in range(iters):
                once()
            barrier()
            seconds = (mpi_time() - start) / iters
            if rank == 0:
                print(json.dumps({"op": op, "bytes": block * 4 * n, "seconds": seconds}), flush=True)


def run(command: list[str], ranks: int) -> dict[tuple[str, int], float]:
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if not os.path.exists(mpiexec):
        mpiexec = shutil.which("mpiexec") or sys.exit("comm_throughput: mpiexec not found (pip install mpich)")
    env = dict(os.environ)
    # More ranks than cores: MPICH's shared-memory collectives spin (ARCHITECTURE.md).
    if ranks > (os.cpu_count() or 1):
        env["MPIR_CVAR_DEVICE_COLLECTIVES"] = "none"
    done = subprocess.run([mpiexec, "-n", str(ranks), *command], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"comm_throughput: {' '.join(command[:2])} failed:\n{done.stdout}{done.stderr}")
    results = {}
    for line in done.stdout.splitlines():
        row = json.loads(line)
        results[(row["op"], row["bytes"])] = row["seconds"]
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--sizes-mib", default="1,16,64", help="whole-tensor sizes in MiB, comma separated")
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE (bench/results/ holds the recorded ones; default: print only)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    try:
        sizes = [int(float(s) * 2**20) for s in args.sizes_mib.split(",")]
    except ValueError:
        print(f"comm_throughput: --sizes-mib {args.sizes_mib!r} is not a list of numbers (e.g. 1,16,64)", file=sys.stderr)
        sys.exit(2)
    if args.worker:
        csrc_worker(args.iters, sizes)
        return
    if args.ranks < 2 or args.iters < 1 or args.rounds < 1:
        print("comm_throughput: --ranks must be at least 2, --iters and --rounds at least 1", file=sys.stderr)
        sys.exit(2)
    # Every size must split into whole float32 blocks per rank, as both sides assume.
    sizes = [s // (4 * args.ranks) * 4 * args.ranks for s in sizes]

    mpicc = os.path.join(os.path.dirname(sys.executable), "mpicc")
    if not os.path.exists(mpicc):
        mpicc = shutil.which("mpicc") or sys.exit("comm_throughput: mpicc not found (pip install mpich)")
    with tempfile.TemporaryDirectory() as folder:
        source = os.path.join(folder, "plain_mpi.c")
        binary = os.path.join(folder, "plain_mpi")
        with open(source, "w") as stream:
            stream.write(PLAIN_C)
        subprocess.run([mpicc, "-O2", "-o", binary, source], check=True)
        plain_args = [binary, str(args.iters), *map(str, sizes)]
        csrc_args = [sys.executable, os.path.abspath(__file__), "--worker", "--iters", str(args.iters),
                     "--sizes-mib", ",".join(str(s / 2**20) for s in sizes)]
        best: dict[str, dict] = {"plain": {}, "csrc": {}}
        for _ in range(args.rounds):
            for side, command in (("plain", plain_args), ("csrc", csrc_args)):
                for key, seconds in run(command, args.ranks).items():
                    best[side][key] = min(seconds, best[side].get(key, float("inf")))

    n = args.ranks
    rows = []
    print(f"{'op':<15}{'MiB':>7}{'plain ms':>10}{'csrc ms':>10}{'plain GB/s':>11}{'csrc GB/s':>10}"
          f"{'ratio':>7}{'blocking ms':>13}{'ratio':>7}")
    for (op, size), mine in sorted(best["csrc"].items()):
        plain = best["plain"][(op, size)]
        blocking = best["plain"][(op + " blocking", size)]
        bus = size * (n - 1) / n
        row = {"op": op, "bytes": size, "plain_seconds": plain, "csrc_seconds": mine,
               "plain_blocking_seconds": blocking,
               "plain_busbw_gbps": bus / plain / 1e9, "csrc_busbw_gbps": bus / mine / 1e9,
               "ratio": plain / mine, "ratio_to_blocking": blocking / mine}
        rows.append(row)
        print(f"{op:<15}{size / 2**20:>7.2f}{plain * 1e3:>10.3f}{mine * 1e3:>10.3f}"
              f"{row['plain_busbw_gbps']:>11.2f}{row['csrc_busbw_gbps']:>10.2f}{row['ratio']:>7.3f}"
              f"{blocking * 1e3:>13.3f}{row['ratio_to_blocking']:>7.3f}")
    doc = {
        "bench": "comm_throughput",
        "what": "csrc MpiCommunicator vs a plain MPI C program, same sizes, launcher and library",
        "ranks": n, "iters": args.iters, "rounds": args.rounds,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "ratio_is": "csrc bandwidth / plain bandwidth, same MPI calls (>= 0.9 is the goal, issue 18); "
                    "ratio_to_blocking: against the blocking calls",
        "results": rows,
    }
    sys.path.insert(0, HERE)
    from results_io import write_json

    if args.json:
        write_json(args.json, doc)
    print(f"written {args.json}")


if __name__ == "__main__":
    main()
