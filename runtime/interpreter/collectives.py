"""Communication across simulated ranks.

A collective runs within each communicator group along its mesh axes. Seen from the
group, all_gather, reduce_scatter, all_reduce, all_to_all and reshard each assemble the
tensor the group holds in the input's layout and cut it again in the result's
(values.regroup); broadcast copies the root member's local. Send and recv pair up
through a mailbox keyed by (sender, receiver, tag), first in first out.

An async op returns a Token carrying its result; stg.wait opens it (memory.py).
"""

from __future__ import annotations

from collections import deque

from stagec.dialects.stg.attributes import TokenType
from stagec.dialects.stg.comm import (
    AllGatherOp,
    AllReduceOp,
    AllToAllOp,
    BroadcastOp,
    CollectiveOp,
    RecvOp,
    ReduceScatterOp,
    ReshardOp,
    SendOp,
)
from stagec.runtime.interpreter.errors import InterpreterError
from stagec.runtime.interpreter.registry import implements
from stagec.runtime.interpreter.values import Layout, PerRank, Token, regroup


def _result(op, value: PerRank):
    """The value, or a Token carrying it for the async form."""
    return [Token(value) if isinstance(op.results[0].type, TokenType) else value]


def _regroup_over(op, value: PerRank, axes, ex):
    dst = op.results[0].type
    dst = dst.value_type if isinstance(dst, TokenType) else dst
    return _result(op, regroup(value, Layout.of(op.input.type), Layout.of(dst), axes, ex.mesh))


@implements(AllGatherOp, ReduceScatterOp, AllReduceOp, AllToAllOp)
def collective(op: CollectiveOp, operands, ex):
    """One implementation for the four: their input and result layouts say which it is."""
    return _regroup_over(op, operands[0], op.axis_names, ex)


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
    for group in ex.mesh.groups(axes):
        source = next(r for r in group if ex.mesh.index_over(r, axes) == root)
        for rank in group:
            out[rank] = value[source]
    return _result(op, out)


def _peer(op, rank: int, ex) -> int:
    """The rank whose coordinates are `rank`'s with op.axis set to op.peer."""
    mesh, axis, peer = ex.mesh, op.axis.data, op.peer.value.data
    if not 0 <= peer < mesh.sizes.get(axis, 1):
        raise InterpreterError(f"peer {peer} is outside mesh axis '{axis}' ({ex.mesh})")
    return mesh.rank_of({**mesh.coords[rank], axis: peer})


@implements(SendOp)
def send(op: SendOp, operands, ex):
    """Every rank posts its local to its peer along the axis, under the op's tag."""
    tag = op.tag.value.data
    for rank, local in enumerate(operands[0]):
        ex.mailbox.setdefault((rank, _peer(op, rank, ex), tag), deque()).append(local)
    return [Token(None)] if op.token is not None else []


@implements(RecvOp)
def recv(op: RecvOp, operands, ex):
    """Every rank takes the oldest message its peer posted to it under the op's tag."""
    tag, out = op.tag.value.data, []
    for rank in range(ex.mesh.num_ranks):
        peer = _peer(op, rank, ex)
        queue = ex.mailbox.get((peer, rank, tag))
        if not queue:
            raise InterpreterError(
                f"rank {rank} {ex.mesh.coords[rank]} receives from rank {peer} "
                f"{ex.mesh.coords[peer]} with tag {tag}, but no matching stg.send came before"
            )
        out.append(queue.popleft())
    return _result(op, out)
