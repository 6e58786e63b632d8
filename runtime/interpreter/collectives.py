"""Communication across simulated ranks.

A collective runs within each communicator group along its mesh axes. Seen from the
group, all_gather, reduce_scatter, all_reduce, all_to_all and reshard each assemble the
tensor the group holds in the input's layout and cut it again in the result's
(values.regroup); broadcast copies the root member's local. Send and recv pair up
through a Mailbox keyed by (sender, receiver, tag), first in first out.

An async op returns a Token carrying its result; stg.wait opens it (memory.py).
"""

from __future__ import annotations

import threading
from collections import deque

import torch

from stagec.dialects.stg.attributes import TokenType
from stagec.dialects.stg.comm import (
    AllGatherOp,
    AllReduceOp,
    AllReduceStagesOp,
    AllToAllOp,
    BroadcastOp,
    CollectiveOp,
    LocalSliceOp,
    RecvOp,
    ReduceScatterOp,
    ReshardOp,
    SendOp,
)
from stagec.runtime.interpreter.errors import InterpreterError
from stagec.runtime.interpreter.registry import implements
from stagec.runtime.interpreter.values import (
    Layout,
    PerRank,
    Token,
    groups_within,
    regroup,
)


class Mailbox:
    """Messages in flight: a FIFO queue per (sender, receiver, tag).

    Sends are buffered (they never wait). Programs placed on different ranks (pipeline
    stages) run in threads: a receive waits for its send, and when every running
    program waits for a message nobody has posted, the run is deadlocked and each
    waiting receive fails naming what it waited for.
    """

    def __init__(self, programs: int = 1):
        self._lock = threading.Condition()
        self._queues: dict[tuple[int, int, int], deque[torch.Tensor]] = {}
        self._running = programs
        self._waiting: dict[int, tuple[int, int, int]] = {}
        self._failed = False

    def post(self, key: tuple[int, int, int], tensor: torch.Tensor) -> None:
        with self._lock:
            self._queues.setdefault(key, deque()).append(tensor)
            self._lock.notify_all()

    def take(self, key: tuple[int, int, int]) -> torch.Tensor:
        me = threading.get_ident()
        with self._lock:
            while not self._queues.get(key):
                if self._failed:
                    raise InterpreterError("stopped: another program of this run failed", stopped=True)
                self._waiting[me] = key
                if len(self._waiting) == self._running and not any(self._queues.get(k) for k in self._waiting.values()):
                    waits = sorted((r, s, g) for s, r, g in self._waiting.values())
                    del self._waiting[me]
                    self._failed = True
                    self._lock.notify_all()
                    raise InterpreterError(
                        "; ".join(f"rank {r} waits for a message from rank {s} with tag {g}" for r, s, g in waits)
                        + f", but no program sends {'it' if len(waits) == 1 else 'them'} (deadlock)"
                    )
                self._lock.wait()
                self._waiting.pop(me, None)
            return self._queues[key].popleft()

    def pending(self) -> list[tuple[tuple[int, int, int], int]]:
        """(sender, receiver, tag) -> messages not taken, for every queue not empty."""
        with self._lock:
            return sorted((key, len(queue)) for key, queue in self._queues.items() if queue)

    def finished(self, failed: bool = False) -> None:
        """A program ended; the ones still waiting re-check for a deadlock."""
        with self._lock:
            self._running -= 1
            self._failed |= failed
            self._lock.notify_all()


def _result(op, value: PerRank):
    """The value, or a Token carrying it for the async form."""
    return [Token(value) if isinstance(op.results[0].type, TokenType) else value]


def _regroup_over(op, value: PerRank, axes, ex):
    dst = op.results[0].type
    dst = dst.value_type if isinstance(dst, TokenType) else dst
    return _result(op, regroup(value, Layout.of(op.input.type, ex.sizes), Layout.of(dst, ex.sizes), axes, ex.placement))


@implements(AllGatherOp, ReduceScatterOp, AllReduceOp, AllToAllOp)
def collective(op: CollectiveOp, operands, ex):
    """One implementation for the four: their input and result layouts say which it is."""
    if isinstance(op, AllReduceOp) and op.maximum is not None:
        return _result(op, _max_over(operands[0], op.axis_names, ex))
    return _regroup_over(op, operands[0], op.axis_names, ex)


