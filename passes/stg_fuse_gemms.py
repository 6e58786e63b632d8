"""stg-fuse-gemms: einsums the frameworks run as one GEMM kernel become one stg.group
(docs/scheduled-ir.md), as Megatron's fused QKV and fc1 run them:

- *horizontal*: einsums of one block with the same equation shape (up to the names of
  its indices) that share an operand - the Q, K and V projections reading one input,
  gate and up, their weight gradients sharing the gathered input;
- *summed*: einsums whose results only feed a tree of adds (the Q/K/V input
  gradients) are one GEMM with the sum folded in - the adds join the group.

A dense layer then runs 4 forward and 8 backward GEMMs. The group stands where its
first member stood (passes/schedule/grouping.py says when that is legal; an illegal
candidate stays apart).

Requires: stg IR (any stage of the pipeline; sizes may be symbolic). Guarantees: every
stg.group it makes verifies and computes what its members computed; nothing else moves
but views and state reads a group reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from stagec.dialects.stg.compute import EinsumOp, ElementwiseOp
from stagec.passes.schedule.grouping import BlockOrder, blocks_outside_groups

__all__ = ["StgFuseGemms", "fuse_gemms"]


@dataclass(frozen=True)
class StgFuseGemms(ModulePass):
    """Make the einsums frameworks run as one GEMM (fused Q/K/V, gate/up, summed input gradients) one stg.group."""

    name = "stg-fuse-gemms"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fuse_gemms(op)


def fuse_gemms(module: ModuleOp) -> int:
    """Fuse in every block of `module`; returns the number of groups made."""
    return sum(_fuse_block(b) for b in blocks_outside_groups(module))


def _canonical(equation: str) -> str:
    """The equation with its indices renamed in order of appearance: its shape."""
    names: dict[str, str] = {}
    return "".join(names.setdefault(ch, chr(ord("a") + len(names))) if ch.isalpha() else ch for ch in equation)


def _one_use(v: SSAValue) -> bool:
    uses = iter(v.uses)
    return next(uses, None) is not None and next(uses, None) is None


def _is_add(op: Operation) -> bool:
    return isinstance(op, ElementwiseOp) and str(op.kind.data) == "add" and len(op.operands) == 2


def _fuse_block(block: Block) -> int:
    order = BlockOrder(block)
    einsums = [op for op in order.ops if isinstance(op, EinsumOp) and len(op.operands) == 2]
    shape = {id(op): _canonical(op.equation.data) for op in einsums}
    taken: set[int] = set()
    groups: list[list[Operation]] = []
    # summed: an add tree over einsum results, roots first
    for op in reversed(order.ops):
        if id(op) in taken or not _is_add(op):
            continue
        members: list[Operation] = []
        adds: list[Operation] = [op]

        def collect(v: SSAValue) -> bool:
            owner = v.owner
            if not isinstance(owner, Operation) or id(owner) not in order.pos or not _one_use(v) or id(owner) in taken:
                return False
            if id(owner) in shape:
                members.append(owner)
                return True
            if _is_add(owner):
                adds.append(owner)
                return all(collect(o) for o in owner.operands)
            return False

        if not all(collect(o) for o in op.operands):
            continue
        if len(members) < 2 or len({shape[id(m)] for m in members}) != 1 or not order.legal(members):
            continue
        taken.update(id(m) for m in members + adds)
        groups.append(members + adds)
    # horizontal: one equation shape, one shared operand
    candidates: dict[tuple, list[Operation]] = {}
    for op in einsums:
        if id(op) not in taken:
            for i, v in enumerate(op.operands):
                candidates.setdefault((shape[id(op)], i, v), []).append(op)
    for members in candidates.values():
        members = [m for m in members if id(m) not in taken]
        if len(members) >= 2 and order.legal(members):
            taken.update(id(m) for m in members)
            groups.append(members)
    for members in groups:
        order.group(members)
    return len(groups)
