"""Parameter all-gathers of a scheduled block, as the DeepCompile passes and the
ZeRO-3 / FSDP2 baselines move them (deepcompile.md §4.2).

In the scheduled form after stg-fully-shard and stg-schedule, a parameter's
all-gather is asynchronous where it stands, its `stg.wait` stands before the first
use and a `stg.release` after the last. A pass that issues a gather elsewhere moves
its *unit*: the `stg.param` read of the shard (through views) and the all-gather;
the wait and the release stay unless the pass moves them itself. A gather is
movable in its block when its only user is a wait in the same block and its shard
reads are in the block, used by it alone.

`coalesce(gathers, stream)` makes gathers issued together one collective: an
`stg.group async stream "..."` of synchronous all-gathers whose tokens the original
waits take (what stg-prefetch's Fuse makes, and what DeepSpeed's
all_gather_coalesced and FSDP2's one all-gather per group issue).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Block, Operation, Region, SSAValue

from stagec.dialects.stg.attributes import element_bytes
from stagec.dialects.stg.comm import AllGatherOp, CollectiveOp
from stagec.dialects.stg.memory import ReleaseOp, WaitOp
from stagec.dialects.stg.schedule import GroupOp
from stagec.dialects.stg.state import ParamOp
from stagec.dialects.stg.structure import YieldOp
from stagec.passes.schedule.grouping import VIEWS

__all__ = ["GatherUnit", "block_units", "coalesce", "param_chain", "place", "shard_reads", "stream_of"]


@dataclass
class GatherUnit:
    """One movable parameter all-gather of a block: its shard reads, the gather, its
    wait and (if in the block) the release of the gathered buffer."""

    reads: list[Operation]
    gather: AllGatherOp
    wait: WaitOp
    release: ReleaseOp | None

    @property
    def param(self) -> ParamOp:
        return self.reads[0]  # type: ignore[return-value]

    @property
    def name(self) -> str:
        layer = self.param.explicit_layer()
        return self.param.tensor_name.data + (f"[{layer[0]}]" if layer else "")

    def elements(self, ev) -> int:
        """Elements of the gathered parameter (DeepSpeed counts its buckets in elements)."""
        ty = self.gather.results[0].type.value_type
        return ev.device_bytes(ty) // element_bytes(ty.element_type)

    def ops(self) -> list[Operation]:
        return [*self.reads, self.gather]


def block_units(block: Block) -> tuple[list[Operation], list[GatherUnit]]:
    """S_0 of `block` (its ops but the terminator and the shard reads of movable
    gathers) and its movable gather units in the order their waits stand (the order
    the compute needs them)."""
    ops = [op for op in block.ops if not isinstance(op, (YieldOp, func.ReturnOp))]
    units: list[GatherUnit] = []
    for op in ops:
        if isinstance(op, AllGatherOp) and op.is_async is not None:
            uses = list(op.results[0].uses)
            if len(uses) != 1 or not isinstance(uses[0].operation, WaitOp) or uses[0].operation.parent_block() is not block:
                continue
            reads = shard_reads(op, block)
            if reads is None:
                continue
            wait = uses[0].operation
            releases = [u.operation for u in wait.results[0].uses
                        if isinstance(u.operation, ReleaseOp) and u.operation.parent_block() is block]
            units.append(GatherUnit(reads, op, wait, releases[0] if releases else None))
    moving = {id(o) for u in units for o in u.reads}
    index = {id(op): i for i, op in enumerate(ops)}
    units.sort(key=lambda u: index[id(u.wait)])
    return [op for op in ops if id(op) not in moving], units


def shard_reads(gather: AllGatherOp, block: Block) -> list[Operation] | None:
    """The `stg.param` read and the views that make `gather`'s input, in order, when
    they stand in `block` and feed only it (so they can move with it); else None."""
    return param_chain(gather.input, block)


def param_chain(value: SSAValue, block: Block | None = None) -> list[Operation] | None:
    """The `stg.param` read and the single-operand views that make `value`, in order;
    None if something else makes it. With `block`, each must stand there and feed only
    the next."""
    chain = []
    while True:
        owner = value.owner
        if not isinstance(owner, Operation):
            return None
        if block is not None and (owner.parent_block() is not block or len(list(value.uses)) != 1):
            return None
        chain.append(owner)
        if isinstance(owner, ParamOp):
            return chain[::-1]
        if not isinstance(owner, VIEWS) or len(owner.operands) != 1:
            return None
        value = owner.operands[0]


def stream_of(op: Operation) -> str | None:
    stream = op.properties.get("stream")
    return stream.data if isinstance(stream, StringAttr) else None


def coalesce(gathers: list[CollectiveOp]) -> GroupOp:
    """One async stg.group of the (async, same-stream, same-kind) collectives `gathers`,
    detached; their waits take its tokens and the collectives are erased. Insert it
    where they are issued."""
    body = Block()
    members = []
    for g in gathers:
        props = {k: v for k, v in g.properties.items() if k not in ("async", "stream")}
        member = type(g).create(operands=list(g.operands), result_types=[g.results[0].type.value_type],
                                properties=props, attributes=dict(g.attributes))
        body.add_op(member)
        members.append(member)
    body.add_op(YieldOp(*[m.results[0] for m in members]))
    group = GroupOp(Region(body), is_async=True, stream=stream_of(gathers[0]))
    for g, token in zip(gathers, group.outputs):
        token.name_hint = g.results[0].name_hint
        g.results[0].replace_all_uses_with(token)
        if g.parent is not None:
            g.detach()
        g.erase()
    return group


def place(block: Block, order: list[Operation]) -> None:
    """Put `order` (every op of `block` but its terminator) in that order, before the
    terminator."""
    terminator = block.last_op if isinstance(block.last_op, (YieldOp, func.ReturnOp)) else None
    for op in order:
        if op.parent is not None:
            op.detach()
        if terminator is not None:
            block.insert_op_before(op, terminator)
        else:
            block.add_op(op)
