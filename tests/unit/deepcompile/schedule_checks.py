"""Checks the DeepCompile property tests make on a scheduled step, in execution order
(a function's ops walked in pre-order: phases and loop bodies run where they stand)."""

from __future__ import annotations

from stagec.dialects.stg.comm import AllGatherOp
from stagec.dialects.stg.memory import ReleaseOp, WaitOp
from stagec.dialects.stg.schedule import GroupOp
from stagec.dialects.stg.structure import RepeatOp, YieldOp


def check_gathered_buffers(module) -> int:
    """Every gathered buffer (a waited all-gather's value, or a stack of them) is used
    only after its wait, released exactly once, after all of its uses, and never used
    after; returns how many buffers were checked."""
    function = next(op for op in module.walk() if op.name == "func.func")
    order = {id(op): i for i, op in enumerate(function.walk())}
    buffers = []
    for op in function.walk():
        if isinstance(op, WaitOp) and isinstance(op.token.owner, (AllGatherOp, GroupOp)):
            if isinstance(op.token.owner, GroupOp) and op.token.owner.collective_kind() is not AllGatherOp:
                continue
            yielded = [u for u in op.result.uses if isinstance(u.operation, YieldOp)]
            if yielded and isinstance(yielded[0].operation.parent_op(), RepeatOp):
                buffers.append((op, yielded[0].operation.parent_op().results[yielded[0].index]))
            else:
                buffers.append((op, op.result))
    for wait, buffer in buffers:
        users = [u.operation for u in buffer.uses]
        releases = [u for u in users if isinstance(u, ReleaseOp)]
        assert len(releases) == 1, f"{buffer.name_hint}: released {len(releases)} times"
        release = order[id(releases[0])]
        others = [order[id(u)] for u in users if not isinstance(u, ReleaseOp)]
        assert others, f"{buffer.name_hint}: never used"
        assert all(order[id(wait)] < i < release for i in others), \
            f"{buffer.name_hint}: a use before its wait or after its release"
    return len(buffers)
