"""What stg-unshard and stg-offload (deepcompile.md §4.3, §4.4) find in a scheduled step
and rebuild in it, beside the profile (block_profile.py):

- `gather_sites(function)`: every asynchronous parameter all-gather of the scheduled
  form - alone, or a member of a fused `stg.group` (stg-prefetch's Fuse) - with the
  shard read it gathers, its token and its wait;
- `gather_micros`: T_c(V) from the profile's all-gather samples, else the cost model
  (as stg-prefetch reads it);
- `top_level(op, block)`: the ancestor of `op` standing in `block`;
- `drop_group_member`, `with_extra_scan`, `with_extra_yield(s)`: an op with regions
  rebuilt with one member, scanned value or result less or more (xDSL ops have fixed
  operands and results).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Block, Operation, SSAValue

from stagec.dialects.stg.comm import AllGatherOp
from stagec.dialects.stg.memory import WaitOp
from stagec.dialects.stg.schedule import GroupOp
from stagec.dialects.stg.state import ParamOp
from stagec.dialects.stg.structure import PhaseOp, RepeatOp, YieldOp, unstacked
from stagec.passes.deepcompile.gathers import param_chain


@dataclass(eq=False)
class GatherSite:
    """One all-gather of a parameter shard and the wait that opens its buffer."""

    gather: AllGatherOp  # alone (async), or a member of `group`
    group: GroupOp | None
    reads: list[Operation]  # the stg.param read and the views between it and the gather
    wait: WaitOp

    @property
    def param(self) -> ParamOp:
        return self.reads[0]

    @property
    def name(self) -> str:
        return self.param.tensor_name.data

    @property
    def stream(self) -> str | None:
        stream = (self.group or self.gather).properties.get("stream")
        return stream.data if isinstance(stream, StringAttr) else None

    def layer_loops(self) -> list[RepeatOp]:
        """The stg.repeat bodies the shard read stands in, innermost first."""
        out, parent = [], self.param.parent_op()
        while parent is not None:
            if isinstance(parent, RepeatOp):
                out.append(parent)
            parent = parent.parent_op()
        return out


def _only_wait(token: SSAValue) -> WaitOp | None:
    uses = list(token.uses)
    return uses[0].operation if len(uses) == 1 and isinstance(uses[0].operation, WaitOp) else None


def gather_sites(function) -> list[GatherSite]:
    """Every waited parameter all-gather of `function`, in program order."""
    sites = []
    for op in function.walk():
        if isinstance(op, AllGatherOp) and op.is_async is not None:
            reads, wait = param_chain(op.input), _only_wait(op.results[0])
            if reads is not None and wait is not None:
                sites.append(GatherSite(op, None, reads, wait))
        elif isinstance(op, GroupOp) and op.is_async is not None and op.collective_kind() is AllGatherOp:
            yielded = op.body.block.last_op
            for member in op.members():
                if member.results[0] not in yielded.operands:
                    continue
                token = op.outputs[list(yielded.operands).index(member.results[0])]
                reads, wait = param_chain(member.operands[0]), _only_wait(token)
                if reads is not None and wait is not None:
                    sites.append(GatherSite(member, op, reads, wait))
    return sites


def group_size(gather: AllGatherOp, env) -> int:
    return prod(int(env[a]) for a in gather.axis_names)


_COST_MODELS: dict = {}  # hardware name -> CostModel, built once


def gather_micros(profile, hardware: str, gathered: int, n: int) -> float:
    """T_c(V): the profile's all-gather samples, else the cost model's alpha-beta."""
    if n <= 1:
        return 0.0
    found = profile.all_gather_micros(gathered, n) if profile is not None else None
    if found is not None:
        return found
    if hardware not in _COST_MODELS:
        from stagec.runtime.cost.model import CostModel

        _COST_MODELS[hardware] = CostModel(hardware)
    return _COST_MODELS[hardware].collective_micros("all_gather", gathered / n, n)


def top_level(op: Operation, block: Block) -> Operation | None:
    """The ancestor of `op` (or op itself) that stands in `block`."""
    while op is not None and op.parent_block() is not block:
        op = op.parent_op()
    return op


def erase_unused(ops: list[Operation]) -> None:
    """Erase `ops` (a shard read chain, last first) while nothing uses them."""
    for op in reversed(ops):
        if op.parent is not None and all(not list(r.uses) for r in op.results):
            op.detach()
            op.erase()


def drop_group_member(group: GroupOp, member: Operation) -> None:
    """Rebuild a fused all-gather group without `member` (its token must be unused)."""
    body = group.body.block
    yielded = body.last_op
    index = list(yielded.operands).index(member.results[0])
    kept = [(v, r) for i, (v, r) in enumerate(zip(yielded.operands, group.outputs)) if i != index]
    yielded.detach()
    yielded.erase()
    member.detach()
    member.erase()
    if not kept:
        group.detach()
        group.erase()
        return
    body.add_op(YieldOp(*[v for v, _ in kept]))
    stream = group.properties.get("stream")
    new = GroupOp(group.detach_region(group.body), is_async=group.is_async is not None,
                  stream=stream.data if isinstance(stream, StringAttr) else None, ready=group.ready is not None)
    new.attributes.update(group.attributes)
    group.parent_block().insert_op_before(new, group)
    for (_, old), fresh in zip(kept, new.outputs):
        fresh.name_hint = old.name_hint
        old.replace_all_uses_with(fresh)
    group.detach()
    group.erase()


def with_extra_scan(loop: RepeatOp, stack: SSAValue) -> tuple[RepeatOp, SSAValue]:
    """`loop` rebuilt scanning `stack` too; returns it and the body's slice argument."""
    body = loop.detach_region(loop.body)
    block = body.block
    arg = block.insert_arg(unstacked(stack.type), len(block.args))
    offset = (loop.offset_expr, loop.stack_expr) if loop.offset is not None else (None, None)
    new = RepeatOp(loop.count_expr, list(loop.carried), [*loop.scanned, stack], body,
                   reverse=loop.reverse is not None, offset=offset[0], stack=offset[1])
    new.attributes.update(loop.attributes)
    loop.parent_block().insert_op_before(new, loop)
    for old, fresh in zip(loop.results, new.results):
        fresh.name_hint = old.name_hint
        old.replace_all_uses_with(fresh)
    loop.detach()
    loop.erase()
    return new, arg


def with_extra_yield(phase: PhaseOp, value: SSAValue) -> tuple[PhaseOp, SSAValue]:
    """`phase` rebuilt yielding `value` too; returns it and the new result."""
    new, (result,) = with_extra_yields(phase, [value])
    return new, result


def with_extra_yields(phase: PhaseOp, values: list[SSAValue]) -> tuple[PhaseOp, list[SSAValue]]:
    """`phase` rebuilt yielding `values` too, in that order; returns it and the new
    results (one rebuild for many: each moves every use of the phase's results)."""
    block = phase.body.block
    yielded = block.last_op
    operands = [*yielded.operands, *values]
    yielded.detach()
    yielded.erase()
    block.add_op(YieldOp(*operands))
    new = PhaseOp(phase.kind.data, phase.detach_region(phase.body))
    new.attributes.update(phase.attributes)
    phase.parent_block().insert_op_before(new, phase)
    for old, fresh in zip(phase.results, new.results):
        fresh.name_hint = old.name_hint
        old.replace_all_uses_with(fresh)
    phase.detach()
    phase.erase()
    added = list(new.results[len(new.results) - len(values):])
    for value, result in zip(values, added):
        result.name_hint = value.name_hint
    return new, added
