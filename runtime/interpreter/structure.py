"""Structure ops: stg.repeat, stg.microbatch and stg.phase run their bodies.

A loop threads its carried values through `count` iterations and feeds scanned values
slice by slice; iteration i works on slice (and, for stg.repeat, layer) i, or count-1-i
under `reverse`, and a per-iteration output is stacked at that same index, so a
reversed loop over saved activations lines up with the forward loop that saved them.
"""

from __future__ import annotations

import torch

from stagec.dialects.stg.structure import LoopOp, MicroBatchOp, PhaseOp, RepeatOp
from stagec.runtime.interpreter.errors import InterpreterError
from stagec.runtime.interpreter.registry import implements
from stagec.runtime.interpreter.values import PerRank


@implements(RepeatOp, MicroBatchOp)
def loop(op: LoopOp, operands, ex):
    count = ex.sizes.eval(op.count_expr, f"the count of '{op.name}'")
    if count < 1:
        raise InterpreterError(f"the count {op.count_expr} = {count} must be at least 1")
    carried = operands[: len(op.carried)]
    scanned = operands[len(op.carried) :]
    per_iteration: list[list[PerRank | None]] = []
    for step in range(count):
        index = count - 1 - step if op.reverse is not None else step
        slices = [[None if local is None else local[index] for local in value] for value in scanned]
        if isinstance(op, RepeatOp):
            ex.layers.append((index, count))
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
