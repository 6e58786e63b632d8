"""The program every rank runs in test_mpi.py (launched by mpiexec, not collected by pytest).

`python mpi_ranks.py collectives`: every operation of the MPI communicator checked
against numpy on every rank; prints "rank R ok" at the end. `python mpi_ranks.py
raise R`: rank R raises while the others wait in an all-gather (the abort test);
`kill R`: rank R dies of SIGKILL there instead.

Rank r's data are built from r, so each rank computes every other rank's input and the
expected result with numpy, independently of the runtime.
"""

from __future__ import annotations

import os
import signal
import sys

import numpy as np

import stagec.csrc as csrc


def data(rank: int, count: int, dtype=np.float64) -> np.ndarray:
    # Distinct on every rank and element: rank r holds 1000 r + 0, 1, ..., count - 1.
    return (1000 * rank + np.arange(count)).astype(dtype)


def check(name: str, got: np.ndarray, expected: np.ndarray) -> None:
    if not np.array_equal(got, expected):
        raise AssertionError(f"{name}: got {got[:8]}..., expected {expected[:8]}...")


def collectives(comm) -> None:
    r, n = comm.rank, comm.size
    m = 6  # elements per rank's block

    # all-gather: the concatenation of every rank's block, in rank order.
    out = np.zeros(n * m)
    comm.all_gather(data(r, m), out).wait()
    check("all_gather", out, np.concatenate([data(j, m) for j in range(n)]))

    # reduce-scatter: block r of the elementwise sum of every rank's n*m input.
    total = sum(data(j, n * m) for j in range(n))
    out = np.zeros(m)
    comm.reduce_scatter(data(r, n * m), out, "sum").wait()
    check("reduce_scatter sum", out, total[r * m:(r + 1) * m])
    out = np.zeros(m)
    comm.reduce_scatter(data(r, n * m), out, "avg").wait()
    check("reduce_scatter avg", out, total[r * m:(r + 1) * m] / n)
    out = np.zeros(m, dtype=np.float32)
    comm.reduce_scatter(data(r, n * m, np.float32), out, "max").wait()
    check("reduce_scatter max", out, data(n - 1, n * m, np.float32)[r * m:(r + 1) * m])

    # all-reduce, in place, in several dtypes.
    for dtype in (np.float32, np.float64, np.int32, np.int64):
        x = data(r, m, dtype)
        comm.all_reduce(x, "sum").wait()
        check(f"all_reduce {np.dtype(dtype).name}", x, sum(data(j, m, dtype) for j in range(n)))
    x = data(r, m)
    comm.all_reduce(x, "min").wait()
    check("all_reduce min", x, data(0, m))

    # all-to-all: output block j on rank r is block r of rank j's input.
    out = np.zeros(n * m)
    comm.all_to_all(data(r, n * m), out).wait()
    check("all_to_all", out, np.concatenate([data(j, n * m)[r * m:(r + 1) * m] for j in range(n)]))

    # broadcast from the last rank.
    x = data(r, m)
    comm.broadcast(x, n - 1).wait()
    check("broadcast", x, data(n - 1, m))

    # send/recv around the ring: rank r receives rank r-1's data.
    right, left = (r + 1) % n, (r - 1) % n
    got = np.zeros(m)
    receiving = comm.recv(got, left, tag=7)
    sending = comm.send(data(r, m), right, tag=7)
    sending.wait()
    receiving.wait()
    check("send/recv", got, data(left, m))

    # Asynchrony: two operations in flight at once, waited in the opposite order; the
    # input of the first is a temporary that only its handle holds.
    gathered = np.zeros(n * 4096)
    reduced = data(r, 4096)
    first = comm.all_gather(data(r, 4096), gathered)
    second = comm.all_reduce(reduced, "sum")
    assert not first.consumed and isinstance(first.test(), bool)
    second.wait()
    first.wait()
    check("overlapped all_gather", gathered, np.concatenate([data(j, 4096) for j in range(n)]))
    check("overlapped all_reduce", reduced, sum(data(j, 4096) for j in range(n)))
    assert first.consumed and second.consumed
    try:
        first.wait()
    except csrc.CommError as error:
        assert "already waited" in str(error), error
    else:
        raise AssertionError("a second wait on a handle did not raise")

    # A group: a bucket's all-gather, reduce-scatter, all-reduce and a ring exchange as
    # one operation with one handle.
    cpu = csrc.cpu()
    ag, rs, ar, ring = np.zeros(n * m), np.zeros(m), data(r, m), np.zeros(m)
    handle = comm.group([
        cpu.Op.all_gather(data(r, m), ag),
        cpu.Op.reduce_scatter(data(r, n * m), rs, "sum"),
        cpu.Op.all_reduce(ar, "max"),
        cpu.Op.send(data(r, m), right, 3),
        cpu.Op.recv(ring, left, 3),
    ])
    assert handle.description.startswith("group of 5 ["), handle.description
    handle.wait()
    check("group all_gather", ag, np.concatenate([data(j, m) for j in range(n)]))
    check("group reduce_scatter", rs, total[r * m:(r + 1) * m])
    check("group all_reduce max", ar, data(n - 1, m))
    check("group recv", ring, data(left, m))

    # A split: the even and the odd ranks (a mesh axis of 2 groups of n/2).
    half = comm.split(r % 2, r)
    assert (half.rank, half.size) == (r // 2, n // 2), (half.rank, half.size)
    x = data(r, m)
    half.all_reduce(x, "sum").wait()
    check("split all_reduce", x, sum(data(j, m) for j in range(r % 2, n, 2)))

    # A malformed call fails on the calling rank with its rank and the op in the message.
    try:
        comm.all_gather(data(r, m), np.zeros(m))
    except csrc.CommError as error:
        assert f"rank {r} of {n}" in str(error) and "all_gather" in str(error), error
    else:
        raise AssertionError("an all_gather into a too small output did not raise")

    # Offload and reload through the copy thread: the bytes come back unchanged.
    offloader = cpu.HostOffloader()
    weights = data(r, 10_000)
    copy, offloading = offloader.offload(weights)
    offloading.wait()
    weights[:] = 0
    offloader.reload(copy, weights).wait()
    check("offload/reload", weights, data(r, 10_000))


def main() -> None:
    comm = csrc.world()
    with csrc.abort_on_failure(comm):
        if sys.argv[1] == "collectives":
            collectives(comm)
        elif sys.argv[1] == "raise":
            failing = int(sys.argv[2])
            if comm.rank == failing:
                comm.activity = "the test's forward step"
                raise ValueError("planted failure")
            # The other ranks wait for the failing rank in a collective it never joins.
            comm.all_gather(data(comm.rank, 4), np.zeros(4 * comm.size)).wait()
            raise AssertionError("an all_gather completed without the failing rank")
        elif sys.argv[1] == "kill":
            if comm.rank == int(sys.argv[2]):
                os.kill(os.getpid(), signal.SIGKILL)
            comm.all_gather(data(comm.rank, 4), np.zeros(4 * comm.size)).wait()
            raise AssertionError("an all_gather completed without the killed rank")
        print(f"rank {comm.rank} ok", flush=True)


if __name__ == "__main__":
    main()
