"""stg-reduce-buckets{bucket-elements, double-buffer}: gradient reduce-scatters (and
all-reduces) go through DeepSpeed's reduce buckets, as DeepCompile's runtime and
DeepSpeed ZeRO-3 issue them, instead of one collective per gradient where it is made.

DeepCompile's `reduce_grad` (csrc/includes/deepcompile.h, `CustomOpExecutor::reduceGrad`)
copies each gradient into a bucket of `reduce_bucket_size` elements (DeepSpeed's ZeRO
config, default 5e8; one bucket per dtype) and reduce-scatters nothing yet. When the
next gradient would not fit (`ReduceBucket::shouldFlush`: the bucket holds something and
offset + numel > size) the bucket is flushed - its gradients reduce-scattered as one
NCCL group on the reduce-scatter stream - before that gradient goes in; a gradient
larger than the bucket goes in alone. The end of the backward flushes what is left and
synchronizes. With double buffering (the compile config's `double_buffer`, default
true) the flush swaps to the other bucket, and the compute stream waits for *that*
bucket's previous flush before copying into it: bucket k is waited for right after
bucket k+1 is issued. Without it the compute stream waits for bucket k right after
issuing it.

In the scheduled form, per block (a backward phase, a layer body), gradient
reductions (passes/schedule/gradient_reductions.py) are walked in issue order; those
of one kind, stream, mesh axes and dtype share a bucket. A bucket becomes one
`stg.group async` of its members (of one member too: a reduction in a group is
bucketed already, so running the pass again changes nothing), issued where the bucket
is flushed: right before the reduction that overflows it, or at the
block's end. Each member's wait and what computes on its result (the cast, the
accumulation into "grad") move to right after the next bucket's issue (double
buffer), or right after its own (not), or to the block's end - never past an op that
touches one of their states: such an op flushes the open bucket first and is waited
for before it.

    %t1 = stg.reduce_scatter %g1 ... async stream "fsdp"
    %r1 = stg.wait %t1                                  ...
    stg.assign ... to "grad" of "w1"                    %t = stg.group async stream "fsdp" {
    ... compute ...                             ==>        stg.reduce_scatter %g1 ...
    %t2 = stg.reduce_scatter %g2 ... async                 stg.reduce_scatter %g2 ... }
    %r2 = stg.wait %t2                                  %r1 = stg.wait %t#0
    stg.assign ... to "grad" of "w2"                    stg.assign ... to "grad" of "w1"
                                                        %r2 = stg.wait %t#1 ...

The members' unsharded gradients stay alive until their wait (the memory analysis
holds a reduction's input until then), which is what the bucket's copies cost.

Requires: the scheduled form (stg-schedule), sizes of gradients numeric through
stg.config or `bindings` (the pass counts elements). Guarantees: every gradient
reduction of a block that is not in a group already is in exactly one bucket, issued after every member's gradient
is made; its waits stand after the bucket's issue and before any op touching their
states; nothing else moves. Decisions (passes/deepcompile/decisions.py): buckets
flushed, gradients in them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from stagec.dialects.stg.schedule import SCHEDULED, GroupOp
from stagec.dialects.stg.attributes import element_bytes
from stagec.passes.analysis.liveness import AccountingError, Evaluator
from stagec.passes.deepcompile.decisions import record
from stagec.passes.deepcompile.gathers import coalesce, place, stream_of
from stagec.passes.diagnostics import PassError
from stagec.passes.schedule.gradient_reductions import (
    GradientReduction,
    gradient_reductions,
    is_terminator,
    nested_states,
)
from stagec.passes.schedule.grouping import blocks_outside_groups
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

__all__ = ["DEEPSPEED_REDUCE_BUCKET_SIZE", "ReduceBucketsResult", "StgReduceBuckets", "reduce_buckets"]

DEEPSPEED_REDUCE_BUCKET_SIZE = 500_000_000  # zero_optimization.reduce_bucket_size, elements


@dataclass(frozen=True)
class StgReduceBuckets(ModulePass):
    """Reduce gradients a bucket at a time, as DeepCompile's and DeepSpeed ZeRO-3's runtimes do."""

    name = "stg-reduce-buckets"

    bucket_elements: int = DEEPSPEED_REDUCE_BUCKET_SIZE
    """Elements a bucket holds before it is flushed (DeepSpeed's `reduce_bucket_size`,
    5e8); a gradient larger than that is a bucket of its own."""

    double_buffer: bool = True
    """Two buckets, so the compute stream waits for a flush only when the next one has
    been issued (DeepCompile's `double_buffer`, on by default)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        reduce_buckets(op, self)


@dataclass
class ReduceBucketsResult:
    buckets: int = 0
    gradients: int = 0
    sizes: list[int] = field(default_factory=list)  # elements per bucket, in issue order


def reduce_buckets(module: ModuleOp, options: StgReduceBuckets = StgReduceBuckets(), *,
                   bindings: Mapping[str, int] | None = None) -> ReduceBucketsResult:
    """Put `module`'s gradient reductions in buckets (module doc)."""
    from stagec.passes.analysis.accounting import module_bindings

    if options.bucket_elements < 1:
        raise PassError(f"stg-reduce-buckets: bucket-elements={options.bucket_elements}: a bucket holds "
                        "at least 1 element")
    functions = [f for f in module.ops if isinstance(f, func.FuncOp)]
    if not functions or any(SCHEDULED not in f.attributes for f in functions):
        raise PassError("stg-reduce-buckets moves asynchronous reductions: run stg-schedule first "
                        "(a function is not stg.scheduled)")
    ev = Evaluator(dict(module_bindings(module, bindings or {})))
    result = ReduceBucketsResult()
    try:
        for block in blocks_outside_groups(module):
            _bucket_block(block, ev, options, result)
    except AccountingError as error:
        raise PassError(f"stg-reduce-buckets counts a gradient's elements ({error}): "
                        "run stg-instantiate{B=.. S=..} first") from None
    record(module, "stg-reduce-buckets", "reduce buckets flushed", result.buckets)
    record(module, "stg-reduce-buckets", "gradients reduced in buckets", result.gradients)
    return result


@dataclass
class _Bucket:
    members: list[GradientReduction] = field(default_factory=list)
    elements: int = 0

    @property
    def states(self) -> set[tuple]:
        return {s for m in self.members for s in m.states}


def _bucket_block(block: Block, ev: Evaluator, options: StgReduceBuckets, result: ReduceBucketsResult) -> None:
    position = {op: i for i, op in enumerate(block.ops)}
    # a chain that starts before its issue (a gradient read early) stays where it is
    reductions = [r for r in gradient_reductions(block)
                  if not isinstance(r.issue, GroupOp) and position[r.chain[0]] > position[r.issue]]
    if not reductions:
        return
    by_issue = {r.issue: r for r in reductions}
    chained = {op for r in reductions for op in r.chain}
    terminator = block.last_op if is_terminator(block.last_op) else None
    order: list[Operation] = []
    open_: dict[tuple, _Bucket] = {}
    waiting: dict[tuple, _Bucket] = {}  # flushed, its waits due after the key's next flush

    def wait(bucket: _Bucket) -> None:
        order.extend(op for m in bucket.members for op in m.chain)

    def flush(key: tuple) -> None:
        bucket = open_.pop(key)
        # a bucket of one is a group too: a second run sees it issued already
        order.append(coalesce([m.issue for m in bucket.members]))
        result.buckets += 1
        result.gradients += len(bucket.members)
        result.sizes.append(bucket.elements)
        if options.double_buffer:
            if key in waiting:
                wait(waiting.pop(key))
            waiting[key] = bucket
        else:
            wait(bucket)

    for op in list(block.ops):
        if op is terminator or op in chained:
            continue
        reduction = by_issue.get(op)
        if reduction is None:
            touched = nested_states(op)
            for key in [k for k, b in open_.items() if b.states & touched]:
                flush(key)
            for key in [k for k, b in waiting.items() if b.states & touched]:
                wait(waiting.pop(key))
            order.append(op)
            continue
        key = _key(reduction.issue)
        elements = _elements(reduction.issue, ev)
        bucket = open_.get(key)
        if bucket is not None and bucket.elements + elements > options.bucket_elements:
            flush(key)
        bucket = open_.setdefault(key, _Bucket())
        bucket.members.append(reduction)
        bucket.elements += elements
    for key in list(open_):
        flush(key)
    for bucket in waiting.values():
        wait(bucket)
    place(block, order)


def _key(op: Operation) -> tuple:
    """Reductions that may share a bucket (one NCCL group: one kind, stream, group of
    ranks and dtype)."""
    return (op.name, stream_of(op), op.axis_names, str(op.input.type.element_type))


def _elements(op: Operation, ev: Evaluator) -> int:
    """Elements of the gradient `op` reduces (DeepSpeed sizes its buckets in elements)."""
    ty = op.input.type
    return ev.device_bytes(ty) // element_bytes(ty.element_type)
