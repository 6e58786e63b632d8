"""stg-zero3{prefetch-bucket-size, max-live-parameters}: DeepSpeed ZeRO-3's parameter
schedule as a rewrite of the scheduled form, the baseline of deepcompile.md §5
(Fig. 7-8, "ZeRO3"), so it is compared with DeepCompile's passes in one IR.

DeepSpeed runs ZeRO-3 from module hooks (deepspeed/runtime/zero/
partitioned_param_coordinator.py, `fetch_sub_module`): before a module runs it
all-gathers the module's parameters if they are not in flight, waits for them, then
*prefetches*: it pops the parameters of the next modules off its recorded trace, in
the order they will be used, and issues one coalesced all-gather for those not yet
gathered, until the bucket reaches
`min(stage3_max_live_parameters - n_available, stage3_prefetch_bucket_size)` elements
(the loop adds a parameter while the count is below it, so one large parameter always
goes). After the module it releases its parameters unless they are reused within
`stage3_max_reuse_distance` elements.

DeepSpeed's defaults (deepspeed/runtime/zero/config.py, DeepSpeedZeroConfig):
`stage3_prefetch_bucket_size` 5e7 elements, `stage3_max_live_parameters` 1e9,
`stage3_max_reuse_distance` 1e9, `stage3_param_persistence_threshold` 1e5.

In the scheduled form after stg-fully-shard and stg-schedule a module's gather is its
parameter's (each Linear, norm and embedding of a template holds one weight), issued
where its wait stands, so the walk of each block is:

- at the wait of a gathered parameter p_k (its module's fetch), if p_k's gather was not
  prefetched it is issued right there (it already stands before its wait);
- right after the wait, the parameters whose waits come next in the block, not yet
  issued, are issued as one coalesced all-gather (an async `stg.group`; a single
  one stays a plain async all-gather) until the bucket's elements reach
  min(max-live-parameters - live, prefetch-bucket-size), where live counts the
  elements gathered in the block and not yet released.

Modelled as the fully-sharded form has it, stated: a parameter is gathered once per
graph (stg-fully-shard), which is DeepSpeed's reuse rule when a layer's parameters
(forward recompute and backward) lie within max_reuse_distance (a Llama-3-70B layer
holds 0.86e9 elements < 1e9); `param_persistence_threshold` (parameters under 1e5
elements, the norms, stay unpartitioned) is not modelled: their tiny gathers stay.
The fetch queue is the block's: while the layer loop stays structured, the first
parameter of a layer is not prefetched during the previous layer (the same bound
stg-prefetch has); after stg-unroll-layers the queue runs across layers, as DeepSpeed's.

Requires: the scheduled form after stg-fully-shard and stg-schedule (as stg-prefetch);
sizes bound (instantiated IR, or `bindings` from Python). Guarantees: every gather is
issued before its wait; no wait, release or compute op moves; a prefetch group holds
the gathers DeepSpeed's loop would pick. Decisions (passes/deepcompile/decisions.py):
the all-gathers prefetched and the coalesced groups.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from stagec.dialects.stg.schedule import SCHEDULED
from stagec.dialects.stg.structure import LoopOp, PhaseOp
from stagec.passes.analysis.liveness import AccountingError, Evaluator
from stagec.passes.deepcompile.decisions import record
from stagec.passes.deepcompile.gathers import GatherUnit, block_units, coalesce, place, stream_of
from stagec.passes.diagnostics import PassError

__all__ = ["DEEPSPEED_MAX_LIVE_PARAMETERS", "DEEPSPEED_PREFETCH_BUCKET_SIZE", "StgZero3", "Zero3Result", "zero3"]

DEEPSPEED_PREFETCH_BUCKET_SIZE = 50_000_000  # stage3_prefetch_bucket_size, elements
DEEPSPEED_MAX_LIVE_PARAMETERS = 1_000_000_000  # stage3_max_live_parameters, elements


@dataclass(frozen=True)
class StgZero3(ModulePass):
    """DeepSpeed ZeRO-3's prefetch: a fixed bucket of elements after each fetch (module doc)."""

    name = "stg-zero3"

    prefetch_bucket_size: int = DEEPSPEED_PREFETCH_BUCKET_SIZE
    """stage3_prefetch_bucket_size: elements prefetched after a fetch (0: no prefetch)."""

    max_live_parameters: int = DEEPSPEED_MAX_LIVE_PARAMETERS
    """stage3_max_live_parameters: gathered elements a prefetch may bring the live count to."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        zero3(op, self)


@dataclass
class Zero3Result:
    """What the pass decided."""

    prefetched: int = 0  # all-gathers issued at an earlier module's fetch
    coalesced_groups: int = 0  # stg.group ops of several prefetched gathers
    groups: list[list[str]] = field(default_factory=list)  # parameter names per prefetch, in issue order


def zero3(module: ModuleOp, options: StgZero3 = StgZero3(), *, bindings: Mapping[str, int] | None = None) -> Zero3Result:
    """Rewrite every block of `module`'s step function as DeepSpeed ZeRO-3 issues its
    gathers (module doc)."""
    from stagec.passes.analysis.accounting import find_function, module_bindings

    functions = [f for f in module.ops if isinstance(f, func.FuncOp)]
    if not functions or any(SCHEDULED not in f.attributes for f in functions):
        raise PassError("stg-zero3 moves asynchronous all-gathers: run stg-fully-shard and stg-schedule first "
                        "(a function is not stg.scheduled)")
    if options.prefetch_bucket_size < 0 or options.max_live_parameters < 0:
        raise PassError("stg-zero3: prefetch-bucket-size and max-live-parameters are element counts >= 0")
    ev = Evaluator(dict(module_bindings(module, bindings or {})))
    result = Zero3Result()
    try:
        _blocks(find_function(module).body.block, ev, options, result)
    except AccountingError as error:
        raise PassError(f"stg-zero3 counts elements ({error}): run stg-instantiate{{B=.. S=..}} first") from None
    record(module, "stg-zero3", "all-gathers prefetched at an earlier module's fetch", result.prefetched)
    record(module, "stg-zero3", "coalesced prefetch all-gathers", result.coalesced_groups)
    return result


def _blocks(block: Block, ev: Evaluator, options: StgZero3, result: Zero3Result) -> None:
    for op in block.ops:
        if isinstance(op, (PhaseOp, LoopOp)):
            for region in op.regions:
                for inner in region.blocks:
                    _blocks(inner, ev, options, result)
    _fetch_walk(block, ev, options, result)


def _fetch_walk(block: Block, ev: Evaluator, options: StgZero3, result: Zero3Result) -> None:
    ops, units = block_units(block)
    if not units:
        return
    by_gather = {id(u.gather): u for u in units}
    by_wait = {id(u.wait): u for u in units}
    by_release = {id(u.release): u for u in units if u.release is not None}
    queue = deque(units)  # DeepSpeed's fetch queue: the block's parameters in the order used
    issued: set[int] = set()
    live = 0
    order: list[Operation | list[GatherUnit]] = []
    for op in ops:
        unit = by_gather.get(id(op))
        if unit is not None:
            if id(unit.gather) not in issued:  # fetched where it is used
                issued.add(id(unit.gather))
                live += unit.elements(ev)
                order.append([unit])
            continue
        order.append(op)
        if id(op) in by_release:
            live -= by_release[id(op)].elements(ev)
            continue
        current = by_wait.get(id(op))
        if current is None:
            continue
        while queue and queue[0] is not current and id(queue[0].gather) in issued:
            queue.popleft()  # fetched already: off the queue
        if queue and queue[0] is current:
            queue.popleft()
        budget = min(options.max_live_parameters - live, options.prefetch_bucket_size)
        bucket: list[GatherUnit] = []
        elements = 0
        while queue and elements < budget:
            candidate = queue.popleft()
            if id(candidate.gather) in issued:
                continue
            bucket.append(candidate)
            elements += candidate.elements(ev)
        if bucket:
            issued.update(id(u.gather) for u in bucket)
            live += elements
            order.append(bucket)
            result.prefetched += len(bucket)
            result.groups.append([u.name for u in bucket])
    flat: list[Operation] = []
    for item in order:
        if isinstance(item, Operation):
            flat.append(item)
            continue
        for u in item:
            flat.extend(u.reads)
        if len(item) == 1:
            flat.append(item[0].gather)
            continue
        runs: list[list[GatherUnit]] = []  # one coalesced gather per stream and axes
        for u in item:
            if runs and stream_of(runs[-1][0].gather) == stream_of(u.gather) and \
                    runs[-1][0].gather.axis_names == u.gather.axis_names:
                runs[-1].append(u)
            else:
                runs.append([u])
        for run in runs:
            if len(run) == 1:
                flat.append(run[0].gather)
            else:
                flat.append(coalesce([u.gather for u in run]))
                result.coalesced_groups += 1
    place(block, flat)
