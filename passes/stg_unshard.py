"""stg-unshard{memory-limit}: DeepCompile's selective unsharding (deepcompile.md §4.3) -
parameters kept gathered for the whole step, chosen by T_c(B(o)) / B(o) while the
memory the profile leaves allows.

After stg-prefetch each parameter is all-gathered once per graph and loop iteration
(the forward, the backward with its recompute, every micro-batch of gradient
accumulation) and released after its last use there. Parameters do not change until
the optimizer step, so a parameter kept unsharded is gathered once, before the first
top-level op of the step that gathers it, and released after the last top-level op
that uses it (before the optimizer phase writes it): every other all-gather of it is
removed, with the waits and releases around them - the backward's gathers (§4.3:
"eliminating the need for all-gather in the backward pass") and, across gradient
accumulation, the gathers of every micro-batch after the first. Its gradients are
reduce-scattered as before.

A parameter of a layer stack (read in a `stg.repeat` body) is kept for every layer:
a prologue `stg.repeat` gathers each layer's shard and stacks the gathered buffers,
which every layer loop that gathered the parameter now scans (a reversed backward
loop takes layer i's slice in its iteration for layer i). Its cost is B(o) x layers.

In the unrolled step (stg-unroll-layers: `stg.param "w" layer K of N`) each
(parameter, layer K) slice is its own candidate, B(o) its slice's gathered buffer.
Where its first all-gather runs once per step (only phases around it) that gather
and its wait stay where stg-prefetch put them, so the forward still overlaps them:
the phases around it yield the buffer, every later gather of the slice (the
backward's) goes and its uses take the yielded buffer, and one release follows the
last use in the innermost block that sees the buffer. Under a micro-batch loop the
slice is gathered once before the loop, as a global parameter is.

Selection (§4.3): candidates in decreasing T_c(B(o)) / B(o) (the all-gather time per
byte: small buffers first, Fig. 5(d)), each kept while the profile's peak P_mem (of
the program this pass runs on: after prefetch) plus the bytes kept so far and its own
stay under M; a candidate that does not fit is passed over for smaller ones. Keeping
a buffer alive adds at most its bytes at any position, and removing gathers only
frees memory, so the memory analysis's peak after the pass stays under M.

Options: `memory-limit` (M, bytes; 0: the hardware's HBM capacity), `profile` (a
version 2 profile file of this program; without one, the cost model's), `hardware`
(h100-sxm). T_c(V) from the profile's all-gather samples, else the cost model.

Requires: the scheduled form after stg-fully-shard and stg-schedule (stg-prefetch
optional), sizes bound (stg-instantiate, a profile's bindings, or `bindings`).
Guarantees: every use of a kept parameter follows its one wait; its buffer is released
once, after its last use; the memory analysis's peak is under M whenever the
profile's peak was.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, UnitAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from stagec.passes.deepcompile.decisions import record
from stagec.dialects.stg.attributes import TokenType
from stagec.dialects.stg.comm import AllGatherOp
from stagec.dialects.stg.memory import ReleaseOp, WaitOp
from stagec.dialects.stg.schedule import SCHEDULED
from stagec.dialects.stg.structure import PhaseOp, RepeatOp, YieldOp
from stagec.passes.deepcompile.block_profile import BlockProfile, profiled_view
from stagec.passes.deepcompile.sites import (
    GatherSite,
    drop_group_member,
    erase_unused,
    gather_micros,
    gather_sites,
    group_size,
    top_level,
    with_extra_scan,
    with_extra_yields,
)
from stagec.passes.diagnostics import PassError
from stagec.runtime.cost.profile import Profile, ProfileError, load_profile

__all__ = ["Candidate", "StgUnshard", "UnshardResult", "unshard"]


@dataclass(frozen=True)
class StgUnshard(ModulePass):
    """Keep parameters gathered by T_c(B)/B within the memory limit M (§4.3)."""

    name = "stg-unshard"

    memory_limit: int = 0
    """M in bytes (0: the hardware's HBM capacity)."""

    profile: str = ""
    """A version 2 profile file of this program (empty: the cost model's)."""

    hardware: str = "h100-sxm"
    """The hardware description the cost model uses without a profile."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            profile = load_profile(self.profile) if self.profile else None
        except ProfileError as error:
            raise PassError(str(error)) from None
        result = unshard(op, self, profile=profile)
        record(op, self.name, "parameters kept gathered", len(result.kept),
               detail=", ".join(result.kept[:8]) + (", ..." if len(result.kept) > 8 else ""))
        record(op, self.name, "bytes kept gathered", result.kept_bytes, unit="bytes")
        record(op, self.name, "all-gathers removed", result.removed_gathers)


@dataclass(frozen=True)
class Candidate:
    """A parameter that can be kept gathered, and what that costs and saves."""

    name: str
    bytes: int  # B(o): one gathered buffer
    micros: float  # T_c(B(o))
    layers: int  # buffers kept (a layer stack's size; 1 otherwise)
    gathers: int  # all-gather ops of it in the IR (one stays, or one is added before them)

    @property
    def ratio(self) -> float:
        return self.micros / self.bytes if self.bytes else 0.0

    @property
    def cost(self) -> int:
        return self.bytes * self.layers


@dataclass
class UnshardResult:
    """What the pass decided."""

    peak_bytes: int = 0  # the profile's peak P_mem
    limit: int = 0
    ranking: list[Candidate] = field(default_factory=list)  # by T_c(B)/B, highest first
    kept: list[str] = field(default_factory=list)  # in the order chosen
    kept_bytes: int = 0
    removed_gathers: int = 0


def unshard(module: ModuleOp, options: StgUnshard = StgUnshard(), *, profile: Profile | None = None,
            bindings: Mapping[str, int] | None = None) -> UnshardResult:
    """Choose and keep parameters gathered in `module`'s step function (module doc)."""
    functions = [f for f in module.ops if isinstance(f, func.FuncOp)]
    if not functions or any(SCHEDULED not in f.attributes for f in functions):
        raise PassError("stg-unshard keeps asynchronous all-gathers: run stg-fully-shard and stg-schedule first "
                        "(a function is not stg.scheduled)")
    view, limit = profiled_view("stg-unshard", module, profile, bindings, options.hardware, options.memory_limit)
    function = view.program.function
    positions = view.profile.schedule.positions
    result = UnshardResult(peak_bytes=max((p.mem_before_bytes for p in positions), default=0), limit=limit)

    by_param: dict[tuple[str, tuple[int, int] | None], list[GatherSite]] = {}
    for site in gather_sites(function):
        by_param.setdefault(_key(site), []).append(site)
    candidates = []
    for key, sites in by_param.items():
        layers = _layers(sites, view)
        if layers is None:
            continue
        if key[1] is not None and len(sites) == 1 and _in_phases(function, sites[0]):
            continue  # gathered once per step already: keeping it would only hold it longer
        first = sites[0]
        size = view.b_ag(first.gather)
        micros = gather_micros(view.profile, options.hardware, size, group_size(first.gather, view.env))
        candidates.append((Candidate(_label(key), size, micros, layers, len(sites)), key))
    # highest T_c(B)/B first; ties by name (a layer's slices by layer), so the order is
    # the same on every run
    candidates.sort(key=lambda c: (-c[0].ratio, c[1][0], c[1][1] or (-1, 0)))
    result.ranking = [c for c, _ in candidates]
    # sites and program order are found once: a keep removes only its own sites, moves
    # regions into rebuilt phases and loops (the ops stay), and rebuilds fused groups
    # (refreshed below); walking the step again per kept parameter made this quadratic
    chosen = []
    for candidate, key in candidates:
        if result.peak_bytes + result.kept_bytes + candidate.cost >= limit:
            continue
        chosen.append(key)
        result.kept.append(candidate.name)
        result.kept_bytes += candidate.cost
        result.removed_gathers += candidate.gathers
    in_place = [k for k in chosen if k[1] is not None and _in_phases(function, by_param[k][0])]
    # the kept buffers leave their phases first, each phase rebuilt once for all of them
    chains = dict(zip(in_place, _leave_phases(function, [by_param[k][0].wait.result for k in in_place])))
    order = _program_order(function)
    for key in chosen:
        sites = by_param[key]
        for site in sites:
            if site.group is not None:  # an earlier keep may have rebuilt its fused group
                site.group = site.gather.parent_op()
        if key in chains:
            _keep_in_place(function, sites, order, chains[key])
        else:
            keep_gathered(function.body.block, sites)
    return result


def _key(site: GatherSite) -> tuple[str, tuple[int, int] | None]:
    """A candidate: a parameter, or one layer's slice of it read with an explicit
    layer (stg-unroll-layers' `layer K of N`)."""
    return site.name, site.param.explicit_layer()


def _label(key: tuple[str, tuple[int, int] | None]) -> str:
    name, layer = key
    return name if layer is None else f"{name} layer {layer[0]} of {layer[1]}"


def _layers(sites: list[GatherSite], view: BlockProfile) -> int | None:
    """Buffers a kept parameter holds: 1, or its layer stack's size when every gather
    stands in one plain layer loop of that size; None when it cannot be kept here
    (nested or sliced layer loops, an explicit layer's slice read in a layer loop)."""
    loops = [s.layer_loops() for s in sites]
    if sites[0].param.explicit_layer() is not None:
        return 1 if all(not ls for ls in loops) else None
    if all(not ls for ls in loops):
        return 1
    if any(len(ls) != 1 or ls[0].offset is not None for ls in loops):
        return None
    counts = {ls[0].count_expr for ls in loops}
    if len(counts) != 1:
        return None
    return view.program.ev.int(counts.pop(), "a layer count")


def keep_gathered(body: Block, sites: list[GatherSite]) -> None:
    """Gather once before the first op of `body` that gathers, release after the last
    that uses it (module doc); `sites` are every gather of one parameter inside `body`
    (stg-fsdp2 keeps FSDP2's root group so, in a micro-batch's body)."""
    first = min((top_level(s.gather, body) for s in sites), key=_index)
    loops = [s.layer_loops() for s in sites]
    reads, gather, wait = _gather_ops(sites[0])
    if not loops[0]:
        for op in [*reads, gather, wait]:
            body.insert_op_before(op, first)
        kept_in = {None: wait.result}
        released, anchor = wait.result, wait
    else:
        count = loops[0][0].count_expr
        block = Block()
        for op in [*reads, gather, wait]:
            block.add_op(op)
        block.add_op(YieldOp(wait.result))
        prologue = RepeatOp(count, [], [], Region(block))
        prologue.results[0].name_hint = f"{wait.result.name_hint}_layers" if wait.result.name_hint else None
        body.insert_op_before(prologue, first)
        released, anchor = prologue.results[0], prologue
        kept_in = {}
        for loop in {id(ls[0]): ls[0] for ls in loops}.values():
            new, arg = with_extra_scan(loop, released)
            kept_in[id(new)] = arg
        loops = [s.layer_loops() for s in sites]  # the rebuilt loops hold the sites now
    aliases: set[SSAValue] = set()
    for site, ls in zip(sites, loops):
        value = kept_in[None] if not ls else kept_in[id(ls[0])]
        site.wait.result.replace_all_uses_with(value)
        aliases.add(value)
        _drop_gather(site)
    aliases |= _phase_aliases(aliases)
    last = anchor
    for value in [released, *aliases]:
        for use in list(value.uses):
            user = use.operation
            if isinstance(user, ReleaseOp):
                user.detach()
                user.erase()
                continue
            holder = top_level(user, body)
            if holder is not None and _index(holder) > _index(last):
                last = holder
    body.insert_op_after(ReleaseOp(released), last)


def _in_phases(function: func.FuncOp, site: GatherSite) -> bool:
    """Whether the site's all-gather and wait run once per step: only phases stand
    between them and the function (no micro-batch or layer loop)."""
    for op in (site.group or site.gather, site.wait):
        parent = op.parent_op()
        while parent is not function:
            if not isinstance(parent, PhaseOp):
                return False
            parent = parent.parent_op()
    return True


def _program_order(function: func.FuncOp) -> dict[Operation, int]:
    return {op: i for i, op in enumerate(function.walk())}


def _leave_phases(function: func.FuncOp, kept: list[SSAValue]) -> list[list[SSAValue]]:
    """For each kept buffer, the buffer and then the result of each phase around it
    (innermost first) that yields it out; the deepest phases are rebuilt first, each
    once with every buffer leaving it, in `kept`'s order."""
    holders = []
    for value in kept:
        phases, holder = [], value.owner.parent_op()
        while holder is not function:
            phases.append(holder)
            holder = holder.parent_op()
        holders.append(phases)
    chains = [[value] for value in kept]
    for depth in range(max((len(h) for h in holders), default=0), 0, -1):
        leaving: dict[Operation, list[int]] = {}
        for i, phases in enumerate(holders):
            if len(phases) >= depth:
                leaving.setdefault(phases[len(phases) - depth], []).append(i)
        for phase, members in leaving.items():
            _, results = with_extra_yields(phase, [chains[i][-1] for i in members])
            for i, value in zip(members, results):
                chains[i].append(value)
    return chains


def _keep_in_place(function: func.FuncOp, sites: list[GatherSite], order: dict[Operation, int],
                   chain: list[SSAValue]) -> None:
    """Keep one layer's slice gathered by its first all-gather, where stg-prefetch put
    it (so the forward still overlaps it): its value leaves its phases through their
    yields (`chain`: the buffer, then each phase's result, from `_leave_phases`), every
    later gather of the slice is removed and its uses take the kept value, and one
    release follows the last use, at the innermost level that sees it."""
    aliases: set[SSAValue] = set(chain)
    for site in sites[1:]:
        value = next(v for v in chain if _sees(v, site.wait))
        site.wait.result.replace_all_uses_with(value)
        _drop_gather(site)
    aliases |= _phase_aliases(aliases)
    last = sites[0].wait
    for value in aliases:
        for use in list(value.uses):
            user = use.operation
            if isinstance(user, ReleaseOp):
                user.detach()
                user.erase()
            elif isinstance(user, YieldOp) and isinstance(user.parent_op(), PhaseOp):
                continue  # the value leaves its phase: its uses are the alias's
            else:
                if user not in order or last not in order:  # an op made since: order afresh
                    order.clear()
                    order.update(_program_order(function))
                if order[user] > order[last]:
                    last = user
    # the innermost block around the last use that one of the aliases is visible in
    op = last
    while True:
        block = op.parent_block()
        visible = [v for v in chain if _sees(v, op)]
        if visible:
            block.insert_op_after(ReleaseOp(visible[0]), op)
            return
        op = op.parent_op()


def _sees(value: SSAValue, op: Operation) -> bool:
    """Whether `value` (an op result) is defined in a block around `op`."""
    block = value.owner.parent_block()
    parent: Operation | None = op
    while parent is not None:
        if parent.parent_block() is block:
            return True
        parent = parent.parent_op()
    return False


def _gather_ops(site: GatherSite) -> tuple[list[Operation], AllGatherOp, WaitOp]:
    """A fresh copy of a site's shard read, asynchronous all-gather and wait."""
    mapping: dict[SSAValue, SSAValue] = {}
    reads = [op.clone(value_mapper=mapping) for op in site.reads]
    for old, new in zip(site.reads, reads):
        for a, b in zip(old.results, new.results):
            mapping[a] = b
            b.name_hint = a.name_hint
    g = site.gather
    props = {k: v for k, v in g.properties.items() if k not in ("async", "stream")}
    props["async"] = UnitAttr()
    if site.stream is not None:
        props["stream"] = StringAttr(site.stream)
    full = g.results[0].type
    full = full.value_type if isinstance(full, TokenType) else full
    gather = AllGatherOp.create(operands=[mapping[g.operands[0]]], result_types=[TokenType(full)],
                                properties=props, attributes=dict(g.attributes))
    wait = WaitOp(gather.results[0])
    hint = site.wait.result.name_hint
    wait.result.name_hint = hint
    gather.results[0].name_hint = f"{hint}_t" if hint else None
    return reads, gather, wait


def _phase_aliases(values: set[SSAValue]) -> set[SSAValue]:
    """The phase results that yield one of `values` (a recompute phase's gathered
    weights leave it for the backward ops after it)."""
    out, work = set(), list(values)
    while work:
        value = work.pop()
        for use in value.uses:
            if isinstance(use.operation, YieldOp) and isinstance(use.operation.parent_op(), PhaseOp):
                alias = use.operation.parent_op().results[use.index]
                if alias not in out:
                    out.add(alias)
                    work.append(alias)
    return out


def _index(op: Operation) -> int:
    return list(op.parent_block().ops).index(op)


def _drop_gather(site) -> None:
    """Erase a site's wait (its uses already rewired), its gather (or its member of a
    fused group) and the shard reads only it used."""
    site.wait.detach()
    site.wait.erase()
    if site.group is not None:
        drop_group_member(site.group, site.gather)
    else:
        site.gather.detach()
        site.gather.erase()
    erase_unused(site.reads)
