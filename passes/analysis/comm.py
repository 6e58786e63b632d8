"""Communication per rank and iteration, by collective type (stage.md Table VII).

Every communication op counts its `bytes_moved()` - Chakra's comm_size, the size of
the rank's input buffer: an all-gather's shard, a reduce-scatter's or all-reduce's
whole local buffer, a send's tensor - times the counts of the loops around it. A
vocab-parallel cross-entropy adds the three per-token all-reduces it implies; the
body of a stg.vjp is not forward work, so a cross-entropy there adds none (Megatron
keeps the softmax for the backward). A stg.local_slice moves nothing and a stg.wait
only completes an async op; an unmatched stg.reshard counts as "reshard".

`ops` counts tensors: one per communication op, whether or not it is grouped, so the
scheduled form (docs/scheduled-ir.md) reports the ops and bytes of the step it came
from. `calls` counts what is issued: a coalesced stg.group (an FSDP unit's all-gather,
a gradient bucket) is one call of its members' kind, any other communication op one
call of its own; before scheduling, calls equal ops.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction

from xdsl.dialects import func

from stagec.dialects.stg.comm import CommOp
from stagec.dialects.stg.model_ops import CrossEntropyOp
from stagec.dialects.stg.schedule import GroupOp
from stagec.dialects.stg.structure import LoopOp
from stagec.dialects.stg.training import VjpOp
from stagec.dialects.symbolic import SymbolicError
from stagec.passes.analysis.memory import AccountingError, Evaluator

COMM_KINDS = ("send", "recv", "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reshard")

# op name -> the collective type it counts as
_KIND = {
    "stg.send": "send",
    "stg.recv": "recv",
    "stg.all_reduce": "all_reduce",
    "stg.all_reduce_stages": "all_reduce",
    "stg.all_gather": "all_gather",
    "stg.reduce_scatter": "reduce_scatter",
    "stg.all_to_all": "all_to_all",
    "stg.broadcast": "broadcast",
    "stg.reshard": "reshard",
}


@dataclass(frozen=True)
class CommVolume:
    """Ops (tensors), bytes and calls per collective type, one rank, one iteration."""

    ops: Counter = field(default_factory=Counter)
    bytes: Counter = field(default_factory=Counter)
    calls: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict[str, dict[str, int]]:
        return {k: {"ops": self.ops[k], "bytes": self.bytes[k]} for k in COMM_KINDS if self.ops[k]}

    def calls_dict(self) -> dict[str, int]:
        return {k: self.calls[k] for k in COMM_KINDS if self.ops[k]}


def count_comm(function: func.FuncOp, ev: Evaluator) -> CommVolume:
    """A func.call counts its callee's communication (a pipeline stage's schedule calls
    its forward and backward once per micro-batch)."""
    volume = CommVolume()
    module = function.parent_op()
    callees = {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)} if module else {}

    def size(expr, what) -> int:
        try:
            value = Fraction(expr.evaluate_fraction(ev.env))
        except SymbolicError as error:
            raise AccountingError(f"cannot evaluate the bytes of {what} ({expr}): {error}") from None
        return round(value)

    def add(kind: str, times: int, nbytes: int, call: bool = True) -> None:
        volume.ops[kind] += times
        volume.bytes[kind] += times * nbytes
        volume.calls[kind] += times if call else 0

    def walk(block, times: int, grouped: bool = False) -> None:
        for op in block.ops:
            if isinstance(op, VjpOp):
                continue
            kind = _KIND.get(op.name)
            if kind is not None and isinstance(op, CommOp):
                add(kind, times, size(op.bytes_moved(), op.name), call=not grouped)
            if isinstance(op, CrossEntropyOp):
                for kind, _axes, nbytes in op.vocab_collectives():
                    add(kind, times, size(nbytes, "a vocab-parallel cross-entropy"), call=not grouped)
            if isinstance(op, GroupOp) and (coalesced := op.collective_kind()) is not None:
                volume.calls[_KIND[coalesced.name]] += times
                walk(op.body.block, times, grouped=True)
                continue
            if isinstance(op, func.CallOp):
                callee = callees.get(op.callee.root_reference.data)
                if callee is None:
                    raise AccountingError(f"func.call of @{op.callee.root_reference.data}, which the module lacks")
                walk(callee.body.block, times)
                continue
            inner = times * ev.int(op.count_expr, f"the count of {op.name}") if isinstance(op, LoopOp) else times
            for region in op.regions:
                for b in region.blocks:
                    walk(b, inner)

    walk(function.body.block, 1)
    return volume
