"""stg-prefetch{memory-limit, prefetch-limit, alpha}: DeepCompile's proactive prefetching
(deepcompile.md §4.2, Algorithm 1, Fig. 6) - parameter all-gathers issued as early as
the memory limit M allows, fused where fusing pays.

In the scheduled form an all-gather is issued asynchronously where it stands and its
`stg.wait` stands before the first use (stg-schedule). This pass moves the issue
earlier - the all-gather and the `stg.param` read it gathers - and leaves each wait
where it is, so the gather overlaps the compute in between. Per block (the ops of a
phase, of a layer body: S_0 = [o_1, ..., o_N]), Algorithm 1 walks S_0 in reverse,
carrying the group U of unscheduled all-gathers upward:

- at an all-gather o_i: with m_U = sum of B_ag over U + {o_i}, if
  P_mem(o_{i-1}) + m_U < M and m_U < M_prefetch, o_i joins U; otherwise U is scheduled
  at the current position (fused, below) and o_i starts a new U if it can pass o_{i-1}
  alone, else stays where it is;
- at any other op, U is scheduled right before it (right after it, when it is a
  release) when carrying U past o_{i-1} would cross M (P_mem(o_{i-1}) + m_U >= M) or
  when o_{i-1} writes a parameter of U;
- what is left in U at the top is scheduled at the block's start.

Two readings of the pseudocode, stated: its loop checks M only at all-gathers, which
lets U pass a memory peak between two of them, so the check is made at every op it
passes ("schedule U when the memory limit would be crossed", and what Fig. 6 shows:
the third gather waits for the first one's release); and its `else` branch drops o_i,
which here is scheduled with U's successor (a new U) or in place.

Fuse(U) walks U in issue order and merges the next all-gather (V2 bytes) into the
current fused one (V1) when T_c(V1) + T_c(V2) > alpha * T_c(V1 + V2), same stream
only; a fused one is one `stg.group async stream "..."` of synchronous all-gathers
whose tokens the original waits take. P_mem and B_ag come from the profile
(`profile=FILE`, version 2, made on this program: runtime/cost/profile.py) or, without
one, from the cost model on `hardware` and the memory analysis
(runtime/cost/profiling.py); T_c(V) from the profile's all-gather samples, else the
cost model. A block nested in another (a layer body in a phase) is done first, and
what its prefetching adds to its memory is added to the P_mem of the op that holds it.

Gathers move within their block: a layer's all-gathers are prefetched within the
layer body, and across the bodies of a structured layer loop only once the loop is
unrolled (not done here, see docs/deepcompile.md).

Options: `memory-limit` (M, bytes; 0: the hardware's HBM capacity), `prefetch-limit`
(M_prefetch, bytes; 0: no limit), `alpha` (1.5, the paper's), `profile` (a version 2
profile file; its `schedule.bindings` bind the sizes), `hardware` (h100-sxm). Without a
profile the program's sizes must be numbers (instantiated IR); a Python caller passes
bindings to `prefetch`.

Requires: the scheduled form after stg-fully-shard and stg-schedule (every function
`stg.scheduled`, parameter all-gathers async with their waits in the same block).
Guarantees: every all-gather still precedes its wait; no wait, release or compute op
moves; by the profile's P_mem, the memory before every op stays under M wherever it
was under M (a peak already over M is not prefetched into); fused groups verify.
Decisions (passes/deepcompile/decisions.py): the gathers moved, the fused groups.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from math import prod

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from stagec.dialects.stg.comm import AllGatherOp
from stagec.dialects.stg.memory import ReleaseOp, WaitOp
from stagec.dialects.stg.schedule import SCHEDULED, GroupOp
from stagec.dialects.stg.state import AssignOp
from stagec.dialects.stg.structure import LoopOp, PhaseOp, YieldOp
from stagec.passes.deepcompile.block_profile import BlockProfile, profiled_view
from stagec.passes.deepcompile.decisions import record
from stagec.passes.deepcompile.gathers import coalesce, place, shard_reads, stream_of
from stagec.passes.diagnostics import PassError
from stagec.runtime.cost.profile import Profile, ProfileError, load_profile

__all__ = ["DEFAULT_ALPHA", "PrefetchResult", "StgPrefetch", "prefetch"]

DEFAULT_ALPHA = 1.5  # deepcompile.md §4.2: "set to 1.5 in our experiments"


@dataclass(frozen=True)
class StgPrefetch(ModulePass):
    """Issue parameter all-gathers early under memory limit M (Algorithm 1); fuse by T_c."""

    name = "stg-prefetch"

    memory_limit: int = 0
    """M in bytes (0: the hardware's HBM capacity)."""

    prefetch_limit: int = 0
    """M_prefetch: the bytes one prefetch group may gather (0: no limit)."""

    alpha: float = DEFAULT_ALPHA
    """Fuse two all-gathers when T_c(V1) + T_c(V2) > alpha * T_c(V1 + V2)."""

    profile: str = ""
    """A version 2 profile file of this program (empty: the cost model's)."""

    hardware: str = "h100-sxm"
    """The hardware description the cost model uses without a profile."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            profile = load_profile(self.profile) if self.profile else None
        except ProfileError as error:
            raise PassError(str(error)) from None
        prefetch(op, self, profile=profile)


@dataclass
class PrefetchResult:
    """What the pass decided."""

    moved: int = 0  # all-gathers issued earlier than they stood
    fused_groups: int = 0  # stg.group ops made by Fuse
    fused_gathers: int = 0  # all-gathers inside them
    groups: list[list[str]] = field(default_factory=list)  # parameter names per scheduled prefetch group


def prefetch(module: ModuleOp, options: StgPrefetch = StgPrefetch(), *, profile: Profile | None = None,
             bindings: Mapping[str, int] | None = None) -> PrefetchResult:
    """Run Algorithm 1 on every block of `module`'s step function (module doc)."""
    functions = [f for f in module.ops if isinstance(f, func.FuncOp)]
    if not functions or any(SCHEDULED not in f.attributes for f in functions):
        raise PassError("stg-prefetch moves asynchronous all-gathers: run stg-fully-shard and stg-schedule first "
                        "(a function is not stg.scheduled)")
    if options.alpha <= 0:
        raise PassError(f"stg-prefetch: alpha must be > 0, not {options.alpha}")
    view, limit = profiled_view("stg-prefetch", module, profile, bindings, options.hardware, options.memory_limit)
    walker = _Walker(view, limit, options.prefetch_limit or float("inf"), options.alpha, options.hardware)
    walker.block(view.program.function.body.block)
    result = walker.result
    record(module, "stg-prefetch", "all-gathers issued earlier", result.moved)
    record(module, "stg-prefetch", "fused all-gather groups", result.fused_groups,
           detail=f"{result.fused_gathers} all-gathers in them" if result.fused_groups else "")
    return result


class _Walker:
    def __init__(self, view: BlockProfile, limit: int, group_limit: float, alpha: float, hardware: str):
        self.view, self.limit, self.group_limit, self.alpha = view, limit, group_limit, alpha
        self.hardware = hardware
        self.extra: dict[int, int] = {}  # id(op with regions) -> bytes prefetching added inside it
        self.result = PrefetchResult()
        self._cost = None

    # -- T_c(V) ------------------------------------------------------------------------

    def t_c(self, gathered: int, n: int) -> float:
        found = self.view.profile.all_gather_micros(gathered, n) if n > 1 else 0.0
        if found is not None:
            return found
        if self._cost is None:
            from stagec.runtime.cost.model import CostModel

            self._cost = CostModel(self.hardware)
        return self._cost.collective_micros("all_gather", gathered / n, n)

    def group_size(self, gather: AllGatherOp) -> int:
        return prod(int(self.view.env[a]) for a in gather.axis_names)

    # -- the walk ----------------------------------------------------------------------

    def block(self, block: Block) -> int:
        """Prefetch in `block` (nested blocks first); the most bytes it added anywhere."""
        for op in block.ops:
            if isinstance(op, (PhaseOp, LoopOp)):
                self.extra[id(op)] = max((self.block(b) for r in op.regions for b in r.blocks), default=0)
        return self._algorithm_1(block)

    def _units(self, block: Block) -> tuple[list[Operation], dict[int, list[Operation]]]:
        """S_0 (the block's ops but its terminator and the reads that move with their
        gather) and each prefetchable gather's unit: its shard reads and itself."""
        ops = [op for op in block.ops if not isinstance(op, (YieldOp, func.ReturnOp))]
        units: dict[int, list[Operation]] = {}
        for op in ops:
            if isinstance(op, AllGatherOp) and op.is_async is not None and self._waited_here(op, block):
                chain = shard_reads(op, block)
                if chain is not None:
                    units[id(op)] = chain + [op]
        moving = {id(o) for unit in units.values() for o in unit[:-1]}
        return [op for op in ops if id(op) not in moving], units

    @staticmethod
    def _waited_here(gather: AllGatherOp, block: Block) -> bool:
        uses = list(gather.results[0].uses)
        return len(uses) == 1 and isinstance(uses[0].operation, WaitOp) and uses[0].operation.parent_block() is block

    def _algorithm_1(self, block: Block) -> int:
        ops, units = self._units(block)
        if not units:
            return max((self.extra.get(id(o), 0) for o in ops), default=0)
        # P_mem of a release counts the buffer it frees: a group issued right before the
        # release lands where that buffer is still alive
        p_mem = [self.view.p_mem(o) + self.extra.get(id(o), 0) +
                 (self.view.program.ev.device_bytes(o.operands[0].type) if isinstance(o, ReleaseOp) else 0)
                 for o in ops]
        added = [0] * len(ops)  # bytes of prefetched buffers alive while ops[j] runs
        params = {id(g): units[id(g)][0].tensor_name.data for g in ops if id(g) in units}
        out: list[object] = []  # the new schedule, reversed: ops, and lists of gathers scheduled together
        group: list[AllGatherOp] = []  # U, latest first

        def m(gathers) -> int:
            return sum(self.view.b_ag(g) for g in gathers)

        def can_pass(gathers, j: int) -> bool:
            """Whether `gathers` may be issued before ops[j] (Algorithm 1, line 7)."""
            size = m(gathers)
            if size >= self.group_limit or p_mem[j] + size >= self.limit:
                return False
            names = {params[id(g)] for g in gathers}
            return not any(isinstance(o, AssignOp) and o.key[1] is None and o.key[0] in names for o in ops[j].walk())

        def passes(gathers, j: int) -> None:
            added[j] += m(gathers)

        for i in range(len(ops) - 1, -1, -1):
            op = ops[i]
            if id(op) in units:
                candidate = group + [op]
                if i > 0 and can_pass(candidate, i - 1):
                    group = candidate
                    passes(group, i - 1)
                    continue
                if i == 0 and m(candidate) < self.group_limit:
                    group = candidate
                    continue
                if group:
                    out.append(group)
                group = []
                if i > 0 and can_pass([op], i - 1):
                    group = [op]
                    passes(group, i - 1)
                else:
                    out.append([op])
                continue
            if group and i > 0 and not can_pass(group, i - 1):
                # U is scheduled right before op - or right after it when op is a
                # release: issued as early, with the released buffer gone first
                out.extend([group, op] if isinstance(op, ReleaseOp) else [op, group])
                group = []
                continue
            out.append(op)
            if group and i > 0:
                passes(group, i - 1)
        if group:
            out.append(group)
        self._rewrite(block, out[::-1], units, ops)
        return max((a + self.extra.get(id(o), 0) for a, o in zip(added, ops)), default=0)

    # -- the rewrite --------------------------------------------------------------------

    def _rewrite(self, block: Block, order: list, units: dict, ops: list[Operation]) -> None:
        original = {id(o): i for i, o in enumerate(ops)}
        # a gather moved if an op of S_0 that stood before it now comes after it
        seen_last = -1
        for item in order:
            if isinstance(item, Operation):
                seen_last = max(seen_last, original[id(item)]) if id(item) not in units else seen_last
                continue
            self.result.moved += sum(1 for g in item if original[id(g)] > seen_last + 1 and
                                     any(id(o) not in units for o in ops[seen_last + 1:original[id(g)]]))
        flat: list[Operation] = []
        for item in order:
            if isinstance(item, Operation):
                flat.append(item)
                continue
            gathers = item[::-1]  # issue order: the earliest first
            self.result.groups.append([units[id(g)][0].tensor_name.data for g in gathers])
            for fused in self._fuse(gathers):
                for g in fused:
                    flat.extend(units[id(g)][:-1])
                flat.append(fused[0] if len(fused) == 1 else self._group(fused))
        place(block, flat)

    def _fuse(self, gathers: list[AllGatherOp]) -> list[list[AllGatherOp]]:
        """Fuse(U): merge the next gather into the current one while
        T_c(V1) + T_c(V2) > alpha * T_c(V1 + V2) (same stream only)."""
        runs: list[list[AllGatherOp]] = []
        for g in gathers:
            if runs and stream_of(runs[-1][0]) == stream_of(g) and runs[-1][0].axis_names == g.axis_names:
                n = self.group_size(g)
                v1 = sum(self.view.b_ag(x) for x in runs[-1])
                v2 = self.view.b_ag(g)
                if self.t_c(v1, n) + self.t_c(v2, n) > self.alpha * self.t_c(v1 + v2, n):
                    runs[-1].append(g)
                    continue
            runs.append([g])
        return runs

    def _group(self, gathers: list[AllGatherOp]) -> GroupOp:
        group = coalesce(gathers)
        self.result.fused_groups += 1
        self.result.fused_gathers += len(gathers)
        return group


