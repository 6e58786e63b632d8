"""stg-fsdp2{prefetch, reshard-after-forward}: PyTorch FSDP2's parameter schedule
(`torch.distributed.fsdp.fully_shard` on every decoder layer and on the root model) as
a rewrite of the scheduled form, the baseline of deepcompile.md §5 (Fig. 7-8, "FSDP"),
so it is compared with DeepCompile's passes in one IR.

FSDP2 (torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py) all-gathers a
group's parameters as one collective before the group's forward (and its backward),
and frees the unsharded group after it (`reshard_after_forward=True`, the default;
during the backward's recompute it does not reshard: `post_forward` skips it under
backward, so a checkpointed layer is gathered once for recompute and backward). It
prefetches one group ahead: the next group's all-gather is issued when the current
one's parameters are ready, in the forward (the CPU runs ahead of the all-gather
stream, or `set_modules_to_forward_prefetch`) and in the backward (backward prefetch
of the next group in backward order, the default of one).

In the scheduled form after stg-fully-shard and stg-schedule (a parameter gathered
once per graph, asynchronously, waited before its first use, released after its
last), per block:

- a group is the parameters of one decoder layer: the layer of a layer-loop body, or
  of an explicit `layer K of N` parameter; the parameters of no layer are the root
  group (embeddings, final norm, output projection);
- a group's all-gathers become one `stg.group async` at the first member's place;
  the members' waits stay (the group completes at once, so the first wait blocks
  for all of it);
- resharding frees the group at once: the members' releases move to where the last
  of them stands (after the group's forward, or its backward);
- with `prefetch` (1, FSDP2's default; 0: none), group k+1 is issued right after
  the first wait of group k.

- a group's gradients are reduce-scattered as one collective (FSDP2's `foreach_reduce`
  per group): the reduce-scatters a group issues together (a burst: no compute between
  them, their waits later - stg-defer-gradient-waits) become one `stg.group async` at
  the last of them.

- the root group is not resharded after the forward (`root-reshard-after-forward`
  false, FSDP2's heuristic: `fully_shard` sets the root state's
  `reshard_after_forward` to False, "since its parameters would typically be
  immediately all-gathered for backward"): each root parameter is gathered once per
  micro-batch, before the micro-batch's forward, and the group is freed at once after
  its last use in the backward (post-backward reshard). Keeping a buffer from one
  graph into the next is stg-unshard's rewrite (`keep_gathered`), applied to the root
  group in the innermost block that holds all of its gathers (a micro-batch loop's
  body, or the step's).

A layer loop that stays
structured holds one group per body, so the next layer's prefetch - which crosses an
iteration - is made once stg-unroll-layers has unrolled it; `reshard-after-forward=false`
is refused (keeping the gathered layer into the backward crosses graphs).

Requires: the scheduled form after stg-fully-shard and stg-schedule. Guarantees:
every gather is issued before its wait, every buffer released after its last use;
one all-gather per group per graph. Decisions (passes/deepcompile/decisions.py): the
groups made, the gathers in them, the next-group prefetches, the reduce-scatter calls
made of grouped gradients.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from stagec.dialects.stg.comm import AllGatherOp, ReduceScatterOp
from stagec.dialects.stg.memory import ReleaseOp, WaitOp
from stagec.dialects.stg.names import GRAD
from stagec.dialects.stg.schedule import SCHEDULED, GroupOp
from stagec.dialects.stg.state import AssignOp
from stagec.dialects.stg.structure import LoopOp, PhaseOp
from stagec.passes.deepcompile.decisions import record
from stagec.passes.deepcompile.gathers import (
    GatherUnit,
    block_units,
    coalesce,
    place,
    stream_of,
)
from stagec.passes.deepcompile.sites import GatherSite, gather_sites
from stagec.passes.diagnostics import PassError
from stagec.passes.schedule.grouping import is_compute
from stagec.passes.stg_unshard import keep_gathered
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

__all__ = ["Fsdp2Result", "StgFsdp2", "fsdp2"]


@dataclass(frozen=True)
class StgFsdp2(ModulePass):
    """FSDP2: one all-gather per layer group, prefetch of the next group, reshard after use."""

    name = "stg-fsdp2"

    prefetch: int = 1
    """Groups prefetched ahead (FSDP2: 1; 0: each group issued where it is first used)."""

    reshard_after_forward: bool = True
    """FSDP2's default; false keeps the gathered layer into the backward (refused here)."""

    root_reshard_after_forward: bool = False
    """FSDP2's root group (embeddings, final norm, output projection): false, as
    `fully_shard` sets it on the root, keeps it gathered from the forward into the
    backward; true frees it after the forward as the layers are."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fsdp2(op, self)


@dataclass
class Fsdp2Result:
    """What the pass decided."""

    groups: int = 0  # one all-gather per group per graph
    gathers_grouped: int = 0  # parameter all-gathers inside them
    prefetched: int = 0  # groups issued after the previous group's first wait
    reductions: int = 0  # one reduce-scatter call per group's burst of gradients
    reductions_grouped: int = 0  # gradient reduce-scatters inside them
    root_kept: int = 0  # root parameters gathered once per micro-batch, forward to backward
    members: list[list[str]] = field(default_factory=list)


def _keep_root(function: func.FuncOp) -> int:
    """Keep the root group's parameters (no layer: not in a layer loop, no explicit
    layer) gathered from the forward into the backward, in the innermost block that
    holds every gather of the group; returns how many."""
    by_param: dict[str, list[GatherSite]] = {}
    for site in gather_sites(function):
        if site.param.explicit_layer() is None and not site.layer_loops():
            by_param.setdefault(site.name, []).append(site)
    if not by_param:
        return 0
    body = _common_block([s.group or s.gather for sites in by_param.values() for s in sites])
    for sites in by_param.values():
        keep_gathered(body, sites)
    return len(by_param)


def _common_block(ops: list[Operation]) -> Block:
    """The innermost block that holds every op of `ops` (at any depth)."""
    def blocks(op: Operation) -> list[Block]:
        out = []
        while op is not None:
            out.append(op.parent_block())
            op = op.parent_op()
        return out[::-1]  # outermost first

    chains = [blocks(op) for op in ops]
    common = chains[0][0]
    for depth in range(min(len(c) for c in chains)):
        if any(c[depth] is not chains[0][depth] for c in chains):
            break
        common = chains[0][depth]
    return common


def fsdp2(module: ModuleOp, options: StgFsdp2 = StgFsdp2()) -> Fsdp2Result:
    """Rewrite every block of `module`'s step function as FSDP2 gathers (module doc)."""
    functions = [f for f in module.ops if isinstance(f, func.FuncOp)]
    if not functions or any(SCHEDULED not in f.attributes for f in functions):
        raise PassError("stg-fsdp2 groups asynchronous all-gathers: run stg-fully-shard and stg-schedule first "
                        "(a function is not stg.scheduled)")
    if not options.reshard_after_forward:
        raise PassError("stg-fsdp2: reshard-after-forward=false keeps each gathered layer from the forward into the "
                        "backward, across graphs: that is stg-unshard's rewrite, not this baseline's")
    if options.prefetch not in (0, 1):
        raise PassError(f"stg-fsdp2: prefetch is 0 or 1 (groups ahead), not {options.prefetch}")
    result = Fsdp2Result()
    if not options.root_reshard_after_forward:
        for fn in functions:
            result.root_kept += _keep_root(fn)
    for fn in functions:
        _blocks(fn.body.block, options, result)
    for fn in functions:
        for op in fn.walk():
            for region in op.regions:
                for block in region.blocks:
                    _reshard_together(block)
    record(module, "stg-fsdp2", "layer groups (one all-gather each)", result.groups)
    record(module, "stg-fsdp2", "parameter all-gathers in them", result.gathers_grouped)
    record(module, "stg-fsdp2", "next-group prefetches", result.prefetched)
    record(module, "stg-fsdp2", "root parameters kept from the forward into the backward", result.root_kept)
    record(module, "stg-fsdp2", "gradient reduce-scatter calls (one per group)", result.reductions)
    record(module, "stg-fsdp2", "gradient reduce-scatters in them", result.reductions_grouped)
    return result


