"""Forming a stg.group out of ops of one block (dialects/stg/schedule.py): the rules
stg-fuse-gemms and stg-fsdp-units share.

A group is issued where its first member was. That is legal when every value its
members read from outside is computed before that place: views (reshape, split,
local_slice, fill) and state reads make no work of their own, so one that stands
later in the block is moved up to the group - unless a state read would then pass an
stg.assign of its own state, which would change what it reads.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Block, Operation, Region, SSAValue

from xdsl.dialects.builtin import ModuleOp

from stagec.dialects.stg.schedule import GroupOp, view_ops
from stagec.dialects.stg.state import AssignOp, StateOp
from stagec.dialects.stg.structure import YieldOp

VIEWS = view_ops()


def blocks_outside_groups(module: ModuleOp) -> list[Block]:
    """Every block of `module` but the bodies of groups (already issued as one)."""
    return [b for op in module.walk() for r in op.regions for b in r.blocks if not isinstance(op, GroupOp)]


def is_compute(op: Operation) -> bool:
    """Whether the compute stream works at `op` in the scheduled form: not at a wait, a
    release, a state read or write, a view, or the issue of a communication or copy
    (an op naming its stream)."""
    from stagec.dialects.stg.memory import ReleaseOp, WaitOp

    if isinstance(op, (WaitOp, ReleaseOp, StateOp, AssignOp, VIEWS)):
        return False
    return op.properties.get("stream") is None


def ancestor_in(op: Operation, block: Block) -> Operation:
    """`op` itself if it stands in `block`, else the op of `block` that holds it."""
    while op.parent_block() is not block:
        op = op.parent_op()
    return op


class BlockOrder:
    """Positions of a block's ops, and where each value's work was last done."""

    def __init__(self, block: Block):
        self.block = block
        self._refresh()

    def _refresh(self) -> None:
        self.ops = list(self.block.ops)
        self.pos = {id(op): i for i, op in enumerate(self.ops)}
        self._memo: dict[int, int] = {}

    def work_position(self, value: SSAValue) -> int:
        """The position of the op whose work `value` needs last, looking through views;
        -1 for values from outside the block and for state reads (they make no work)."""
        owner = value.owner
        if not isinstance(owner, Operation) or id(owner) not in self.pos or isinstance(owner, StateOp):
            return -1
        if isinstance(owner, VIEWS):
            key = id(value)
            if key not in self._memo:
                self._memo[key] = max((self.work_position(o) for o in owner.operands), default=-1)
            return self._memo[key]
        return self.pos[id(owner)]

    def legal(self, members: Sequence[Operation]) -> bool:
        first = min(self.pos[id(m)] for m in members)
        if not all(self.work_position(o) < first for m in members for o in m.operands):
            return False
        return not any(self._read_moves_past_its_assign(op, first) for op in self._late_views(members, first))

    def _late_views(self, members: Sequence[Operation], first: int) -> list[Operation]:
        """The views and state reads after `first` that the members read, in block order."""
        inside = {id(m) for m in members}
        found: dict[int, Operation] = {}

        def visit(value: SSAValue) -> None:
            owner = value.owner
            if not isinstance(owner, Operation) or id(owner) in inside or id(owner) not in self.pos:
                return
            if self.pos[id(owner)] > first and id(owner) not in found:
                found[id(owner)] = owner
                for o in owner.operands:
                    visit(o)

        for m in members:
            for o in m.operands:
                visit(o)
        return sorted(found.values(), key=lambda op: self.pos[id(op)])

    def _read_moves_past_its_assign(self, op: Operation, first: int) -> bool:
        if not isinstance(op, StateOp):
            return False
        key = _state_key(op)
        return any(isinstance(o, AssignOp) and o.key == key for o in self.ops[first:self.pos[id(op)]])

    def group(self, members: Sequence[Operation], *, is_async: bool = False, stream: str | None = None) -> GroupOp:
        """Move `members` (in block order) into one stg.group at the first one's place;
        the group yields the members' results used outside it."""
        members = sorted(members, key=lambda m: self.pos[id(m)])
        first = members[0]
        block = self.block
        for view in self._late_views(members, self.pos[id(first)]):
            view.detach()
            block.insert_op_before(view, first)
        inside = {id(m) for m in members}
        escaping = [r for m in members for r in m.results
                    if any(id(ancestor_in(use.operation, block)) not in inside for use in r.uses)]
        body = Block()
        before = first.prev_op  # not a member: `first` is the first one
        for m in members:
            m.detach()
            body.add_op(m)
        body.add_op(YieldOp(*escaping))
        group = GroupOp(Region(body), is_async=is_async, stream=stream)
        if before is None:
            block.insert_op_before(group, block.first_op) if block.first_op else block.add_op(group)
        else:
            block.insert_op_after(group, before)
        for old, result in zip(escaping, group.outputs):
            result.name_hint = old.name_hint
            for use in list(old.uses):
                if use.operation.parent_block() is not body:
                    use.operation.operands[use.index] = result
        self._refresh()  # what moved earlier is available earlier to the next group too
        return group


def _state_key(op: StateOp) -> tuple:
    from stagec.dialects.stg.state import OptimizerStateOp

    if isinstance(op, OptimizerStateOp):
        return (op.tensor_name.data, op.param.data)
    return (op.tensor_name.data, None)
