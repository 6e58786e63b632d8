"""Structure ops: stg.repeat, stg.microbatch and stg.phase run their bodies.

A loop threads its carried values through `count` iterations and feeds scanned values
slice by slice; iteration i works on slice (and, for stg.repeat, layer) i, or count-1-i
under `reverse`, and a per-iteration output is stacked at that same index, so a
reversed loop over saved activations lines up with the forward loop that saved them.
A slice of a layer stack (`stg.repeat 2 offset 4 of 8`, a pipeline stage's layers)
addresses layers offset + i of the stacked state, its outputs and scanned values
staying per iteration.

func.call runs the callee's body on the caller's ranks, in a scope of its own: its
values are its own, and it starts outside any stg.repeat (a callee's state reads are
not indexed by the caller's loops).

stg.group (the scheduled form, dialects/stg/schedule.py) runs its body once; its
results are what the body yields, each in a Token when the group is async. Issuing
ops as one kernel or one coalesced call changes when they run, not what they compute,
so a scheduled step computes exactly what the unscheduled one does; likewise a
`stream` names where an op is issued and means nothing numerically.
"""

from __future__ import annotations

import torch
from xdsl.dialects.func import CallOp

from stagec.dialects.stg.attributes import DistributedTensorType
from stagec.dialects.stg.schedule import GroupOp
from stagec.dialects.stg.structure import LoopOp, MicroBatchOp, PhaseOp, RepeatOp
from stagec.runtime.interpreter.errors import InterpreterError
from stagec.runtime.interpreter.registry import implements
from stagec.runtime.interpreter.tensor_types import check_value
from stagec.runtime.interpreter.values import PerRank, Token


@implements(RepeatOp, MicroBatchOp)
def loop(op: LoopOp, operands, ex):
    count = ex.sizes.eval(op.count_expr, f"the count of '{op.name}'")
    if count < 1:
        raise InterpreterError(f"the count {op.count_expr} = {count} must be at least 1")
    offset, stack_size = 0, count
    if isinstance(op, RepeatOp) and op.offset is not None:
        offset = ex.sizes.eval(op.offset_expr, "the offset of 'stg.repeat'")
        stack_size = ex.sizes.eval(op.stack_expr, "the stack size of 'stg.repeat'")
        if offset < 0 or offset + count > stack_size:
            raise InterpreterError(
                f"layers [{offset}, {offset + count}) (offset {op.offset_expr}, count {op.count_expr}) "
                f"are not within the stack of {op.stack_expr} = {stack_size}"
            )
    carried = operands[: len(op.carried)]
    scanned = operands[len(op.carried) :]
    per_iteration: list[list[PerRank | None]] = []
    for step in range(count):
        index = count - 1 - step if op.reverse is not None else step
        slices = [[None if local is None else local[index] for local in value] for value in scanned]
        if isinstance(op, RepeatOp):
            # (the layer this iteration addresses, the stack's size)
            ex.layers.append((offset + index, stack_size))
        try:
            yielded = ex.run_block(op.body.block, [*carried, *slices])
        finally:
            if isinstance(op, RepeatOp):
                ex.layers.pop()
        carried = yielded[: len(carried)]
        outputs = yielded[len(carried) :]
        if not per_iteration:
            per_iteration = [[None] * count for _ in outputs]
        for stack, value in zip(per_iteration, outputs):
            stack[index] = value
    stacked = []
    for stack in per_iteration:
        value: PerRank = [None] * ex.mesh.num_ranks
        for rank in ex.ranks:
            value[rank.index] = torch.stack([layer[rank.index] for layer in stack])
        stacked.append(value)
    return [*carried, *stacked]


@implements(PhaseOp)
def phase(op: PhaseOp, operands, ex):
    return ex.run_block(op.body.block, [])


@implements(GroupOp)
def group(op: GroupOp, operands, ex):
    yielded = ex.run_block(op.body.block, [])
    return [Token(v) for v in yielded] if op.is_async is not None else yielded


@implements(CallOp)
def call(op: CallOp, operands, ex):
    name = op.callee.root_reference.data
    callee = ex.interpreter.function(name)
    types = callee.function_type.inputs.data
    if len(types) != len(operands):
        raise InterpreterError(f"@{name} takes {len(types)} arguments, {len(operands)} given")
    for i, (ty, value) in enumerate(zip(types, operands)):
        if isinstance(ty, DistributedTensorType):
            check_value(value, ty, ex.sizes, f"argument #{i} of @{name}")
    with ex.scope():
        return ex.run_block(callee.body.block, operands)