def _blocks(block: Block, options: StgFsdp2, result: Fsdp2Result) -> None:
    for op in block.ops:
        if isinstance(op, (PhaseOp, LoopOp)):
            for region in op.regions:
                for inner in region.blocks:
                    _blocks(inner, options, result)
    _group_walk(block, options, result)
    _group_reductions(block, result)


def _group_reductions(block: Block, result: Fsdp2Result) -> None:
    """Each run of a group's gradient reduce-scatters issued together becomes one call,
    at the last of them (every member's input is ready there; their waits follow)."""
    runs: list[list[ReduceScatterOp]] = []
    key = None
    for op in block.ops:
        if isinstance(op, ReduceScatterOp) and op.is_async is not None:
            layer = _gradient_layer(op)
            if layer is None:
                key = None
                continue
            this = (stream_of(op), op.axis_names, layer)
            if key != this:
                runs.append([])
                key = this
            runs[-1].append(op)
        elif is_compute(op) or (isinstance(op, WaitOp) and runs and op.operands[0].owner in runs[-1]):
            key = None  # compute, or a wait of the run's own reductions, ends the run
    for run in runs:
        if len(run) < 2:
            continue
        anchor = run[-1].next_op
        group = coalesce(run)
        if anchor is None:
            block.add_op(group)
        else:
            block.insert_op_before(group, anchor)
        result.reductions += 1
        result.reductions_grouped += len(run)


