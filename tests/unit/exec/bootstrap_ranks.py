"""The program every rank runs in test_run_device.py's bootstrap test (launched by
mpiexec, not collected by pytest): a GPU rank's communicator set-up (device.py
`CudaDevice.communicators`, through comm.py `Communicators`) over a 2 x 2 mesh, with
stand-in ids and stand-in communicators in place of NCCL's, so the MPI exchange of the
unique ids runs on CPU ranks.

A stand-in id is the maker's world rank and how many ids it has made, so the test can
tell which rank made the id a member holds. `python bootstrap_ranks.py DIR`: each rank
writes DIR/rank<r>.json (the ranks' stdout lines may interleave):

    {"dp": {"members": [...], "position": p, "size": n, "id": "..."}, "dp+tp": ..., "tp": ...}
"""

from __future__ import annotations

import json
import os
import sys

import stagec.csrc as csrc
from stagec.runtime.exec.comm import Communicators
from stagec.runtime.exec.device import UNIQUE_ID_BYTES, CudaDevice
from stagec.runtime.interpreter.values import SimulatedMesh


class StandInCommunicator:
    def __init__(self, unique_id: bytes, position: int, size: int):
        self.unique_id, self.position, self.size = unique_id, position, size


class StandInGpu(CudaDevice):
    """CudaDevice with csrc's NCCL calls replaced; its MPI exchange is the real one."""

    def __init__(self, rank: int):  # no torch.cuda: this machine has no GPU
        self.rank, self.made = rank, 0

    def unique_id(self) -> bytes:
        self.made += 1
        return f"{self.rank}:{self.made}".encode().ljust(UNIQUE_ID_BYTES, b"\0")

    def communicator(self, unique_id: bytes, position: int, size: int):
        return StandInCommunicator(unique_id, position, size)


def main() -> None:
    world = csrc.world()
    mesh = SimulatedMesh(("dp", "tp"), (2, 2))
    sets = [frozenset({"dp"}), frozenset({"tp"}), frozenset({"dp", "tp"})]
    comms = Communicators(world, mesh, world.rank, sets, StandInGpu(world.rank))
    out = {}
    for axes in sets:
        group = comms.group(sorted(axes))
        comm = group.comm
        out["+".join(sorted(axes))] = {"members": list(group.members), "position": comm.position, "size": comm.size,
                                       "id": comm.unique_id.rstrip(b"\0").decode()}
    with open(os.path.join(sys.argv[1], f"rank{world.rank}.json"), "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
