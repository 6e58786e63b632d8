"""stg-schedule: a training step in the scheduled form (docs/scheduled-ir.md) - every
communication and copy op names its stream and is issued asynchronously where it
stands, and the compute stream waits for it where its value is first used:

    %z = stg.all_reduce %y on @m [tp] : T@tp -> T
    %o = stg.einsum ... %z ...
  becomes
    %z_t = stg.all_reduce %y on @m [tp] async stream "tp" : T@tp -> !stg.token<T>
    %z = stg.wait %z_t : !stg.token<T>
    %o = stg.einsum ... %z ...

This is the rule the frameworks follow by default (and the one the Chakra emitter
always applied): a collective is enqueued on its communicator's stream when the
compute stream reaches its place in the program, so it overlaps whatever compute
comes between its place and its first use. Streams: one per communicator group,
named by its mesh axes in mesh order (`"dp,tp"`; `"pp[0,3]"` for
stg.all_reduce_stages among stages 0 and 3), one per peer and direction for send and
recv (`"send:pp=1"`, `"recv:pp=0"`), `"copy"` for offload and reload. A send's token
is waited for at the end of its block (its buffer lives until then). A group of
collectives (stg.group) is issued as one; its members stay synchronous.

Requires: stg IR after stg-match-collectives (no stg.reshard), every communication op
naming a stg.mesh. Guarantees: every function is marked `stg.scheduled`; every
communication and copy op outside a group, and every collective group, is async on a
stream; each token is consumed by exactly one stg.wait, placed in the block of the
op (before the op holding the first use, or before the block's terminator). Running
it twice changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, UnitAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from stagec.dialects.kinds import kind_of
from stagec.dialects.stg.attributes import TokenType
from stagec.dialects.stg.comm import AllReduceStagesOp, CollectiveOp, LocalSliceOp, RecvOp, ReshardOp, SendOp
from stagec.dialects.stg.memory import OffloadOp, ReloadOp, WaitOp
from stagec.dialects.stg.mesh import MeshOp
from stagec.dialects.stg.schedule import (
    COPY_STREAM,
    SCHEDULED,
    GroupOp,
    collective_stream,
    p2p_stream,
)
from stagec.passes.diagnostics import PassError
from stagec.passes.schedule.grouping import ancestor_in

__all__ = ["StgSchedule", "schedule_streams"]


@dataclass(frozen=True)
class StgSchedule(ModulePass):
    """Issue each communication op asynchronously on its stream; wait before its first use (the scheduled form)."""

    name = "stg-schedule"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        schedule_streams(op)


def schedule_streams(module: ModuleOp) -> None:
    meshes = {m.sym_name.data: m.axis_names for m in module.ops if isinstance(m, MeshOp)}
    for fn in module.ops:
        if isinstance(fn, func.FuncOp):
            issued = []
            for op in fn.walk():
                kind = _ISSUED(op)
                if kind == 0:
                    raise PassError("a stg.reshard is left: run stg-match-collectives before stg-schedule", op)
                # a group is issued, not its members; a named stream was scheduled already
                if kind < 0 or _ISSUED(op.parent_op()) == 1 or op.properties.get("stream") is not None:
                    continue
                stream = _stream(op, kind, meshes)
                if stream is not None:
                    issued.append((op, stream))
            for op, stream in issued:
                op.properties["stream"] = StringAttr(stream)
                if op.properties.get("async") is None:
                    _make_async(op)
            fn.attributes[SCHEDULED] = UnitAttr()


# the ops stg-schedule gives a stream, by kind (dialects/kinds.py); -1: none
_ISSUED = kind_of(ReshardOp, GroupOp, LocalSliceOp, CollectiveOp, SendOp, RecvOp, (OffloadOp, ReloadOp))


def _stream(op: Operation, kind: int, meshes: dict) -> str | None:
    """The stream of `op`, of `_ISSUED` kind `kind`."""
    if kind == 1:
        collective = op.collective_kind()
        return _collective_stream(op.members()[0], meshes) if collective is not None else None
    if kind == 2:
        return None  # moves nothing
    if kind == 3:
        return _collective_stream(op, meshes)
    if kind == 4:
        return p2p_stream("send", op.axis.data, op.peer.value.data)
    if kind == 5:
        return p2p_stream("recv", op.axis.data, op.peer.value.data)
    if kind == 6:
        return COPY_STREAM
    return None


def _collective_stream(op: CollectiveOp, meshes: dict) -> str:
    among = op.coordinates if isinstance(op, AllReduceStagesOp) else None
    return collective_stream(op.axis_names, meshes.get(op.mesh.root_reference.data, ()), among)


def _make_async(op: Operation) -> None:
    """Give `op` the async form (tokens instead of values) and a wait per token."""
    block = op.parent_block()
    assert block is not None
    op.properties["async"] = UnitAttr()
    results = list(op.results)
    # a send's async form returns one bare token; the others a token per result
    tokens = [TokenType()] if isinstance(op, SendOp) else [TokenType(r.type) for r in results]
    # the regions move to the new op (the old one is erased below): a group's members
    # are not copied
    regions = [op.detach_region(r) for r in list(op.regions)]
    new = op.create(operands=list(op.operands), result_types=tokens, properties=dict(op.properties),
                    attributes=dict(op.attributes), regions=regions)
    block.insert_op_before(new, op)
    for i, token in enumerate(new.results):
        old = results[i] if i < len(results) else None
        if old is not None and old.name_hint:
            token.name_hint = f"{old.name_hint}_t"
        wait = WaitOp(token)
        if old is not None and old.uses:
            wait.result.name_hint = old.name_hint
            block.insert_op_before(wait, _first_user(old, block, new))
            old.replace_all_uses_with(wait.result)
        elif _has_terminator(block):
            block.insert_op_before(wait, block.last_op)  # nothing waits sooner: the end of the block
        else:
            block.add_op(wait)
    op.detach()
    op.erase()


def _has_terminator(block: Block) -> bool:
    last = block.last_op
    return last is not None and last.name in ("stg.yield", "func.return")


def _first_user(value: SSAValue, block: Block, after: Operation) -> Operation:
    """The op of `block` that holds the first use of `value` (itself or an ancestor),
    found by walking on from `after`, the op defining it: the first use is usually a
    few ops on, and a block's op index is a scan from its start."""
    users = {ancestor_in(use.operation, block) for use in value.uses}
    op = after.next_op
    while op is not None and op not in users:
        op = op.next_op
    assert op is not None, "a use of a value defined in the block lies in the block, after it"
    return op
