"""stg-fsdp-units: PyTorch FSDP's units as coalesced collectives (docs/scheduled-ir.md).
FSDP wraps a layer as one unit with one flat parameter: within one body (a layer of
a stg.repeat, or the step outside the layers, the root unit), the all-gathers of
parameters over one set of axes become one stg.group - one all-gather of the unit -
and so do the reduce-scatters of gradients (reduce-scatters whose result, through a
cast or an accumulation, is assigned to a "grad" state).

The group stands where the first member stood, when that is legal
(passes/schedule/grouping.py); otherwise the members stay apart.

Requires: stg IR after stg-match-collectives (synchronous collectives). Guarantees:
every group verifies and gathers (scatters) what its members did.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, SSAValue
from xdsl.passes import ModulePass

from stagec.dialects.stg.comm import AllGatherOp, ReduceScatterOp
from stagec.dialects.stg.compute import ElementwiseOp
from stagec.dialects.stg.state import AssignOp, ParamOp
from stagec.passes.schedule.grouping import VIEWS, BlockOrder, blocks_outside_groups

__all__ = ["StgFsdpUnits", "fsdp_units"]


@dataclass(frozen=True)
class StgFsdpUnits(ModulePass):
    """Coalesce an FSDP unit's parameter all-gathers (and gradient reduce-scatters) into one stg.group."""

    name = "stg-fsdp-units"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fsdp_units(op)


def fsdp_units(module: ModuleOp) -> int:
    """Group in every block of `module`; returns the number of units made."""
    return sum(_units(b) for b in blocks_outside_groups(module))


def reads_param(v: SSAValue) -> bool:
    owner = v.owner
    while isinstance(owner, VIEWS) and len(owner.operands) == 1:
        owner = owner.operands[0].owner
    return isinstance(owner, ParamOp)


def feeds_grad(v: SSAValue, depth: int = 3) -> bool:
    """Whether `v` reaches an assign to a "grad" state through a few elementwise ops
    (cast, accumulate) or views."""
    for use in v.uses:
        user = use.operation
        if isinstance(user, AssignOp) and user.state_name.data == "grad":
            return True
        if depth and isinstance(user, (ElementwiseOp, *VIEWS)):
            if any(feeds_grad(r, depth - 1) for r in user.results):
                return True
    return False


def _units(block: Block) -> int:
    order = BlockOrder(block)
    units: dict[tuple, list] = {}
    for op in order.ops:
        if isinstance(op, AllGatherOp) and op.is_async is None and reads_param(op.input):
            units.setdefault(("all_gather", op.axis_names), []).append(op)
        elif isinstance(op, ReduceScatterOp) and op.is_async is None and feeds_grad(op.result):
            units.setdefault(("reduce_scatter", op.axis_names), []).append(op)
    made = 0
    for members in units.values():
        if len(members) >= 2 and order.legal(members):
            order.group(members)
            made += 1
    return made
