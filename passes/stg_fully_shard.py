"""stg-fully-shard: DeepCompile's fully-sharded form (deepcompile.md §4.1, Fig. 4) - each
parameter is all-gathered once per graph, just before its first use, and released
right after its last use, found by dependency analysis over all its users.

A *graph* is what DeepCompile compiles as one: the forward phase, or the backward phase
with the recompute inside it (its two torch.compile graphs); a step without phases is
one graph. stg-shard{fsdp=N} already puts an all-gather before every use of a
parameter, so a parameter read twice in one graph - a recomputed layer's weight (the
recompute and the layer's backward), tied input and output embeddings - is gathered
twice. This pass keeps the first all-gather, points every user at it, erases the
others, and releases the buffer after the last user in execution order:

    %w1 = stg.param "w" : T_shard                %w1 = stg.param "w" : T_shard
    %g1 = stg.all_gather %w1 ...                 %g1 = stg.all_gather %w1 ...
    %a = stg.einsum ... %g1 ...          ==>     %a = stg.einsum ... %g1 ...
    %w2 = stg.param "w" : T_shard                %b = stg.einsum ... %g1 ...
    %g2 = stg.all_gather %w2 ...                 stg.release %g1 : T_full
    %b = stg.einsum ... %g2 ...

Where the first gather stands inside a nested phase (the recompute) and later users
outside it, the phase yields the gathered buffer, so the gather stays at its first
use. A parameter is gathered again in the next graph (the backward re-gathers what
the forward released): keeping it across graphs is stg-unshard's decision (§4.3).

Gradients are reduce-scattered and accumulate partitioned: stg-shard emits one
reduce-scatter per gradient, and this pass checks that every `"grad"` state of a
gathered parameter is assigned the partitioned shard (the parameter's own layout), so
across gradient-accumulation micro-batches the accumulator stays 1/N of the gradient
(what PyTorch FSDP does not do, deepcompile.md §5.2).

Relation to the per-unit form: `stg-fsdp-units` + `stg-insert-releases` are PyTorch
FSDP's schedule (a layer's parameters gathered as one flat unit, freed after the
unit); stg-fully-shard is DeepCompile's per-parameter alternative to stg-fsdp-units.
The DeepCompile pipeline is `stg-shard{fsdp=N}, stg-match-collectives, stg-fully-shard,
stg-schedule, stg-prefetch{...}`: run it instead of stg-fsdp-units (a grouped
all-gather is refused). stg-insert-releases after it changes nothing (every gathered
parameter is released already).

Requires: stg IR after stg-shard and stg-match-collectives, not yet scheduled (no
`stg.scheduled` function, no grouped parameter all-gathers). Guarantees: in each graph
each parameter (name and layer) is all-gathered at most once per loop iteration that
reads it, before its first use; the buffer is released exactly once, after its last
use (unless it leaves the function); every user reads a value the gather dominates.
Running it twice changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from stagec.dialects.stg.comm import AllGatherOp
from stagec.dialects.stg.memory import ReleaseOp
from stagec.dialects.stg.names import PhaseKind
from stagec.dialects.stg.schedule import SCHEDULED, GroupOp
from stagec.dialects.stg.state import AssignOp, ParamOp
from stagec.dialects.stg.structure import LoopOp, PhaseOp, YieldOp
from stagec.passes.diagnostics import PassError
from stagec.passes.schedule.grouping import VIEWS, ancestor_in

__all__ = ["StgFullyShard", "FullyShardResult", "fully_shard"]


@dataclass(frozen=True)
class StgFullyShard(ModulePass):
    """Gather each parameter once per graph before its first use; release it after its last use."""

    name = "stg-fully-shard"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fully_shard(op)


@dataclass(frozen=True)
class FullyShardResult:
    gathers_merged: int  # all-gathers erased because an earlier one in the graph serves their users
    released: int  # stg.release ops inserted
    gradients_checked: int  # "grad" states found partitioned


def fully_shard(module: ModuleOp) -> FullyShardResult:
    """Rewrite `module` in place (module doc)."""
    merged = released = checked = 0
    for fn in module.ops:
        if not isinstance(fn, func.FuncOp):
            continue
        if SCHEDULED in fn.attributes:
            raise PassError("stg-fully-shard runs before stg-schedule: the function is already scheduled", fn)
        gathers = _parameter_gathers(fn)
        checked += _check_partitioned_gradients(fn, gathers)
        groups: dict[tuple, list[AllGatherOp]] = {}
        for g in gathers:
            groups.setdefault(_graph_key(g), []).append(g)
        for members in groups.values():
            buffer, n = _merge(members)
            merged += n
            released += _release_after_last_use(buffer)
    return FullyShardResult(merged, released, checked)


def _param_of(value: SSAValue) -> ParamOp | None:
    owner = value.owner
    while isinstance(owner, VIEWS) and len(owner.operands) == 1:
        owner = owner.operands[0].owner
    return owner if isinstance(owner, ParamOp) else None


def _parameter_gathers(fn: func.FuncOp) -> list[AllGatherOp]:
    found = []
    for op in fn.walk():  # program order: a first gather precedes the later ones
        if isinstance(op, GroupOp) and op.collective_kind() is AllGatherOp and \
                any(_param_of(m.input) is not None for m in op.members()):
            raise PassError("stg-fully-shard gathers parameter by parameter: run it instead of stg-fsdp-units, "
                            "not after it (this stg.group coalesces parameter all-gathers)", op)
        if isinstance(op, AllGatherOp) and not isinstance(op.parent_op(), GroupOp) and _param_of(op.input):
            if op.is_async is not None:
                raise PassError("stg-fully-shard runs before stg-schedule: this parameter all-gather is async", op)
            found.append(op)
    return found


def _graph(op: Operation) -> Operation | None:
    """The outermost forward or backward phase holding `op` (None: the function)."""
    graph, parent = None, op.parent_op()
    while parent is not None:
        if isinstance(parent, PhaseOp) and parent.kind.data in (PhaseKind.FORWARD, PhaseKind.BACKWARD):
            graph = parent
        parent = parent.parent_op()
    return graph


def _innermost_loop(op: Operation) -> Operation | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, (LoopOp, func.FuncOp)):
        parent = parent.parent_op()
    return parent


def _graph_key(gather: AllGatherOp) -> tuple:
    """Gathers with one key read the same parameter tensor in one graph and one loop
    iteration: one buffer serves them all."""
    param = _param_of(gather.input)
    assert param is not None
    layer = param.properties.get("layer")
    return (param.tensor_name.data, str(layer), str(gather.input.type), str(gather.result.type),
            tuple(gather.axis_names), id(_graph(gather)), id(_innermost_loop(gather)))


def _merge(members: list[AllGatherOp]) -> tuple[SSAValue, int]:
    """Serve every member's users from the first member's buffer; the buffer's value in
    the block where all users are (where it is released) and how many gathers went."""
    first = members[0]
    if len(members) == 1:
        return first.result, 0
    name = _param_of(first.input).tensor_name.data  # type: ignore[union-attr]
    home = _common_block([u.operation for m in members for u in m.result.uses] + list(members))
    if _assigned_in(home, name):
        return first.result, 0  # the parameter changes in between: each read gathers its own value
    buffer = _escape_to(first.result, home)
    for later in members[1:]:
        later.result.replace_all_uses_with(buffer)
        source = later.input
        later.detach()
        later.erase()
        # the shard read (and any view of it) is dead now
        while source is not None and not source.uses and isinstance(source.owner, (ParamOp, *VIEWS)):
            owner = source.owner
            source = owner.operands[0] if owner.operands else None
            owner.detach()
            owner.erase()
    return buffer, len(members) - 1


def _common_block(ops: list[Operation]) -> Block:
    def chain(op: Operation) -> list[Block]:
        blocks, block = [], op.parent_block()
        while block is not None:
            blocks.append(block)
            parent = block.parent_op()
            block = parent.parent_block() if parent is not None else None
        return blocks[::-1]

    chains = [chain(op) for op in ops]
    common = chains[0][0]
    for level in zip(*chains):
        if all(b is level[0] for b in level):
            common = level[0]
        else:
            break
    return common


def _assigned_in(block: Block, name: str) -> bool:
    """Whether the parameter itself is written in `block` (an update between two reads)."""
    return any(isinstance(op, AssignOp) and op.key == (name, None) for top in block.ops for op in top.walk())


def _escape_to(value: SSAValue, home: Block) -> SSAValue:
    """`value`, or the results of the phases it leaves through to reach `home`: a gather
    nested in a phase (the recompute) is yielded out of it, so it stays at its first use."""
    while value.owner.parent_block() is not home:
        phase = value.owner.parent_op()
        if not isinstance(phase, PhaseOp):
            raise PassError("stg-fully-shard: a parameter's users span a loop boundary; gather it per iteration",
                            value.owner)
        value = _yield_from_phase(phase, value)
    return value


def _yield_from_phase(phase: PhaseOp, value: SSAValue) -> SSAValue:
    old_yield = phase.body.block.last_op
    assert isinstance(old_yield, YieldOp)
    new_yield = YieldOp(*old_yield.operands, value)
    phase.body.block.insert_op_before(new_yield, old_yield)
    old_yield.detach()
    old_yield.erase()
    region = phase.detach_region(phase.body)
    new = PhaseOp(phase.kind.data, region)
    new.attributes |= phase.attributes
    block = phase.parent_block()
    assert block is not None
    block.insert_op_before(new, phase)
    for old, result in zip(phase.outputs, new.outputs):
        result.name_hint = old.name_hint
        old.replace_all_uses_with(result)
    phase.detach()
    phase.erase()
    out = new.outputs[-1]
    out.name_hint = value.name_hint
    return out


def _release_after_last_use(value: SSAValue) -> int:
    block = value.owner.parent_block()
    if block is None or not value.uses:
        return 0
    users = [ancestor_in(use.operation, block) for use in value.uses]
    if any(isinstance(u, ReleaseOp) for u in users) or any(u is block.last_op for u in users):
        return 0  # released already, or it leaves the block (and the function)
    last = max(users, key=block.get_operation_index)
    block.insert_op_after(ReleaseOp(value), last)
    return 1


def _check_partitioned_gradients(fn: func.FuncOp, gathers: list[AllGatherOp]) -> int:
    """Every "grad" state of a gathered parameter holds the parameter's shard (module doc)."""
    shard_type = {}
    for g in gathers:
        param = _param_of(g.input)
        shard_type[param.tensor_name.data] = param.result.type  # type: ignore[union-attr]
    checked = 0
    for op in fn.walk():
        if isinstance(op, AssignOp) and op.state_name.data == "grad" and op.key[1] in shard_type:
            want = shard_type[op.key[1]]
            if _local_shape(op.value.type) != _local_shape(want):
                raise PassError(
                    f"the gradient of '{op.key[1]}' accumulates as {op.value.type}, not partitioned as its "
                    f"parameter ({want}): fully-sharded training reduce-scatters each gradient", op)
            checked += 1
    return checked


def _local_shape(ty) -> list[str]:
    return [str(d) for d in ty.local_shape()] if hasattr(ty, "local_shape") else [str(ty)]
