"""Device memory as a real run reserves it: the live bytes, plus what no trace shows.

STAGE's peak (stage.md §V-B) and `MemoryReport.peak_bytes` are the live tensors'
bytes. A PyTorch process holds more, each part modelled from its source, none fitted
(docs/memory.md lists every parameter):

- **allocator slack**: the caching allocator (allocator.py) hands out rounded blocks
  from cached segments and never returns a segment; replaying the step's
  allocations and frees through it gives the segments' high-water mark, whose excess
  over the live peak (and the library workspaces) is the slack;
- **library workspaces**: cuBLAS's and cuBLASLt's workspaces, allocated through the
  caching allocator at the first GEMM and kept (one each: one compute stream);
- **CUDA context**: the context, its loaded kernels and library handles, outside the
  allocator (the hardware description's `runtime_memory.cuda_context_bytes`);
- **NCCL buffers**: each communicator the rank uses (communicators.py) holds, per
  channel, one connection's buffers for the Simple, LL and LL128 protocols: a
  collective communicator `nccl_ring_channels` channels (a ring: one connection in and
  one out per channel, each buffer held on one side), a point-to-point one
  `nccl_p2p_channels_per_peer` channels per peer.

`reserved_memory(report, hardware)` is the one entry point; `stagec stats` prints its
result and the simulator reports the same peak.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from stagec.passes.analysis.allocator import AllocatorStats, CachingAllocator
from stagec.passes.analysis.communicators import Communicator
from stagec.passes.analysis.memory import MemoryReport, StepAllocations
from stagec.runtime.cost.hardware_description import Hardware, RuntimeMemory

# Steps replayed. A second step starts from the first one's cached segments and could
# need more (its free blocks are split differently), but on every Table V row a
# second and a third step add no segment (tests/unit/analysis/test_table5_memory.py
# pins it), so one step is the reserved peak of a long run and keeps `stagec stats`
# fast; pass steps=2 to check another program.
REPLAY_STEPS = 1


@dataclass(frozen=True)
class ReservedMemory:
    """Peak device memory of one rank as the process holds it, and its parts (bytes):
    `peak_bytes` = `live_peak_bytes` + `allocator_slack_bytes` +
    `library_workspace_bytes` + `cuda_context_bytes` + `nccl_bytes`;
    `allocator_reserved_bytes` is the caching allocator's segments (live peak, slack
    and workspaces together)."""

    peak_bytes: int
    live_peak_bytes: int
    allocator_reserved_bytes: int
    allocator_slack_bytes: int
    library_workspace_bytes: int
    cuda_context_bytes: int
    nccl_bytes: int
    allocator: AllocatorStats
    communicators: tuple[Communicator, ...]
    nccl_by_communicator: tuple[int, ...]  # bytes of each communicator, in order

    @property
    def parts(self) -> dict[str, int]:
        return {
            "live_peak": self.live_peak_bytes,
            "allocator_slack": self.allocator_slack_bytes,
            "library_workspaces": self.library_workspace_bytes,
            "cuda_context": self.cuda_context_bytes,
            "nccl_buffers": self.nccl_bytes,
        }

    def to_json(self) -> dict:
        return {
            "peak_bytes": self.peak_bytes,
            "parts_bytes": self.parts,
            "allocator_reserved_bytes": self.allocator_reserved_bytes,
            "allocator_segments": self.allocator.segments,
            "communicators": [
                c.to_json() | {"nccl_bytes": b} for c, b in zip(self.communicators, self.nccl_by_communicator)
            ],
        }


def nccl_bytes(communicator: Communicator, runtime: RuntimeMemory) -> int:
    """NCCL's device buffers for one communicator on one rank (module doc)."""
    if communicator.point_to_point:
        channels = communicator.peers * runtime.nccl_p2p_channels_per_peer
    else:
        channels = runtime.nccl_ring_channels
    return channels * runtime.nccl_connection_bytes


def replay(allocations: StepAllocations, workspaces: Sequence[int] = (), steps: int = REPLAY_STEPS) -> AllocatorStats:
    """The caching allocator after the persistent tensors, then `workspaces`, then
    `steps` steps of the transient buffers: at each position the buffers born there
    are allocated (in the walk's order, each on its stream's pool), then those whose
    last use it is are freed."""
    alloc = CachingAllocator()
    states: dict[int, list] = {}
    for size in allocations.persistent:
        states.setdefault(size, []).append(alloc.malloc(size))
    for size in workspaces:
        if size:
            alloc.malloc(size)
    spans, gaps = allocations.spans, allocations.gaps
    n, g = len(spans), len(gaps)
    # event keys: 2p for an allocation at position p, 2p + 1 for a free after it
    keys = np.concatenate((2 * spans[:, 0], 2 * spans[:, 1] + 1, 2 * gaps[:, 0] - 1, 2 * gaps[:, 1] + 2))
    order = np.argsort(keys, kind="stable").tolist()
    sizes = np.concatenate((spans[:, 2], spans[:, 2], gaps[:, 2], gaps[:, 2])).tolist()
    streams = allocations.streams.tolist() if len(allocations.streams) else [0] * n
    handles: list = [None] * n
    away: list = [None] * g  # the state each gap took off the device (None: no such tensor)
    malloc, free = alloc.malloc, alloc.free
    for _ in range(steps):
        for e in order:
            if e < n:
                handles[e] = malloc(sizes[e], streams[e])
            elif e < 2 * n:
                free(handles[e - n])
            elif e < 2 * n + g:  # an offloaded state leaves the device
                kept = states.get(sizes[e])
                away[e - 2 * n] = kept.pop() if kept else None
                if away[e - 2 * n] is not None:
                    free(away[e - 2 * n])
            elif away[e - 2 * n - g] is not None:  # and comes back
                states[sizes[e]].append(malloc(sizes[e]))
    return alloc.stats()


def reserved_memory(
    report: MemoryReport,
    hardware: Hardware,
    communicators: Sequence[Communicator] | None = None,
    *,
    steps: int = REPLAY_STEPS,
) -> ReservedMemory:
    """The reserved peak of the rank `report` describes, on `hardware` (its
    `runtime_memory`), with its communicators (default: the ones the report found in
    the program)."""
    runtime = hardware.runtime_memory
    comms = tuple(report.communicators if communicators is None else communicators)
    workspaces = (runtime.cublas_workspace_bytes, runtime.cublaslt_workspace_bytes)
    stats = replay(report.allocations, workspaces, steps)
    library = sum(workspaces)
    per_comm = tuple(nccl_bytes(c, runtime) for c in comms)
    nccl = sum(per_comm)
    slack = stats.reserved - report.peak_bytes - library
    return ReservedMemory(
        peak_bytes=stats.reserved + runtime.cuda_context_bytes + nccl,
        live_peak_bytes=report.peak_bytes,
        allocator_reserved_bytes=stats.reserved,
        allocator_slack_bytes=slack,
        library_workspace_bytes=library,
        cuda_context_bytes=runtime.cuda_context_bytes,
        nccl_bytes=nccl,
        allocator=stats,
        communicators=comms,
        nccl_by_communicator=per_comm,
    )


__all__ = ["REPLAY_STEPS", "ReservedMemory", "nccl_bytes", "replay", "reserved_memory"]
