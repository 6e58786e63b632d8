"""Where one rank of `stagec run` computes and how it moves bytes (issue 18 item 2;
docs/run.md "GPUs"): on the CPU with csrc's MPI communicators and HostOffloader, or
on one GPU with csrc's NCCL communicators and CudaOffloader.

A `RankDevice` is made once per rank (worker.py: `rank_device(kind, world)`) and
threaded through the lowering (program.py, comm.py, execution.py, state.py, data.py,
profiler.py); nothing else names a device kind. It gives

- `torch`: the torch.device every tensor the rank makes lives on (weights, optimizer
  states, batches, collective outputs, reassembly buffers, a loaded checkpoint);
- `communicators(world, rank, plan)`: this rank's communicator in each group of the
  plan. On the CPU, `world.split` per group, as before. On a GPU, one
  NcclCommunicator per group: its unique id is made on the group's first member and
  sent to the others over the MPI world (`distribute_unique_ids`), and its producer
  stream is torch's current stream, so NCCL starts after the compute that made its
  inputs. The MPI world stays for bootstrap, barriers, the loss and the abort path;
- `wait(work)`: the compute waits for a handle. On the CPU the host polls it (comm.py
  `wait`); on a GPU the compute stream waits for the handle's event
  (`Work.wait_on_stream`) and the host goes on queueing work;
- `offloader()`: HostOffloader (a copy thread) or CudaOffloader (a copy stream after
  the compute stream, pinned host buffers) for stg.offload / stg.reload;
- `to_host` / `from_host`: point-to-point messages (stg.send/recv, the stages'
  all-reduce) go over the MPI world, through host memory on a GPU rank. NCCL's
  send/recv would queue on one stream per communicator, where a pipeline's buffered
  send waits for the peer's receive behind the rank's own receive (1F1B: stage 0's
  second forward send and its first backward receive), a deadlock the IR's buffered
  semantics do not have;
- `synchronize()`: the host waits for the compute stream (the profiler's op times).

`local_rank()` reads the MPI launcher's local rank; a GPU rank uses GPU
`local_rank % gpu_count()`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import numpy as np
import torch

__all__ = ["BOOTSTRAP_TAG", "DEVICES", "CudaDevice", "RankDevice", "distribute_unique_ids", "group_ids", "local_rank",
           "rank_device"]

DEVICES = ("cpu", "cuda")
# the NCCL unique ids' messages over the MPI world: a tag no stg.send uses (theirs are
# small) and not the stages' all-reduce's (execution.py, 30000)
BOOTSTRAP_TAG = 30001
UNIQUE_ID_BYTES = 128  # sizeof(ncclUniqueId)
# where MPI launchers put a process's rank on its host (MPICH's Hydra, Open MPI, PMI)
LOCAL_RANK_VARIABLES = ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK")


def local_rank(rank: int, environ=os.environ) -> int:
    """This process's rank among the job's processes on its host: the launcher's
    variable, else the world rank (one host)."""
    for name in LOCAL_RANK_VARIABLES:
        value = environ.get(name, "")
        if value.isdigit():
            return int(value)
    return rank


def distribute_unique_ids(world, rank: int, groups: Sequence[Sequence[int]], make_id: Callable[[], bytes],
                          size: int = UNIQUE_ID_BYTES) -> dict[int, bytes]:
    """{index in `groups`: its id} for the groups this rank is a member of.

    `groups` (members by world rank, first member first) is the same list on every
    rank. Each group's first member calls `make_id()` (`size` bytes) and sends it to
    the other members over `world`; every member ends with the same bytes. The sends
    are nonblocking, so a rank that is first of one group and a plain member of
    another cannot block either exchange, and one tag serves every group: MPI keeps
    the order of one sender's messages to one receiver, and every rank walks the
    groups in the same order."""
    from stagec.runtime.exec.comm import wait

    ids: dict[int, bytes] = {}
    sends = []
    for index, members in enumerate(groups):
        if rank not in members:
            continue
        if members[0] == rank:
            made = make_id()
            if len(made) != size:
                raise ValueError(f"a unique id of {len(made)} bytes; the communicators need {size}")
            ids[index] = made
            buffer = np.frombuffer(made, dtype=np.uint8).copy()
            sends += [world.send(buffer, peer, BOOTSTRAP_TAG) for peer in members[1:]]
        else:
            buffer = np.empty(size, dtype=np.uint8)
            wait(world.recv(buffer, members[0], BOOTSTRAP_TAG))
            ids[index] = buffer.tobytes()
    for work in sends:
        wait(work)
    return ids


def group_ids(world, rank: int, plan: Sequence[Sequence[Sequence[int]]],
              make_id: Callable[[], bytes]) -> list[tuple[tuple[int, ...], bytes]]:
    """For each entry of `plan` (the groups along one set of mesh axes; every rank is
    in one group of each; the same plan on every rank), this rank's group (its members
    by world rank) and the group's unique id, exchanged by `distribute_unique_ids`."""
    groups = [tuple(g) for entry in plan for g in entry]
    ids = distribute_unique_ids(world, rank, groups, make_id)
    mine = [(groups[i], ids[i]) for i in sorted(ids)]
    if len(mine) != len(plan):
        raise ValueError(f"rank {rank} is in {len(mine)} groups of a plan of {len(plan)} sets of axes; "
                         "each set's groups must hold every rank once")
    return mine


