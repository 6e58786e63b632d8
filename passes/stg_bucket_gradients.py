"""stg-bucket-gradients: the optimizer step's gradient collectives go in buckets, each
one coalesced collective (a `ready` stg.group, docs/scheduled-ir.md) issued as soon as
the gradients it holds are final - as the frameworks' backward hooks issue them:

- **DDP** (`stg.all_reduce` of a "grad" state, which stg-shard puts in the optimizer
  phase: once per step, after accumulation): in the order the gradients become ready
  (their last write in the backward), buckets of at most `bucket_mb` MiB per
  communicator (PyTorch DDP's bucket_cap_mb, default 25); `bucket_mb=0` leaves one
  all-reduce per gradient.
- **ZeRO** (stg-shard zero=1, Megatron's distributed optimizer): the gradient
  reduce-scatters go in Megatron's buckets - in the same order, a bucket closes once it
  holds max(F, F/40 x group size) elements for F = `zero_bucket_elements` (40M:
  Megatron's max(40M, 1M x dp)) - and each updated parameter is all-gathered in the
  bucket its gradient was scattered in, once the last of the bucket's updates has run.

Buckets cross layers, so they read and write the gradients and parameters of explicit
layers (`layer K of N`). A reduction bucket stands at the top of the optimizer phase:
it reads the accumulated (partial) gradients, reduces them and writes the result back
into the gradient buffer (in place, as DDP and Megatron do), where each parameter's
update then reads it. A gather bucket stands at the end of the phase: each update
writes its parameter shard in place, the bucket gathers the shards and writes the
whole parameters.

    stg.phase optimizer {
      %g0 = stg.optimizer_state "grad" of "layers.w" layer 1 of 2 : !stg.tensor<[H] @dp, f32>
      %g1 = stg.optimizer_state "grad" of "layers.w" layer 0 of 2 : !stg.tensor<[H] @dp, f32>
      %r0, %r1 = stg.group ready {
        ... stg.all_reduce %g0 on @m [dp] ..., stg.all_reduce %g1 on @m [dp] ...
      }
      stg.assign %r0 to "grad" of "layers.w" layer 1 of 2 : !stg.tensor<[H], f32>
      ...
      stg.repeat L {
        %g = stg.optimizer_state "grad" of "layers.w" : !stg.tensor<[H], f32>   // reduced
        ... stg.adam ...
      }
    }

Requires: stg IR after stg-shard and stg-match-collectives (optionally stg-pipeline),
with the mesh sizes and the model config (stg.config) numeric; before stg-schedule.
Guarantees: every gradient collective over more than one rank in an optimizer phase
is in exactly one bucket, and the step computes what it computed before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from math import prod

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from stagec.dialects.stg.attributes import TensorType
from stagec.dialects.stg.comm import AllGatherOp, AllReduceOp, CollectiveOp, ReduceScatterOp
from stagec.dialects.stg.mesh import MeshOp
from stagec.dialects.stg.schedule import GroupOp
from stagec.dialects.stg.state import AssignOp, OptimizerStateOp, ParamOp, StateOp
from stagec.dialects.stg.structure import LoopOp, PhaseKind, PhaseOp, RepeatOp, YieldOp
from stagec.dialects.symbolic import Expr, SymbolicError
from stagec.passes.diagnostics import PassError
from stagec.passes.schedule.grouping import VIEWS

__all__ = ["DEFAULT_BUCKET_MB", "DEFAULT_ZERO_BUCKET_ELEMENTS", "StgBucketGradients", "bucket_gradients"]

DEFAULT_BUCKET_MB = 25  # PyTorch DDP's bucket_cap_mb
DEFAULT_ZERO_BUCKET_ELEMENTS = 40_000_000  # Megatron DDP's bucket_size floor


@dataclass(frozen=True)
class StgBucketGradients(ModulePass):
    """Put the optimizer's gradient collectives in DDP (bucket_mb) or Megatron ZeRO buckets, ready stg.groups."""

    name = "stg-bucket-gradients"

    bucket_mb: int | float = DEFAULT_BUCKET_MB
    """DDP's bucket_cap_mb: the MiB of gradients one data-parallel all-reduce carries (0: one per gradient)."""
    zero_bucket_elements: int = DEFAULT_ZERO_BUCKET_ELEMENTS
    """Megatron's distributed-optimizer bucket size in elements (ZeRO-1/2 reduce-scatters)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.bucket_mb < 0 or self.zero_bucket_elements < 1:
            raise PassError(f"stg-bucket-gradients: bucket_mb must be >= 0 and zero_bucket_elements >= 1, not "
                            f"{self.bucket_mb} and {self.zero_bucket_elements}")
        bucket_gradients(op, int(self.bucket_mb * 2**20), self.zero_bucket_elements)


@dataclass(eq=False)
class _Entry:
    """A gradient (or updated parameter) collective of the optimizer phase, per layer."""

    op: CollectiveOp
    layers: tuple[tuple[int, int], ...]  # (layer, stack size) per enclosing repeat
    order: int  # program order in the phase
    param: str
    ready: int  # where the gradient's last write stands in the backward; -1: never written
    bytes: int  # the collective's per-rank bytes (Chakra's comm_size)
    elements: int  # the whole gradient's


@dataclass
class _Sizes:
    env: dict[str, int]
    mesh: dict[str, int] = field(default_factory=dict)

    def int(self, expr: Expr, what: str, op: Operation) -> int:
        try:
            value = expr.evaluate_fraction(self.env)
        except SymbolicError as error:
            raise PassError(f"stg-bucket-gradients needs numeric sizes: {what} is {expr} ({error}); bind the "
                            "model config and the mesh sizes first", op) from None
        return int(value)

    def group(self, axes) -> int:
        return prod(self.mesh[a] for a in axes)


def bucket_gradients(module: ModuleOp, bucket_bytes: int, zero_bucket_elements: int) -> int:
    """Bucket every optimizer phase of `module`; returns the number of buckets made."""
    if bucket_bytes <= 0:
        return 0
    from stagec.passes.analysis.accounting import module_bindings

    env = module_bindings(module, None)
    mesh = next((m for m in module.ops if isinstance(m, MeshOp)), None)
    if mesh is None:
        return 0
    sizes = _Sizes(env)
    for axis, size in mesh.axis_sizes.items():
        sizes.mesh[axis] = sizes.int(size, f"mesh axis '{axis}'", mesh)
    functions = {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)}
    made = 0
    for fn in functions.values():
        for phase in [op for op in fn.body.block.ops if isinstance(op, PhaseOp)]:
            if phase.kind.data == PhaseKind.OPTIMIZER:
                made += _bucket_phase(phase, lambda fn=fn: _readiness(fn, functions, sizes), sizes, bucket_bytes,
                                      zero_bucket_elements)
    return made


# -- when each gradient is final ----------------------------------------------------------------


def _readiness(fn: func.FuncOp, functions: dict, sizes: _Sizes) -> dict[tuple, int]:
    """(param, layer indices) -> the position, in one micro-batch's expansion of the
    program outside the optimizer phase, of the work whose result is last assigned to
    the parameter's "grad". Every micro-batch writes the gradients in this order, so the
    last micro-batch's writes - the ones the buckets wait for - follow it too.

    A repeat's body is walked once, for its first iteration, where it calls nothing (a
    callee is walked at its first call only, so iterations with calls differ): the
    others repeat its gradient writes one layer index and one body length further on.
    A write reads the position of work in its own iteration (positions are looked up
    with the writer's layer indices), so a shifted position is exact."""
    position: dict[tuple, int] = {}
    last: dict[tuple, int] = {}
    journals: list[list] = []  # the writes of the repeat bodies being walked
    seen_callees: set[str] = set()
    counter = 0

    def write(key: tuple, value: int) -> None:
        last[key] = value
        for journal in journals:
            journal.append((key, value))

    def repeat(op: RepeatOp, layers: tuple) -> None:
        nonlocal counter
        count = sizes.int(op.count_expr, "a repeat's count", op)
        offset = sizes.int(op.offset_expr, "a repeat's offset", op)
        stack = sizes.int(op.stack_expr, "a repeat's stack", op)
        indices = [offset + (count - 1 - i if op.reverse is not None else i) for i in range(count)]
        if count < 2 or any(isinstance(o, func.CallOp) for o in op.body.block.walk()):
            for index in indices:
                walk(op.body.block, layers + ((index, stack),))
            return
        start, depth = counter, len(layers)
        journals.append([])
        walk(op.body.block, layers + ((indices[0], stack),))
        journal = journals.pop()
        length = counter - start
        for i, index in enumerate(indices[1:], 1):
            for key, value in journal:
                param, at = key
                write((param, at[:depth] + (index,) + at[depth + 1:]), value + i * length if value >= 0 else value)
        counter = start + count * length

    def walk(block: Block, layers: tuple) -> None:
        nonlocal counter
        for op in block.ops:
            if isinstance(op, PhaseOp) and op.kind.data == PhaseKind.OPTIMIZER:
                continue
            if isinstance(op, AssignOp) and op.state_name.data == "grad" and op.param is not None:
                write((op.param.data, tuple(i for i, _ in layers)), position.get((id(_work(op.value)), layers), -1))
                continue
            counter += 1
            position[(id(op), layers)] = counter
            if isinstance(op, RepeatOp):
                repeat(op, layers)
            elif isinstance(op, func.CallOp):
                name = op.callee.root_reference.data
                if name not in seen_callees and name in functions:
                    seen_callees.add(name)
                    walk(functions[name].body.block, layers)
            elif not isinstance(op, GroupOp):
                for region in op.regions:  # a micro-batch loop's body once; phases; vjp
                    for b in region.blocks:
                        walk(b, layers)

    walk(fn.body.block, ())
    return last


def _work(value: SSAValue) -> Operation | None:
    """The op whose work produced `value`, looking through views."""
    owner = value.owner
    while isinstance(owner, VIEWS) and owner.operands:
        owner = owner.operands[0].owner
    if isinstance(owner, Operation) and isinstance(owner.parent_op(), GroupOp):
        owner = owner.parent_op()
    return owner if isinstance(owner, Operation) else None


# -- the phase ------------------------------------------------------------------------------------


def _bucket_phase(phase: PhaseOp, readiness: Callable[[], dict], sizes: _Sizes, bucket_bytes: int,
                  zero_floor: int) -> int:
    reduces: list[_Entry] = []
    scatters: list[_Entry] = []
    gathers: list[_Entry] = []
    order = 0

    # what each op of the phase is to the buckets, decided once: a layer loop's body is
    # scanned once per layer, and evaluating sizes symbolically is slow
    kinds: dict[int, tuple] = {}

    def kind_of(op: Operation) -> tuple:
        """(list the op's entries go to or None, its parameter, its bytes and
        elements, whether it counts in the program order), or the op's own structure:
        ("repeat", count, offset, stack), ("loop",), ("regions",)."""
        if isinstance(op, AllReduceOp | ReduceScatterOp) and (param := _grad_read(op.input)) is not None:
            if sizes.group(op.axis_names) > 1:
                found = reduces if isinstance(op, AllReduceOp) else scatters
                return (found, param, *measure(op, op.input.type), True)
            return (None, None, 0, 0, True)
        if isinstance(op, AllGatherOp) and sizes.group(op.axis_names) > 1 \
                and (param := _assigned_param(op)) is not None:
            return (gathers, param, *measure(op, op.result.type), True)
        if isinstance(op, RepeatOp):
            return ("repeat", sizes.int(op.count_expr, "a repeat's count", op),
                    sizes.int(op.offset_expr, "a repeat's offset", op), sizes.int(op.stack_expr, "a repeat's stack", op))
        if isinstance(op, LoopOp):
            return ("loop",)
        return ("regions",)

    def measure(op: CollectiveOp, full: TensorType) -> tuple[int, int]:
        return (sizes.int(op.bytes_moved(), "a gradient's bytes", op),
                sizes.int(full.global_numel(), "a gradient's size", op))

    def scan(block: Block, layers: tuple) -> None:
        nonlocal order
        for op in block.ops:
            kind = kinds.get(id(op))
            if kind is None:
                kind = kinds[id(op)] = kind_of(op)
            what = kind[0]
            if what == "repeat":
                _, count, offset, stack = kind
                for i in range(count):
                    scan(op.body.block, layers + ((offset + i, stack),))
            elif what == "loop":
                continue
            elif what == "regions":
                for region in op.regions:
                    for b in region.blocks:
                        scan(b, layers)
            else:
                found, param, size, elements, _ = kind
                if found is not None:
                    found.append(_Entry(op, layers, order, param, -1, size, elements))
                order += 1

    scan(phase.body.block, ())
    if not (reduces or scatters or gathers):
        return 0
    ready = readiness()
    for e in reduces + scatters:
        e.ready = ready.get((e.param, tuple(i for i, _ in e.layers)), -1)
    by_readiness = lambda e: (e.ready, e.order)  # noqa: E731

    def megatron_full(used: int, e: _Entry) -> bool:
        return used >= max(zero_floor, zero_floor * sizes.group(e.op.axis_names) // 40)

    reduce_buckets = _pack(sorted(reduces, key=by_readiness), lambda used, e: used + e.bytes > bucket_bytes)
    scatters.sort(key=by_readiness)
    scatter_buckets = _pack(scatters, megatron_full, closes_after=True)
    # each parameter is gathered in the bucket its gradient was scattered in (one buffer
    # in Megatron), any others by the same rule
    slot = {(e.param, e.layers): i for i, e in enumerate(scatters)}
    gathers.sort(key=lambda e: (slot.get((e.param, e.layers), len(slot)), e.order))
    gather_buckets = _pack(gathers, megatron_full, closes_after=True)

    body = phase.body.block
    top = body.first_op
    for bucket in reduce_buckets + scatter_buckets:
        _reduce_in_place(body, top, bucket)
    for bucket in gather_buckets:
        _gather_in_place(body, bucket)
    for bucket in reduce_buckets + scatter_buckets:
        _read_reduced(bucket)
    for bucket in gather_buckets:
        _write_shard(bucket)
    return len(reduce_buckets) + len(scatter_buckets) + len(gather_buckets)


def _pack(entries: list[_Entry], full: Callable[[int, _Entry], bool], closes_after: bool = False) -> list[list[_Entry]]:
    """Buckets of entries in order, one open bucket per communicator. DDP's rule
    (closes_after False): a bucket takes an entry unless `full(bytes so far, entry)`
    says it would overflow. Megatron's (True): a bucket takes every entry and closes
    once `full(elements so far, entry)`."""
    buckets: list[list[_Entry]] = []
    open_buckets: dict[tuple, list] = {}  # axes -> [used, entries]
    for e in entries:
        axes = e.op.axis_names
        current = open_buckets.get(axes)
        if current is None or (not closes_after and current[1] and full(current[0], e)):
            current = open_buckets[axes] = [0, []]
            buckets.append(current[1])
        current[0] += e.elements if closes_after else e.bytes
        current[1].append(e)
        if closes_after and full(current[0], e):
            del open_buckets[axes]
    return buckets


def _grad_read(v: SSAValue) -> str | None:
    owner = v.owner
    if isinstance(owner, OptimizerStateOp) and owner.tensor_name.data == "grad":
        return owner.param.data
    return None


def _assigned_param(op: AllGatherOp) -> str | None:
    """The parameter an all-gather's result is assigned to, its only use (ZeRO's
    gather of an updated parameter)."""
    uses = list(op.result.uses)
    if len(uses) == 1 and isinstance(user := uses[0].operation, AssignOp) and user.param is None:
        return user.state_name.data
    return None


def _layer(e: _Entry) -> tuple[int, int] | None:
    if len(e.layers) > 1:
        raise PassError("stg-bucket-gradients: a gradient collective inside nested layer loops", e.op)
    return e.layers[0] if e.layers else None


def _insert(block: Block, before: Operation | None, op: Operation) -> None:
    block.insert_op_before(op, before) if before is not None else block.add_op(op)


def _coalesced(members: list[Operation]) -> GroupOp:
    body = Block()
    for m in members:
        body.add_op(m)
    body.add_op(YieldOp(*(m.results[0] for m in members)))
    return GroupOp(Region(body), ready=True)


def _reduce_in_place(block: Block, before: Operation | None, bucket: list[_Entry]) -> None:
    """Read the bucket's gradients, reduce them as one call, write them back."""
    members = []
    for e in bucket:
        read = OptimizerStateOp("grad", e.param, e.op.input.type, _layer(e))
        _insert(block, before, read)
        members.append(type(e.op)(read.result, e.op.mesh.root_reference.data, e.op.axis_names, e.op.result.type))
    group = _coalesced(members)
    _insert(block, before, group)
    for e, reduced in zip(bucket, group.outputs):
        _insert(block, before, AssignOp(reduced, "grad", e.param, _layer(e)))


def _read_reduced(bucket: list[_Entry]) -> None:
    """Where each collective stood, its update reads the reduced gradient instead."""
    for e in bucket:
        op = e.op
        if op.parent is None:
            continue  # a layer loop's op: replaced for its first layer already
        grad = op.input.owner
        read = OptimizerStateOp("grad", e.param, op.result.type)
        op.parent_block().insert_op_before(read, op)
        read.result.name_hint = op.result.name_hint
        op.result.replace_all_uses_with(read.result)
        op.detach()
        op.erase()
        if isinstance(grad, StateOp) and not grad.result.uses:
            grad.detach()
            grad.erase()


def _gather_in_place(block: Block, bucket: list[_Entry]) -> None:
    """At the end of the phase: read the updated shards, gather them as one call,
    write the whole parameters."""
    end = block.last_op if isinstance(block.last_op, YieldOp) else None
    members = []
    for e in bucket:
        read = ParamOp(e.param, e.op.input.type, _layer(e))
        _insert(block, end, read)
        members.append(AllGatherOp(read.result, e.op.mesh.root_reference.data, e.op.axis_names, e.op.result.type))
    group = _coalesced(members)
    _insert(block, end, group)
    for e, gathered in zip(bucket, group.outputs):
        _insert(block, end, AssignOp(gathered, e.param, None, _layer(e)))


def _write_shard(bucket: list[_Entry]) -> None:
    """Where each all-gather stood, its update writes the parameter's shard in place."""
    for e in bucket:
        op = e.op
        if op.parent is None:
            continue
        (use,) = op.result.uses
        assign = use.operation
        assign.operands[0] = op.input
        op.detach()
        op.erase()