def _gradient_layer(op: ReduceScatterOp) -> tuple | None:
    """The FSDP2 group of the parameter whose gradient `op` reduces: ("layer", K) or
    ("root",), from the `stg.assign` to "grad" its result flows to; None if it is no
    gradient's reduction."""
    work, seen = [r for r in op.results], set()
    while work:
        value = work.pop()
        for use in value.uses:
            user = use.operation
            if id(user) in seen:
                continue
            seen.add(id(user))
            if isinstance(user, AssignOp) and user.state_name.data == GRAD:
                layer = user.explicit_layer()
                return ("layer", layer[0]) if layer is not None else ("root",)
            work.extend(user.results)
    return None


def _source_group(value) -> GroupOp | None:
    """The async group whose gathered buffer `value` is: a wait of one of its tokens,
    directly or yielded out of a nested phase."""
    while True:
        owner = value.owner
        if isinstance(owner, WaitOp):
            token = owner.operands[0].owner
            return token if isinstance(token, GroupOp) and token.collective_kind() is AllGatherOp else None
        if isinstance(owner, PhaseOp):
            value = owner.body.block.last_op.operands[owner.results.index(value)]
            continue
        return None


def _reshard_together(block: Block) -> None:
    """FSDP2 frees a group's unsharded parameters at once: the releases in `block` of
    one group's buffers move to where the last of them stands."""
    by_group: dict[int, list[ReleaseOp]] = {}
    for op in block.ops:
        if isinstance(op, ReleaseOp):
            group = _source_group(op.operands[0])
            if group is not None:
                by_group.setdefault(id(group), []).append(op)
    for releases in by_group.values():
        last = releases[-1]
        for r in releases[:-1]:
            r.detach()
            block.insert_op_after(r, last)
            last = r


def _group_key(unit: GatherUnit) -> tuple:
    layer = unit.param.explicit_layer()
    return ("layer", layer[0]) if layer is not None else ("block",)


def _group_walk(block: Block, options: StgFsdp2, result: Fsdp2Result) -> None:
    ops, units = block_units(block)
    if not units:
        return
    index = {id(op): i for i, op in enumerate(ops)}
    groups: dict[tuple, list[GatherUnit]] = {}
    for u in sorted(units, key=lambda u: index[id(u.gather)]):
        groups.setdefault(_group_key(u), []).append(u)
    ordered = sorted(groups.values(), key=lambda g: min(index[id(u.wait)] for u in g))
    # where each group is issued: at its first gather, or after the previous group's first wait
    issue_after: dict[int, int] = {}  # id(op) -> group number issued right after it
    issue_at: dict[int, int] = {}  # id(op) -> group number issued right before it
    for k, members in enumerate(ordered):
        first_gather = min(members, key=lambda u: index[id(u.gather)]).gather
        if options.prefetch and k > 0:
            previous_wait = min((u.wait for u in ordered[k - 1]), key=lambda w: index[id(w)])
            if index[id(previous_wait)] < index[id(first_gather)]:
                issue_after[id(previous_wait)] = k
                result.prefetched += 1
                continue
        issue_at[id(first_gather)] = k
    gathers = {id(u.gather) for u in units}
    built: dict[int, list[Operation]] = {}

    def issue(k: int) -> list[Operation]:
        if k not in built:
            members = ordered[k]
            reads = [r for u in members for r in u.reads]
            same = all(stream_of(u.gather) == stream_of(members[0].gather) and
                       u.gather.axis_names == members[0].gather.axis_names for u in members)
            if len(members) > 1 and not same:
                raise PassError("stg-fsdp2: a layer's parameter all-gathers run on different streams or axes; "
                                "FSDP2 gathers a group over one mesh")
            built[k] = reads + [members[0].gather if len(members) == 1 else coalesce([u.gather for u in members])]
            result.groups += 1
            result.gathers_grouped += len(members)
            result.members.append([u.name for u in members])
        return built[k]

    flat: list[Operation] = []
    for op in ops:
        if id(op) in issue_at:
            flat.extend(issue(issue_at[id(op)]))
        if id(op) in gathers:
            continue
        flat.append(op)
        if id(op) in issue_after:
            flat.extend(issue(issue_after[id(op)]))
    place(block, flat)
