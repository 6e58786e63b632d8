"""stg-match-collectives: every stg.reshard becomes the cheapest sequence of
collectives that turns the producer's layout into the consumer's (stage.md §IV-D2).

    %r = stg.reshard %y on @m : !stg.tensor<[B/dp, S, H] @tp, bf16> -> !stg.tensor<[B, S, H], bf16>
  becomes
    %r_reduced = stg.all_reduce %y on @m [tp] : ... -> !stg.tensor<[B/dp, S, H], bf16>
    %r = stg.all_gather %r_reduced on @m [dp] : ... -> !stg.tensor<[B, S, H], bf16>

The sequence comes from the pull/push search of passes/collectives/matcher.py
(all_gather, reduce_scatter, all_reduce, all_to_all and the free stg.local_slice, each
over one or more mesh axes), minimising the ring-model bytes of
passes/collectives/cost.py with the reshard's mesh sizes and the module's stg.config
bindings (stand-ins where sizes are symbolic); docs/collectives.md explains both.
A reshard between equal layouts just disappears. Intermediate values are named after
the reshard's result and what made them (`%r_gathered`, `%r_reduced`, `%r_scattered`,
`%r_exchanged`, `%r_sliced`); the last one takes the reshard's name.

Requires: verified stg IR; each stg.reshard names a stg.mesh declaring its axes.
Guarantees: no stg.reshard is left, anywhere in the module (function bodies, repeat
and micro-batch bodies, phases); every collective it inserts is synchronous and
verifies. Fails, naming the reshard and both layouts, when no sequence exists: the
consumer is a partial sum over an axis the producer is not (a PartialSum push).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from stagec.dialects.stg.comm import (
    AllGatherOp,
    AllReduceOp,
    AllToAllOp,
    CollectiveOp,
    LocalSliceOp,
    ReduceScatterOp,
    ReshardOp,
)
from stagec.dialects.stg.config import config_bindings
from stagec.passes.collectives import MatchError, Step, match_reshard
from stagec.passes.diagnostics import PassError

__all__ = ["StgMatchCollectives", "match_collectives"]

# What each collective made of the value, for the names of intermediate values.
_MADE_BY: dict[type[CollectiveOp], str] = {
    AllGatherOp: "gathered",
    ReduceScatterOp: "scattered",
    AllReduceOp: "reduced",
    AllToAllOp: "exchanged",
    LocalSliceOp: "sliced",
}


@dataclass(frozen=True)
class StgMatchCollectives(ModulePass):
    """Replace every stg.reshard by its cheapest collectives (pull/push matching, docs/collectives.md)."""

    name = "stg-match-collectives"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        match_collectives(op)


def match_collectives(module: ModuleOp) -> None:
    """Replace every stg.reshard in `module` (in any region) by collectives, in place;
    raises PassError naming a reshard that cannot be matched."""
    bindings = config_bindings(module)
    # A model repeats its reshards (every layer, forward and backward): match each
    # distinct one once.
    matches: dict[tuple, list[Step]] = {}
    for reshard in [op for op in module.walk() if isinstance(op, ReshardOp)]:
        _replace(reshard, bindings, matches)


def _replace(reshard: ReshardOp, bindings: dict[str, int], matches: dict[tuple, list[Step]]) -> None:
    src, dst = reshard.input.type, reshard.result.type
    mesh = reshard.mesh_op()
    sizes = {axis: size.subs(bindings).as_int() for axis, size in mesh.axis_sizes.items()}
    key = (src, dst, tuple(sizes.items()))
    if key not in matches:
        try:
            matches[key] = match_reshard(src, dst, sizes, bindings)
        except MatchError as error:
            raise PassError(
                f"'stg.reshard' {src.layout_str()} -> {dst.layout_str()}: {error}", reshard
            ) from None
    steps = matches[key]
    if not steps:
        reshard.result.replace_all_uses_with(reshard.input)
        Rewriter.erase_op(reshard)
        return
    base = reshard.result.name_hint
    value: SSAValue = reshard.input
    new_ops: list[CollectiveOp] = []
    for step in steps:
        op = step.op(value, mesh.sym_name.data, step.axes, step.result)
        value = op.result
        value.name_hint = f"{base}_{_MADE_BY[step.op]}" if base else None
        new_ops.append(op)
    value.name_hint = base
    Rewriter.replace_op(reshard, new_ops, [value])


