"""stg-insert-releases: a gathered parameter's end of life is an explicit stg.release,
right after its last use (deepcompile.md §4.1, Fig. 4: an all-gather before a
parameter's first use, a release after its last). PyTorch FSDP frees a unit's
gathered flat parameter after the unit's forward (and again after its backward);
without a release the buffer would look alive to the end of its block.

    %w_t = stg.all_gather %w on @m [fsdp] async stream "fsdp" : ...
    %w_g = stg.wait %w_t : ...
    %y = stg.einsum "bh,hf->bf" %x, %w_g : ...
    stg.release %w_g : !stg.tensor<[H, F], bf16>        // inserted

A gathered value used by the block's terminator leaves the block, so it is not
released there.

Requires: stg IR after stg-match-collectives (synchronous or scheduled form).
Guarantees: each all-gathered parameter (an all-gather of a parameter or a view of
one, alone or in a group; through its wait in the scheduled form) is released exactly
once, after every use, in the block that defines it. Running it twice changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from stagec.dialects.kinds import kind_of
from stagec.dialects.stg.comm import AllGatherOp
from stagec.dialects.stg.memory import ReleaseOp, WaitOp
from stagec.dialects.stg.schedule import GroupOp
from stagec.passes.schedule.grouping import ancestor_in
from stagec.passes.stg_fsdp_units import reads_param

__all__ = ["StgInsertReleases", "insert_releases"]


@dataclass(frozen=True)
class StgInsertReleases(ModulePass):
    """Release each gathered parameter after its last use (stg.release)."""

    name = "stg-insert-releases"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        insert_releases(op)


def insert_releases(module: ModuleOp) -> int:
    """Release every gathered parameter of `module`; returns how many."""
    gathered = [v for op in module.walk() for v in _gathered_parameters(op)]
    order: dict[int, dict[int, int]] = {}  # block -> op -> position, numbered once
    return sum(_release(v, order) for v in gathered)


_GATHERING = kind_of(AllGatherOp, GroupOp)  # dialects/kinds.py


def _gathered_parameters(op: Operation) -> list[SSAValue]:
    """The device buffers of gathered parameters that `op` makes."""
    kind = _GATHERING(op)
    if kind == 0 and _GATHERING(op.parent_op()) != 1 and reads_param(op.input):
        return _through_wait(op.result)
    if kind == 1 and op.collective_kind() is AllGatherOp:
        return [b for m, r in zip(op.members(), op.outputs) if reads_param(m.input) for b in _through_wait(r)]
    return []


def _through_wait(value: SSAValue) -> list[SSAValue]:
    """The tensor itself, or in the scheduled form what the wait of its token yields."""
    waits = [u.operation for u in value.uses if isinstance(u.operation, WaitOp)]
    return [w.result for w in waits] if waits else [value]


def _release(value: SSAValue, order: dict[int, dict[int, int]]) -> int:
    block = value.owner.parent_block()
    if block is None or not value.uses:
        return 0
    users = [ancestor_in(use.operation, block) for use in value.uses]
    if any(isinstance(u, ReleaseOp) for u in users) or any(u is block.last_op for u in users):
        return 0  # released already, or it leaves the block
    # positions of the block's ops before any release went in: inserting keeps their order
    positions = order.get(id(block))
    if positions is None:
        positions = order[id(block)] = {id(op): i for i, op in enumerate(block.ops)}
    last = max(users, key=lambda u: positions[id(u)])
    block.insert_op_after(ReleaseOp(value), last)
    return 1