def _max_over(value: PerRank, axes, ex) -> PerRank:
    """Every group member gets the elementwise max of the members' values."""
    out: PerRank = list(value)
    for group in groups_within(ex.placement, axes):
        combined = torch.stack([value[r] for r in group]).amax(dim=0)
        for r in group:
            out[r] = combined
    return out


@implements(ReshardOp)
def reshard(op: ReshardOp, operands, ex):
    """Any layout to any layout: within groups along every axis either layout uses."""
    return _regroup_over(op, operands[0], op.mesh_axes(), ex)


@implements(BroadcastOp)
def broadcast(op: BroadcastOp, operands, ex):
    """Every group member gets the local of the member at group coordinate `root`
    (row-major over the op's axes)."""
    (value,), axes, root = operands, op.axis_names, op.root.value.data
    out: PerRank = list(value)
    for group in groups_within(ex.placement, axes):
        sources = [r for r in group if ex.mesh.index_over(r, axes) == root]
        if not sources:
            raise InterpreterError(f"root {root} is not a member of the {len(group)}-rank group over [{', '.join(axes)}]")
        for rank in group:
            out[rank] = value[sources[0]]
    return _result(op, out)


def _peer(op, rank: int, ex) -> int:
    """The rank whose coordinates are `rank`'s with op.axis set to op.peer."""
    mesh, axis, peer = ex.mesh, op.axis.data, op.peer.value.data
    if not 0 <= peer < mesh.size(axis):
        raise InterpreterError(f"peer {peer} is outside mesh axis '{axis}' ({mesh})")
    return mesh.rank_of({**mesh.coords[rank], axis: peer})


@implements(SendOp)
def send(op: SendOp, operands, ex):
    """Every rank of the program posts its local to its peer along the axis."""
    tag = op.tag.value.data
    for rank in ex.ranks:
        ex.mailbox.post((rank.index, _peer(op, rank.index, ex), tag), operands[0][rank.index])
    return [Token(None)] if op.token is not None else []


@implements(RecvOp)
def recv(op: RecvOp, operands, ex):
    """Every rank of the program takes the oldest message its peer posted to it."""
    tag = op.tag.value.data
    out: PerRank = [None] * ex.mesh.num_ranks
    for rank in ex.ranks:
        out[rank.index] = ex.mailbox.take((_peer(op, rank.index, ex), rank.index, tag))
    return _result(op, out)


@implements(LocalSliceOp)
def local_slice(op: LocalSliceOp, operands, ex):
    """Each rank keeps its block: within a group along the axes every member holds the
    whole (duplicated) tensor, which regroup cuts into the result's blocks."""
    return _regroup_over(op, operands[0], op.axis_names, ex)


# Mailbox tag of stg.all_reduce_stages' messages: below the tags of stg.send (>= 0), so
# the two never mix; successive all-reduces pair up in order (the queues are FIFO).
ALL_REDUCE_STAGES_TAG = -1


@implements(AllReduceStagesOp)
def all_reduce_stages(op: AllReduceStagesOp, operands, ex):
    """Each rank sends its local to the ranks that differ from it only in their
    coordinate on the axis, for every other coordinate listed, then adds up the
    listed coordinates' locals in the listed order (every participant the same sum)."""
    (value,), (axis,), among = operands, op.axis_names, op.coordinates
    mesh = ex.mesh

    def at(rank: int, coord: int) -> int:
        return mesh.rank_of({**mesh.coords[rank], axis: coord})

    for rank in ex.ranks:
        mine = mesh.coord(rank.index, axis)
        if mine not in among:
            raise InterpreterError(f"rank {rank.index} ({axis} = {mine}) is not among the stages {list(among)}")
        for coord in among:
            if coord != mine:
                ex.mailbox.post((rank.index, at(rank.index, coord), ALL_REDUCE_STAGES_TAG), value[rank.index])
    out: PerRank = [None] * mesh.num_ranks
    for rank in ex.ranks:
        mine = mesh.coord(rank.index, axis)
        total = None
        for coord in among:
            part = value[rank.index] if coord == mine else ex.mailbox.take(
                (at(rank.index, coord), rank.index, ALL_REDUCE_STAGES_TAG)
            )
            total = part if total is None else total + part
        out[rank.index] = total
    return [Token(out) if isinstance(op.result.type, TokenType) else out]