class RankDevice:
    """The CPU of a rank (module doc); `CudaDevice` is a GPU's."""

    kind = "cpu"

    def __init__(self):
        self.torch = torch.device("cpu")

    def __repr__(self) -> str:
        return str(self.torch)

    def communicators(self, world, rank: int, plan: Sequence[Sequence[Sequence[int]]]) -> list:
        """This rank's communicator for each entry of `plan` (the groups along one set of
        mesh axes, every rank in one of them; the same plan on every rank). MPI splits
        the world per entry, every rank taking part in each split."""
        comms = []
        for groups in plan:
            for color, group in enumerate(groups):
                if rank in group:
                    comms.append(world.split(color, rank) if len(group) < world.size else world)
        return comms

    def wait(self, work) -> None:
        from stagec.runtime.exec.comm import wait

        wait(work)

    def ops(self):
        """csrc's `Op` constructors for a group call on this device's communicators."""
        from stagec import csrc

        return csrc.cpu().Op

    def offloader(self):
        from stagec import csrc

        return csrc.cpu().HostOffloader()

    def to_host(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor.contiguous()

    def from_host(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor

    def synchronize(self) -> None:
        pass


class CudaDevice(RankDevice):
    """GPU `index` of this host (module doc)."""

    kind = "cuda"

    def __init__(self, index: int):
        self.index = index
        self.torch = torch.device("cuda", index)
        torch.cuda.set_device(self.torch)

    def _stream(self) -> int:
        return torch.cuda.current_stream(self.torch).cuda_stream

    def communicators(self, world, rank: int, plan: Sequence[Sequence[Sequence[int]]]) -> list:
        # every rank creates its communicators in the plan's order: ncclCommInitRank
        # waits for the group's members, each of which reaches it after its earlier ones
        return [self.communicator(unique_id, members.index(rank), len(members))
                for members, unique_id in group_ids(world, rank, plan, self.unique_id)]

    def unique_id(self) -> bytes:
        from stagec import csrc

        return csrc.cuda().unique_id()

    def communicator(self, unique_id: bytes, position: int, size: int):
        """The NCCL communicator of one group, at `position` among its `size` members."""
        from stagec import csrc

        comm = csrc.cuda().NcclCommunicator(unique_id, position, size, self.index)
        comm.set_producer_stream(self._stream())
        return comm

    def wait(self, work) -> None:
        work.wait_on_stream(self._stream())

    def ops(self):
        from stagec import csrc

        return csrc.cuda().Op

    def offloader(self):
        from stagec import csrc

        offloader = csrc.cuda().CudaOffloader(self.index)
        offloader.set_producer_stream(self._stream())
        return offloader

    def to_host(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor.to("cpu").contiguous()

    def from_host(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor.to(self.torch)

    def synchronize(self) -> None:
        torch.cuda.current_stream(self.torch).synchronize()


def rank_device(kind: str, world) -> RankDevice:
    """The device of this rank of `world` (module doc): the CPU, or GPU
    `local_rank % gpu_count()`; NoGpuError where there is none."""
    if kind == "cpu":
        return RankDevice()
    if kind != "cuda":
        raise ValueError(f"device {kind!r}: one of {', '.join(DEVICES)}")
    from stagec import csrc

    count = csrc.require_gpu()
    return CudaDevice(local_rank(world.rank) % count)
