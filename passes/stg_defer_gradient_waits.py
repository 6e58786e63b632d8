"""stg-defer-gradient-waits{in-flight}: the compute stream waits for a gradient's
reduction when the reductions after it are issued, not right after issuing it.

stg-schedule waits for every collective before its first use. For a gradient's
reduce-scatter (or all-reduce) the first use is the cast and accumulation into the
sharded `grad` state right behind it, so the compute stream would stall for every
reduction of the backward. The frameworks reduce gradients in the background: PyTorch
FSDP2 runs each group's reduce-scatter and the accumulation on its reduce-scatter
stream and the compute stream waits for the previous group's reduce-scatter only
when it issues the next one (`FSDPParamGroup.post_backward`: the `reduce_scatter_state`
event; one group in flight bounds the unsharded gradients held), then for the last
at the end of the backward (`_root_post_backward_final_callback`). DeepSpeed ZeRO-3
and DeepCompile reduce on a separate stream into double-buffered buckets, FSDP1 on its
post-backward stream; all wait at the end of the backward.

A *burst* is the reductions issued at one place of the backward: consecutive
reductions with no compute between them (communication issues, releases, state reads,
views and waits are no compute). A reduction's wait, and what computes on its result
(the cast, the read of the accumulated gradient, the add, the `stg.assign` to "grad"),
move to just before the issue of the burst `in-flight` bursts later, or to the end of
the block for the last ones:

    %t1 = stg.reduce_scatter %g1 ... async stream "fsdp"     // layer 1's burst
    %r1 = stg.wait %t1                                        // moved down
    %c1 = stg.elementwise cast %r1
    stg.assign %c1 to "grad" of "w" layer 1 of 2
    ... layer 0's backward ...
    %t0 = stg.reduce_scatter %g0 ... async stream "fsdp"     // layer 0's burst
  becomes
    %t1 = stg.reduce_scatter %g1 ... async stream "fsdp"
    ... layer 0's backward ...                                // overlaps layer 1's reduction
    %r1 = stg.wait %t1
    %c1 = stg.elementwise cast %r1
    stg.assign %c1 to "grad" of "w" layer 1 of 2
    %t0 = stg.reduce_scatter %g0 ... async stream "fsdp"
    ...
    %r0 = stg.wait %t0                                        // the end of the block

The moved ops never pass an op that reads or writes the states they touch (a wait
stops there). The reduction's input stays alive until its wait (the memory analysis,
passes/analysis/liveness.py), so the unsharded gradients in flight are counted.
`ready` groups (DDP and ZeRO gradient buckets) are issued by backward hooks and waited
for by the optimizer already; they are left as they are.

Requires: the scheduled form (stg-schedule). Guarantees: every reduction whose
result is accumulated into a "grad" state is waited for at its burst's deadline or
earlier, in the block that issued it; no other op moves. Running it twice changes
nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from stagec.passes.diagnostics import PassError
from stagec.passes.schedule.gradient_reductions import (
    GradientReduction,
    gradient_reductions,
    is_terminator,
    stop_before,
)
from stagec.passes.schedule.grouping import blocks_outside_groups, is_compute
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

__all__ = ["StgDeferGradientWaits", "defer_gradient_waits"]


@dataclass(frozen=True)
class StgDeferGradientWaits(ModulePass):
    """Wait for gradient reductions when later ones are issued (FSDP2's rule), not right after issue."""

    name = "stg-defer-gradient-waits"

    in_flight: int = 1
    """Bursts of gradient reductions a stream keeps in flight before the compute stream
    waits for the oldest (FSDP2: 1, one parameter group's reduce-scatter)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.in_flight < 1:
            raise PassError(f"in-flight={self.in_flight}: at least 1 burst of reductions is in flight")
        defer_gradient_waits(op, self.in_flight)


def defer_gradient_waits(module: ModuleOp, in_flight: int = 1) -> int:
    """Move the waits of `module`'s gradient reductions (module doc); returns how many
    reductions' waits moved."""
    return sum(_defer_in(block, in_flight) for block in blocks_outside_groups(module))


def _defer_in(block: Block, in_flight: int) -> int:
    reductions = gradient_reductions(block)
    if not reductions:
        return 0
    ops = list(block.ops)
    position = {op: i for i, op in enumerate(ops)}
    chained = {op for r in reductions for op in r.chain}
    bursts = _bursts(ops, {r.issue: r for r in reductions}, chained)
    terminator = block.last_op if is_terminator(block.last_op) else None
    moved = 0
    for j, burst in enumerate(bursts):
        deadline = bursts[j + in_flight][0].issue if j + in_flight < len(bursts) else terminator
        for reduction in burst:
            moved += _move(reduction, stop_before(reduction, deadline), position, block)
    return moved


def _move(reduction: GradientReduction, target: Operation | None, position: dict, block: Block) -> int:
    """Put the chain's ops that stand before `target` right before it (at the block's
    end for None); 1 if the compute between them and `target` changed sides."""
    limit = position[target] if target is not None else len(position)
    chain = [op for op in reduction.chain if position[op] < limit]
    members = set(chain)
    op, passed = chain[0].next_op, False
    while op is not target:
        passed |= op not in members
        op = op.next_op
    if not passed:
        return 0
    for op in chain:
        op.detach()
        if target is None:
            block.add_op(op)
        else:
            block.insert_op_before(op, target)
    return 1


def _bursts(ops: list[Operation], reductions: dict, chained: set) -> list[list[GradientReduction]]:
    bursts: list[list[GradientReduction]] = []
    open_burst = False
    for op in ops:
        if op in reductions:
            if not open_burst:
                bursts.append([])
                open_burst = True
            bursts[-1].append(reductions[op])
        elif open_burst and op not in chained and is_compute(op):
            open_burst = False
    return bursts
