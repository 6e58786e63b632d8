"""The communicators one rank's program uses (what NCCL allocates buffers for).

A framework makes one process group - one NCCL communicator - per set of mesh axes
it communicates over (Megatron's tensor-, data-, pipeline-parallel groups), and every
collective over those axes reuses it. So a rank holds:

- one *collective* communicator per distinct set of mesh axes of its collectives
  (all-reduce, all-gather, reduce-scatter, all-to-all, broadcast, and the all-reduces a
  vocab-parallel cross-entropy implies), of the product of the axes' sizes ranks;
  a stg.all_reduce_stages (the tied embedding's group) is its own, of its listed
  stages;
- one *point-to-point* communicator per mesh axis of its sends and receives, with
  the distinct peers it talks to.

Groups of one rank make no communicator. A stg.reshard (not yet lowered to
collectives) and a stg.local_slice (no communication) make none either.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from xdsl.dialects import func

from stagec.dialects.kinds import kind_of
from stagec.dialects.stg.comm import AllReduceStagesOp, CollectiveOp, LocalSliceOp, P2POp
from stagec.dialects.stg.model_ops import CrossEntropyOp
from stagec.passes.analysis.liveness import AccountingError, Evaluator


@dataclass(frozen=True)
class Communicator:
    """One NCCL communicator of a rank: `ranks` members; `peers` the ranks it sends to
    or receives from (point-to-point), 0 for a collective one."""

    name: str  # its mesh axes: "[tp]", "[pp] p2p", "[pp] among 0,3"
    ranks: int
    point_to_point: bool = False
    peers: int = 0

    def to_json(self) -> dict:
        return {"name": self.name, "ranks": self.ranks, "point_to_point": self.point_to_point, "peers": self.peers}


# the ops that use a communicator, by kind; a local slice moves nothing (dialects/kinds.py)
_COMMUNICATING = kind_of(AllReduceStagesOp, LocalSliceOp, CollectiveOp, P2POp, CrossEntropyOp)


def communicators_of(function: func.FuncOp, ev: Evaluator) -> tuple[Communicator, ...]:
    """Every communicator `function` (calls inlined) uses, in order of first use."""
    collective: dict[str, int] = {}
    p2p: dict[str, tuple[int, set[int]]] = {}

    def size(axes) -> int:
        missing = [a for a in axes if a not in ev.env]
        if missing:
            raise AccountingError(f"mesh axis '{missing[0]}' has no size; bind it")
        return prod(int(ev.env[a]) for a in axes)

    for op in function.walk():
        kind = _COMMUNICATING(op)
        if kind < 0:
            continue
        if kind == 0:
            among = ",".join(map(str, op.coordinates))
            collective.setdefault(f"[{', '.join(op.axis_names)}] among {among}", len(op.coordinates))
        elif kind == 2:
            axes = tuple(sorted(op.axis_names))
            collective.setdefault(f"[{', '.join(axes)}]", size(axes))
        elif kind == 3:
            name = f"[{op.axis.data}] p2p"
            ranks, peers = p2p.setdefault(name, (size([op.axis.data]), set()))
            peers.add(op.peer.value.data)
        elif kind == 4:
            for _kind, axes, _bytes in op.vocab_collectives():
                axes = tuple(sorted(axes))
                collective.setdefault(f"[{', '.join(axes)}]", size(axes))
    found = [Communicator(n, r) for n, r in collective.items() if r > 1]
    found += [Communicator(n, r, True, len(peers)) for n, (r, peers) in p2p.items() if r > 1]
    return tuple(found)


__all__ = ["Communicator", "communicators_of"]
