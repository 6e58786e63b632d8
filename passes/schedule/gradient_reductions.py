"""Gradient reductions of a scheduled block, as the passes that move their issue or
their waits (stg-defer-gradient-waits, stg-reduce-buckets) see them.

A *gradient reduction* is an async reduce-scatter or all-reduce (or a coalesced group
of them that is not a `ready` bucket) whose waits stand in the block and whose result reaches an
`stg.assign` to a "grad" state there. Its *chain* is its waits and every op of the
block computing on their results - the cast, the read of the accumulated gradient, the
add, the assign - which can move down together: nothing outside the chain uses what it
computes, and it may not pass an op that reads or writes one of its states.
"""

from __future__ import annotations

from dataclasses import dataclass

from stagec.dialects.kinds import kind_of
from stagec.dialects.stg.comm import AllReduceOp, ReduceScatterOp
from stagec.dialects.stg.memory import WaitOp
from stagec.dialects.stg.names import GRAD
from stagec.dialects.stg.schedule import GroupOp
from stagec.dialects.stg.state import AssignOp, StateOp
from stagec.passes.schedule.grouping import ancestor_in
from xdsl.ir import Block, Operation

__all__ = ["GradientReduction", "gradient_reductions", "is_terminator", "nested_states", "stop_before"]

REDUCTIONS = (ReduceScatterOp, AllReduceOp)
_REDUCING = kind_of(GroupOp, REDUCTIONS)  # dialects/kinds.py


@dataclass
class GradientReduction:
    issue: Operation
    chain: list[Operation]  # its waits and every op computing on their results, in block order
    states: set[tuple]  # the states the chain reads or writes


def gradient_reductions(block: Block) -> list[GradientReduction]:
    """The gradient reductions issued in `block`, in issue order."""
    position = {op: i for i, op in enumerate(block.ops)}
    return [r for op in block.ops if (r := _reduction(op, block, position)) is not None]


def _reduction(op: Operation, block: Block, position: dict) -> GradientReduction | None:
    # only reductions: the users of a gathered parameter are most of a layer, and
    # following them from every all-gather made this walk quadratic in the block
    kind = _REDUCING(op)
    if kind == 0:
        if op.collective_kind() not in REDUCTIONS or op.is_async is None or op.ready is not None:
            return None
    elif kind < 0 or op.is_async is None:
        return None
    waits = [u.operation for r in op.results for u in r.uses]
    if not waits or any(not isinstance(w, WaitOp) or w.parent_block() is not block for w in waits):
        return None
    chain, work = set(waits), list(waits)
    while work:
        for result in work.pop().results:
            for use in result.uses:
                user = ancestor_in(use.operation, block)
                if user not in chain:
                    chain.add(user)
                    work.append(user)
    # a state read only the chain uses (the accumulated gradient) makes no work: it moves along
    for c in list(chain):
        for operand in c.operands:
            read = operand.owner
            if isinstance(read, StateOp) and read.parent_block() is block and \
                    all(ancestor_in(u.operation, block) in chain for u in read.result.uses):
                chain.add(read)
    if any(is_terminator(c) or c.properties.get("stream") is not None for c in chain):
        return None  # the block yields it, or it feeds a communication: it stays where it is
    states = {key for c in chain for key in _states_of(c)}
    if not any(key[0] == GRAD and isinstance(c, AssignOp) for c in chain for key in _states_of(c)):
        return None
    return GradientReduction(op, sorted(chain, key=position.__getitem__), states)


def stop_before(reduction: GradientReduction, deadline: Operation | None) -> Operation | None:
    """The op the chain can move down to (before it): `deadline`, or the first op on the
    way that touches one of the chain's states (None: the block's end)."""
    op = reduction.chain[0].next_op
    while op is not None and op is not deadline:
        if op not in reduction.chain and reduction.states & nested_states(op):
            return op
        op = op.next_op
    return deadline


def nested_states(op: Operation) -> set[tuple]:
    """The states `op` and the ops nested in it read or write."""
    return {key for inner in op.walk() for key in _states_of(inner)}


def _states_of(op: Operation) -> list[tuple]:
    if isinstance(op, StateOp):
        return [(op.tensor_name.data, _param(op), op.explicit_layer())]
    if isinstance(op, AssignOp):
        return [(op.state_name.data, _param(op), op.explicit_layer())]
    return []


def _param(op: Operation) -> str | None:
    param = op.properties.get("param")
    return param.data if param is not None else None


def is_terminator(op: Operation | None) -> bool:
    return op is not None and op.name in ("stg.yield", "func.return")
