"""Tensor lifetimes over the schedule of a training step, per rank (memory.py states
the memory model; this module implements it).

The schedule is a function's leaf ops in execution order with loops unrolled, but it
is never materialised op by op: each loop body is a Scope laid out once (its ops'
offsets within one iteration), and a loop occupies `count x length` positions of its
parent. Every transient buffer is placed in its *home*, the innermost scope one of
whose iterations holds all its lifetimes (the shallowest scope its aliases reach:
a value yielded out of a layer body lives in the enclosing scope, where a backward
loop may scan it). Its lifetime is walked once per iteration of the loops between its
definition and its home (a saved activation: once per layer), following aliases
through views, yields, carries and scans, and added to the home's difference array.
A scope's profile is its own buffers plus each child's profile tiled `count` times,
so the cost is one walk per layer body, not per executed op.

Each buffer also names the stream whose caching-allocator pool it comes from
(`stream_of`, for the replay in reserved.py): the compute stream, except a gathered
parameter - the output of an all-gather of a `stg.param` (through views), alone or
as a coalesced FSDP unit - which PyTorch FSDP allocates on its unshard stream
(torch/distributed/fsdp/_runtime_utils.py `_unshard`: `handle.unshard()` runs under
`state._device_handle.stream(unshard_stream)`, and the padded unsharded flat
parameter is allocated there), and the read of a parameter kept only as its master
(`gathered_from_master`), FSDP's low-precision shard, which it allocates on its
pre-unshard stream. Megatron's collectives allocate their outputs on the calling
(compute) stream, so every other collective's output stays there.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from xdsl.dialects import func
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue

from stagec.dialects.kinds import kind_of
from stagec.dialects.stg.names import GRAD
from stagec.dialects.stg.attributes import TensorType, TokenType, element_bytes
from stagec.dialects.stg.comm import AllGatherOp, CollectiveOp, CommOp
from stagec.dialects.stg.compute import ElementwiseKind, ElementwiseOp
from stagec.dialects.stg.memory import OffloadOp, ReleaseOp, ReloadOp, WaitOp
from stagec.dialects.stg.schedule import GroupOp
from stagec.dialects.stg.shape_ops import ReshapeOp
from stagec.dialects.stg.inference import KvCacheOp
from stagec.dialects.stg.state import AssignOp, OptimizerStateOp, ParamOp
from stagec.dialects.stg.structure import LoopOp, PhaseOp, YieldOp
from stagec.dialects.symbolic import Expr, SymbolicError, UnboundSymbolError

KINDS = ("weights", "gradients", "optimizer_states", "activations", "communication")
# The persistent kind of an inference step's key/value cache (docs/inference.md): a
# column of the memory report only for programs that hold one (memory.analyze_memory).
KV_CACHE = "kv_cache"
_KIND = {k: i for i, k in enumerate(KINDS)}
_ACT, _COMM = _KIND["activations"], _KIND["communication"]
_NEVER = 1 << 62
# the allocating streams of the replay (allocator.CachingAllocator keeps a pool each)
COMPUTE_STREAM, UNSHARD_STREAM, PRE_UNSHARD_STREAM = 0, 1, 2


class AccountingError(ValueError):
    """The program cannot be accounted with these bindings (an unbound symbol, a size
    that does not divide, an unsupported structure); the message says which."""


class Evaluator:
    """Symbolic sizes and counts to exact integers under fixed bindings, memoised."""

    def __init__(self, env: Mapping[str, int]):
        self.env = dict(env)
        self._ints: dict[Expr, int] = {}
        self._bytes: dict[Attribute, int] = {}
        # by identity first: a type's hash walks its whole structure, and most lookups
        # are of a type object seen before (held here, so its id stays its own)
        self._bytes_by_id: dict[int, tuple[Attribute, int]] = {}

    def int(self, expr: Expr, what: str = "a size") -> int:
        value = self._ints.get(expr)
        if value is None:
            try:
                value = expr.evaluate(self.env)
            except UnboundSymbolError as error:
                raise AccountingError(f"{what}: {error}; bind it (the bindings take B, S and mesh axis sizes)") from None
            except SymbolicError as error:
                raise AccountingError(f"{what}: {error}") from None
            self._ints[expr] = value
        return value

    def device_bytes(self, ty: Attribute) -> int:
        """Local bytes a value of type `ty` holds in device memory (a token holds its
        payload; host tensors and bare tokens hold none)."""
        seen = self._bytes_by_id.get(id(ty))
        if seen is not None and seen[0] is ty:
            return seen[1]
        value = self._bytes.get(ty)
        if value is None:
            payload = ty.value_type if isinstance(ty, TokenType) else ty
            value = 0
            if isinstance(payload, TensorType):
                # each local extent must be whole, not just their product
                value = element_bytes(payload.element_type)
                for size in payload.local_shape():
                    value *= self.int(size, f"a local dim of {payload.layout_str()}")
            self._bytes[ty] = value
        self._bytes_by_id[id(ty)] = (ty, value)
        return value


def state_kind(state: str, param: str | None) -> str:
    if param is None:
        return "weights"
    return "gradients" if state == GRAD else "optimizer_states"



# -- the schedule ----------------------------------------------------------------------


@dataclass(eq=False)
class Scope:
    """A loop body (or the function body): `length` positions per iteration."""

    loop: LoopOp | None
    parent: Scope | None
    block: Block
    count: int = 1
    depth: int = 0
    length: int = 0
    leaves: list[tuple[int, int]] = field(default_factory=list)  # (offset, leaf id)
    children: list[tuple[int, Scope]] = field(default_factory=list)  # (offset, body)


class _Use:
    """How a use bears on a buffer's lifetime walk (Liveness._use_facts); compared by
    identity."""

    INSIDE = "inside a leaf's body"
    RELEASE = "release"
    OFFLOAD = "offload"
    YIELD = "yield"
    RETURN = "return"
    LOOP = "loop operand"
    ALIAS = "view"
    READ = "read"


class Frame(NamedTuple):
    """One enclosing loop iteration of a lifetime walk: the body, the iteration, the
    position where the parent's iteration starts, and, when the walk stands for the
    iterations `first`..`iteration` at once (a value captured from outside the loop,
    used in each; `iteration` is then the last), that first one."""

    scope: Scope
    iteration: int
    parent_base: int
    first: int | None = None


class Schedule:
    """The leaf ops of a function in execution order, each loop body laid out once."""

    def __init__(self, function: func.FuncOp, ev: Evaluator):
        self.ev = ev
        self.leaves: list[Operation] = []
        self.leaf_phase: list[str] = []
        self.offset: dict[Operation, int] = {}
        self.scope_of: dict[Operation, Scope] = {}
        self.enclosing_leaf: dict[Operation, Operation] = {}
        self.body_scope: dict[Operation, Scope] = {}
        self.root = Scope(None, None, function.body.block)
        self._layout(function.body.block, self.root, "")

    def _layout(self, block: Block, scope: Scope, phase: str) -> None:
        for op in block.ops:
            self.scope_of[op] = scope
            if isinstance(op, PhaseOp):
                self.offset[op] = scope.length
                self._layout(op.body.block, scope, str(op.kind.data))
            elif isinstance(op, LoopOp):
                count = self.ev.int(op.count_expr, f"the count of {op.name}")
                child = Scope(op, scope, op.body.block, count, scope.depth + 1)
                self.body_scope[op] = child
                self._layout(op.body.block, child, phase)
                self.offset[op] = scope.length
                scope.children.append((scope.length, child))
                scope.length += count * child.length
            elif isinstance(op, (YieldOp, func.ReturnOp)):
                self.offset[op] = scope.length
            else:
                self.offset[op] = scope.length
                scope.leaves.append((scope.length, len(self.leaves)))
                scope.length += 1
                self.leaves.append(op)
                self.leaf_phase.append(phase)
                for region in op.regions:
                    for nested in region.walk():
                        self.enclosing_leaf[nested] = op

    @property
    def length(self) -> int:
        return self.root.length

    def scope_of_value(self, value: SSAValue) -> Scope:
        if isinstance(value, BlockArgument):
            owner = value.block.parent_op()
            return self.body_scope.get(owner, self.root) if isinstance(owner, LoopOp) else self.root
        return self.scope_of[value.owner]

    def tile(self, scope: Scope, own: np.ndarray, children: Mapping[Scope, np.ndarray]) -> np.ndarray:
        """`own` (length x ...) plus each child's array repeated `count` times at its offset."""
        for offset, child in scope.children:
            if child.length:
                reps = (child.count,) + (1,) * (own.ndim - 1)
                own[offset : offset + child.count * child.length] += np.tile(children[child], reps)
        return own

    def leaf_codes(self) -> np.ndarray:
        """The leaf id executed at each position."""
        done: dict[Scope, np.ndarray] = {}

        def build(scope: Scope) -> np.ndarray:
            for _, child in scope.children:
                done[child] = build(child)
            codes = np.zeros(scope.length, dtype=np.int64)
            for offset, leaf in scope.leaves:
                codes[offset] = leaf
            return self.tile(scope, codes, done)

        return build(self.root)

    def locate(self, position: int) -> list[tuple[str, int, int]]:
        """The loop iterations enclosing `position`: (loop op name, iteration, count),
        outermost first."""
        path, scope, rel = [], self.root, position
        while True:
            for offset, child in scope.children:
                if offset <= rel < offset + child.count * child.length:
                    i, rel = divmod(rel - offset, child.length)
                    name = child.loop.name + (" reverse" if child.loop.reverse is not None else "")
                    path.append((name, i, child.count))
                    scope = child
                    break
            else:
                return path


# -- lifetimes -------------------------------------------------------------------------


def _reads_param(value: SSAValue) -> bool:
    """Whether `value` is a parameter's stored shard (a `stg.param`, through views)."""
    op = value.owner
    while isinstance(op, ReshapeOp):
        op = op.operands[0].owner
    return isinstance(op, ParamOp)


_STATE_READ = kind_of(OptimizerStateOp, ParamOp)  # dialects/kinds.py


def gathered_from_master(function: func.FuncOp | Block) -> frozenset[str]:
    """The parameters a run keeps only as their full-precision master: those with a
    `master` state whose every read (through views) is an all-gather's input - the
    FSDP-sharded parameters of a mixed-precision program. PyTorch FSDP's mixed
    precision (MixedPrecision(param_dtype=bf16), as NeMo's FSDP strategy sets it, with
    megatron_amp_O2 off so the model's parameters are fp32) keeps one sharded flat
    parameter in full precision - the optimizer updates it in place, so it *is* the
    master - and before each all-gather casts it into a low-precision shard
    (`FlatParamHandle.pre_unshard`, `_use_low_precision_shard`: `_mp_shard`, on the
    pre-unshard stream), freed once the gather is done (`post_unshard`,
    `_free_low_precision_sharded_param`). So the program's bf16 parameter state is
    no storage of its own: each read is a transient shard, and the optimizer's
    write of the bf16 copy is a transient."""
    masters, gathered, other = set(), set(), set()
    for op in function.walk():  # a function, or its body block
        kind = _STATE_READ(op)
        if kind == 0 and op.tensor_name.data == "master":
            masters.add(op.param.data)
        elif kind == 1 and op.result.uses:  # an unused read says nothing
            name = op.tensor_name.data
            (gathered if _only_gathered(op.result) else other).add(name)
    return frozenset((gathered - other) & masters)


def _only_gathered(value: SSAValue) -> bool:
    for use in value.uses:
        op = use.operation
        if isinstance(op, ReshapeOp):
            if not _only_gathered(op.results[0]):
                return False
        elif not isinstance(op, AllGatherOp):
            return False
    return True


def _through_phases(value: SSAValue) -> list[Operation]:
    """The users of `value` and, where a phase yields it, of the phase's result (an
    offloaded state's host copy, reloaded in a later phase)."""
    users, work = [], [value]
    while work:
        for use in work.pop().uses:
            user = use.operation
            if isinstance(user, YieldOp) and isinstance(user.parent_op(), PhaseOp):
                work.append(user.parent_op().results[use.index])
            else:
                users.append(user)
    return users


def _is_alias_op(op: Operation) -> bool:
    """Ops whose result is a view of their operand's buffer, or needs none of its own
    (a gradient accumulation's cast, `is_accumulating_cast`)."""
    return (
        isinstance(op, ReshapeOp)
        or (isinstance(op, WaitOp) and op.result is not None)
        or is_accumulating_cast(op)
    )


def is_accumulating_cast(op: Operation) -> bool:
    """A cast whose one use is an `add` assigned to a state: accumulating a bf16
    gradient into its fp32 `grad` state. The runtime does that in one mixed-dtype
    kernel, with no fp32 copy of the gradient: Megatron's DDP gradient hook runs
    `param.main_grad.add_(param.grad.data)` (megatron/core/distributed), and
    PyTorch's TensorIterator converts the bf16 operand as it reads it. So the cast
    holds no buffer; the bf16 gradient lives until the add."""
    if not (isinstance(op, ElementwiseOp) and op.kind.data == ElementwiseKind.CAST):
        return False
    uses = list(op.result.uses)
    if len(uses) != 1:
        return False
    add = uses[0].operation
    if not (isinstance(add, ElementwiseOp) and add.kind.data == ElementwiseKind.ADD):
        return False
    return any(isinstance(u.operation, AssignOp) for u in add.result.uses)


class Liveness:
    """Buffers, their kinds and their lifetimes over a Schedule."""

    def __init__(self, schedule: Schedule, from_master: frozenset[str] | None = None):
        self.s = schedule
        self.persistent: set[SSAValue] = set()
        # parameters stored only as their master (FSDP's mixed precision): their reads
        # are transient shards, their bf16 writes no state (`from_master`: computed by
        # the caller already)
        self.from_master = gathered_from_master(schedule.root.block) if from_master is None else from_master
        for op in schedule.root.block.walk():
            if isinstance(op, AssignOp) and not (op.param is None and op.state_name.data in self.from_master):
                self.persistent |= self.owners_of(op.value)
        self.diffs: dict[Scope, np.ndarray] = {}
        # each buffer instance as (first, last, bytes, stream) relative to an
        # iteration of its home scope: the allocation order a caching-allocator
        # replay needs
        self.spans: dict[Scope, list[tuple[int, int, int, int]]] = {}
        # an offloaded persistent state's time off the device, the same way
        self.state_gaps: dict[Scope, list[tuple[int, int, int]]] = {}
        self._uses: dict[int, tuple] = {}  # id(op) -> _use_facts(op)
        self._carried: dict[int, int] = {}  # id(loop) -> its carried values

    # which buffers a value may be ----------------------------------------------------
    def owners_of(self, value: SSAValue, seen: set | None = None) -> set[SSAValue]:
        """The buffer-owning values `value` may alias (resolving views, yields and
        block arguments backwards)."""
        seen = set() if seen is None else seen
        if value in seen:
            return set()
        seen.add(value)
        if isinstance(value, BlockArgument):
            loop = value.block.parent_op()
            if not isinstance(loop, LoopOp):
                return {value}
            n, i = len(loop.carried), value.index
            if i < n:
                out = self.owners_of(loop.carried[i], seen)
                yielded = loop.body.block.last_op
                if isinstance(yielded, YieldOp):
                    out |= self.owners_of(yielded.values[i], seen)
                return out
            return self.owners_of(loop.scanned[i - n], seen)
        op = value.owner
        if isinstance(op, (PhaseOp, LoopOp)):
            yielded = op.body.block.last_op
            return self.owners_of(yielded.values[value.index], seen) if isinstance(yielded, YieldOp) else set()
        if _is_alias_op(op):
            return self.owners_of(op.operands[0], seen)
        return {value}

    def is_state_read(self, value: SSAValue) -> bool:
        op = value.owner
        if isinstance(op, ParamOp):
            return op.tensor_name.data not in self.from_master
        return isinstance(op, OptimizerStateOp)

    def is_master_shard(self, value: SSAValue) -> bool:
        """A read of a parameter kept only as its master: FSDP's transient
        low-precision shard (gathered_from_master)."""
        op = value.owner
        return isinstance(op, ParamOp) and op.tensor_name.data in self.from_master

    def offloaded_state(self, offload: OffloadOp) -> bool:
        owners = self.owners_of(offload.operands[0])
        return bool(owners) and all(self.is_state_read(v) or v in self.persistent for v in owners)

    def kind_of(self, value: SSAValue) -> int:
        op = value.owner
        if self.is_master_shard(value):
            return _KIND["weights"]
        # a coalesced collective's results are what its members' results were
        if isinstance(op, CommOp) or (isinstance(op, GroupOp) and op.collective_kind() is not None):
            return _COMM
        if isinstance(op, ReloadOp):
            source = self._offload_of(op.operands[0])
            if source is not None:
                kinds = {self.kind_of(v) for v in self.owners_of(source.operands[0]) if not self.is_state_read(v)}
                if len(kinds) == 1:
                    return kinds.pop()
        return _ACT

    def stream_of(self, value: SSAValue) -> int:
        """The stream a buffer is allocated on (module doc): the pre-unshard stream
        for a master-only parameter's shard, the unshard stream for a gathered
        parameter, else the compute stream."""
        op = value.owner
        if self.is_master_shard(value):
            return PRE_UNSHARD_STREAM
        if isinstance(op, GroupOp) and op.collective_kind() == "all_gather":
            members = [m for m in op.body.block.ops if isinstance(m, AllGatherOp)]
            if members and all(_reads_param(m.operands[0]) for m in members):
                return UNSHARD_STREAM
        elif isinstance(op, AllGatherOp) and _reads_param(op.operands[0]):
            return UNSHARD_STREAM
        return COMPUTE_STREAM

    def _offload_of(self, host: SSAValue) -> OffloadOp | None:
        op = host.owner
        while isinstance(op, PhaseOp):  # offloaded in one phase, reloaded in a later one
            yielded = op.body.block.last_op
            op = yielded.operands[host.index].owner if isinstance(yielded, YieldOp) else None
            host = yielded.operands[host.index] if op is not None else host
        if isinstance(op, WaitOp):
            op = op.token.owner
        return op if isinstance(op, OffloadOp) else None

    def owners(self) -> Iterable[SSAValue]:
        """Every transient buffer: function arguments and leaf-op results that are no
        state, view or persistent update, and hold device bytes."""
        for arg in self.s.root.block.args:
            if arg not in self.persistent and self.s.ev.device_bytes(arg.type):
                yield arg
        for op in self.s.leaves:
            # a kv cache's result is the cache itself: persistent state (memory.py)
            if isinstance(op, ParamOp) and op.tensor_name.data in self.from_master:
                yield op.result
                continue
            if isinstance(op, (ParamOp, OptimizerStateOp, KvCacheOp)) or _is_alias_op(op):
                continue
            if isinstance(op, ReloadOp):
                source = self._offload_of(op.operands[0])
                if source is not None and self.offloaded_state(source):
                    continue
            for r in op.results:
                if r not in self.persistent and self.s.ev.device_bytes(r.type):
                    yield r

    # where a buffer lives ---------------------------------------------------------------
    def home(self, owner: SSAValue) -> Scope:
        """The innermost scope one of whose iterations holds every lifetime of
        `owner`: the shallowest scope its aliases reach."""
        best = self.s.scope_of_value(owner)
        stack, seen = [owner], {owner}
        while stack:
            value = stack.pop()
            for use in value.uses:
                op, idx = use.operation, use.index
                if self.s.enclosing_leaf.get(op, op) is not op:
                    continue
                aliases: list[SSAValue] = []
                if isinstance(op, YieldOp):
                    parent = op.parent_op()
                    if isinstance(parent, (PhaseOp, LoopOp)):
                        aliases.append(parent.results[idx])
                    if isinstance(parent, LoopOp) and idx < len(parent.carried):
                        aliases.append(parent.body.block.args[idx])
                elif isinstance(op, LoopOp):
                    aliases.append(op.body.block.args[idx])
                elif isinstance(op, func.ReturnOp):
                    best = self.s.root
                elif _is_alias_op(op):
                    aliases.append(op.results[0])
                for a in aliases:
                    scope = self.s.scope_of_value(a)
                    if scope.depth < best.depth:
                        best = scope
                    if a not in seen:
                        seen.add(a)
                        stack.append(a)
        return best

    def _descend(self, scope: Scope, base: int, frames: tuple, target: Scope, last: bool):
        """Enter the loops between `scope` and its descendant `target`, in their last
        (or first) iteration: a value captured from outside is used in every one."""
        path = []
        while target is not scope:
            if target is None:
                raise AccountingError("internal: a use lies outside its value's scope")
            path.append(target)
            target = target.parent
        for child in reversed(path):
            i = child.count - 1 if last else 0
            frames = frames + (Frame(child, i, base, 0),)
            base = base + self.s.offset[child.loop] + i * child.length
        return base, frames

    def lifetime(self, owner: SSAValue, scope: Scope, base: int, frames: tuple) -> tuple[int, int]:
        """(first, last) position of one instance of `owner`, relative to the start of
        its home scope's iteration; `scope`, `base`, `frames` place the definition."""
        s = self.s
        start = base if isinstance(owner, BlockArgument) else base + s.offset[owner.owner]
        end, cap = start, _NEVER
        work = [(owner, scope, base, frames, None)]
        seen = set()
        uses = self._uses
        while work:
            item = work.pop()
            value, sc, b, fr, sl = item
            if (value, b, sl, fr) in seen:
                continue
            seen.add((value, b, sl, fr))
            for use in value.uses:
                op = use.operation
                leaf, target, offset, last, async_issue, role = uses.get(id(op)) or self._use_facts(op)
                bb, ff = b, fr
                if target is not sc:
                    bb, ff = self._descend(sc, b, fr, target, last=last)
                pos = bb + offset
                if async_issue:  # an issued collective reads its input until it is waited for
                    end = max(end, _waited_at(leaf, target, bb, s, pos))
                if role is _Use.INSIDE:  # inside a fused kernel's body
                    end = max(end, pos)
                elif role is _Use.RELEASE:
                    cap = min(cap, pos)
                elif role is _Use.OFFLOAD:
                    stop = pos
                    waits = [u.operation for u in op.results[0].uses if isinstance(u.operation, WaitOp)]
                    waits = [w for w in waits if s.scope_of.get(w) is target]
                    if op.is_async is not None and waits:
                        stop = min(bb + s.offset[w] for w in waits)
                    end, cap = max(end, stop), min(cap, stop)
                elif role is _Use.YIELD:
                    work.extend(self._through_yield(op, use.index, target, bb, ff, sl))
                elif role is _Use.RETURN:
                    end = max(end, s.root.length - 1)
                elif role is _Use.LOOP:
                    work.append(self._into_loop(op, use.index, bb, ff, sl))
                else:
                    end = max(end, pos)
                    if role is _Use.ALIAS:
                        work.append((op.results[0], target, bb, ff, sl))
        return start, max(start, min(end, cap))

    def _use_facts(self, op: Operation) -> tuple:
        """What a lifetime walk needs of a using op - its leaf, the leaf's scope and
        offset, whether a walk from outside enters the loops between in their last
        iteration, whether the leaf is an async issue, and how the use ends or extends
        the lifetime - decided once per op: a walk meets each use once per iteration
        of the loops around the buffer, and xDSL's op hash and isinstance on its
        abstract op classes are slow."""
        s = self.s
        leaf = s.enclosing_leaf.get(op, op)
        if leaf is not op:
            role = _Use.INSIDE
        elif isinstance(op, ReleaseOp):
            role = _Use.RELEASE
        elif isinstance(op, OffloadOp):
            role = _Use.OFFLOAD
        elif isinstance(op, YieldOp):
            role = _Use.YIELD
        elif isinstance(op, func.ReturnOp):
            role = _Use.RETURN
        elif isinstance(op, LoopOp):
            role = _Use.LOOP
        else:
            role = _Use.ALIAS if _is_alias_op(op) else _Use.READ
        facts = (leaf, s.scope_of[leaf], s.offset[leaf], not isinstance(leaf, (ReleaseOp, OffloadOp)),
                 _is_async_issue(leaf), role)
        self._uses[id(op)] = facts
        return facts

    def _carried_count(self, loop: LoopOp) -> int:
        """len(loop.carried), which xDSL recomputes from the operand segments each time."""
        count = self._carried.get(id(loop))
        if count is None:
            count = self._carried[id(loop)] = len(loop.carried)
        return count

    def _through_yield(self, op: YieldOp, idx: int, scope: Scope, base: int, frames: tuple, sl):
        parent = op.parent_op()
        if isinstance(parent, PhaseOp):
            return [(parent.results[idx], scope, base, frames, sl)]
        if not isinstance(parent, LoopOp):
            return []
        if not frames or frames[-1].scope is not scope:
            raise AccountingError("internal: a value escapes the scope its lifetime was placed in")
        f = frames[-1]
        outer = frames[:-1]
        result = parent.results[idx]
        if idx >= self._carried_count(parent):  # a per-iteration output: one slice of the stack
            if f.first is None and sl is None:
                return [(result, scope.parent, f.parent_base, outer, f.iteration)]
            if f.first and sl is None:  # slices first.. alias this buffer
                return [(result, scope.parent, f.parent_base, outer, i) for i in range(f.first, scope.count)]
            return [(result, scope.parent, f.parent_base, outer, None)]  # every slice (or a stack of stacks)
        if f.first is not None:  # yielded by iterations first..: the following ones' arguments alias it
            out = [(result, scope.parent, f.parent_base, outer, sl)]
            if f.first + 1 < scope.count:
                out.append((scope.block.args[idx], scope, base, outer + (f._replace(first=f.first + 1),), sl))
            return out
        if f.iteration < scope.count - 1:
            nxt = Frame(scope, f.iteration + 1, f.parent_base)
            return [(scope.block.args[idx], scope, base + scope.length, outer + (nxt,), sl)]
        return [(result, scope.parent, f.parent_base, outer, sl)]

    def _into_loop(self, loop: LoopOp, idx: int, base: int, frames: tuple, sl):
        body = self.s.body_scope[loop]
        start = base + self.s.offset[loop]
        arg = loop.body.block.args[idx]
        if idx < self._carried_count(loop):
            return (arg, body, start, frames + (Frame(body, 0, base),), sl)
        if sl is not None:  # one slice of a stack: the iteration that receives it
            j = body.count - 1 - sl if loop.reverse is not None else sl
            return (arg, body, start + j * body.length, frames + (Frame(body, j, base),), None)
        j = body.count - 1
        return (arg, body, start + j * body.length, frames + (Frame(body, j, base, 0),), None)

    # the profile ---------------------------------------------------------------------------
    def _diff(self, scope: Scope) -> np.ndarray:
        diff = self.diffs.get(scope)
        if diff is None:
            diff = self.diffs[scope] = np.zeros((scope.length + 1, len(KINDS)), dtype=np.int64)
        return diff

    def add_buffers(self) -> None:
        s = self.s
        for owner in self.owners():
            size = s.ev.device_bytes(owner.type)
            kind = self.kind_of(owner)
            stream = self.stream_of(owner)
            home = self.home(owner)
            loops = []
            scope = s.scope_of_value(owner)
            while scope is not home:
                loops.append(scope)
                scope = scope.parent
            loops.reverse()
            diff = self._diff(home)
            spans = self.spans.setdefault(home, [])
            for iterations in itertools.product(*(range(sc.count) for sc in loops)):
                base, frames = 0, ()
                for sc, i in zip(loops, iterations):
                    frames += (Frame(sc, i, base),)
                    base += s.offset[sc.loop] + i * sc.length
                first, last = self.lifetime(owner, s.scope_of_value(owner), base, frames)
                diff[first, kind] += size
                diff[last + 1, kind] -= size
                spans.append((first, last, size, stream))

    def add_offloaded_states(self) -> None:
        """An offloaded persistent state leaves the device after the copy and comes
        back at its reload (in the same scope), or at the end of the scope's iteration."""
        s = self.s
        for op in s.leaves:
            if not isinstance(op, OffloadOp) or not self.offloaded_state(op):
                continue
            scope = s.scope_of[op]
            stop = s.offset[op]
            reload_at = scope.length
            for use in op.results[0].uses:
                user = use.operation
                if isinstance(user, WaitOp) and s.scope_of.get(user) is scope:
                    stop = max(stop, s.offset[user])
                    users = _through_phases(user.result) if user.result is not None else []
                else:
                    users = [user]
                for u in users:
                    if isinstance(u, ReloadOp) and s.scope_of.get(u) is scope and s.offset[u] > stop:
                        reload_at = min(reload_at, s.offset[u])
            size = s.ev.device_bytes(op.operands[0].type)
            kinds = {self._state_kind(v) for v in self.owners_of(op.operands[0])}
            kind = _KIND[kinds.pop()] if len(kinds) == 1 else _KIND["optimizer_states"]
            if stop + 1 < reload_at:
                diff = self._diff(scope)
                diff[stop + 1, kind] -= size
                diff[reload_at, kind] += size
                self.state_gaps.setdefault(scope, []).append((stop + 1, reload_at - 1, size))

    def _state_kind(self, value: SSAValue) -> str:
        op = value.owner
        if isinstance(op, ParamOp):
            return "weights"
        if isinstance(op, OptimizerStateOp):
            return state_kind(op.tensor_name.data, op.param.data)
        for use in value.uses:
            if isinstance(use.operation, AssignOp):
                return state_kind(*use.operation.key)
        return "optimizer_states"

    def step_spans(self, gaps: bool = False) -> np.ndarray:
        """Every buffer instance of the step as rows (first, last, bytes, stream) in
        absolute positions, in the order the walk met them (an op's results in result
        order); with `gaps`, the offloaded states' times off the device instead, rows
        (first, last, bytes). A loop body's rows are tiled over its iterations, as
        `profile` tiles its bytes."""
        table = self.state_gaps if gaps else self.spans
        width = 3 if gaps else 4

        def build(scope: Scope) -> np.ndarray:
            own = np.asarray(table.get(scope, ()), dtype=np.int64).reshape(-1, width)
            parts = [own]
            for offset, child in scope.children:
                rows = build(child)
                if not len(rows) or not child.length:
                    continue
                shifts = offset + np.arange(child.count, dtype=np.int64) * child.length
                tiled = np.tile(rows, (child.count, 1))
                tiled[:, :2] += np.repeat(shifts, len(rows))[:, None]
                parts.append(tiled)
            return np.concatenate(parts) if len(parts) > 1 else own

        return build(self.s.root)

    def profile(self) -> np.ndarray:
        """Live transient bytes by kind at every position of the step."""
        done: dict[Scope, np.ndarray] = {}

        def build(scope: Scope) -> np.ndarray:
            for _, child in scope.children:
                done[child] = build(child)
            diff = self.diffs.get(scope)
            own = (
                np.cumsum(diff[: scope.length], axis=0)
                if diff is not None
                else np.zeros((scope.length, len(KINDS)), dtype=np.int64)
            )
            return self.s.tile(scope, own, done)

        return build(self.s.root)


__all__ = [
    "COMPUTE_STREAM",
    "KINDS",
    "KV_CACHE",
    "PRE_UNSHARD_STREAM",
    "UNSHARD_STREAM",
    "AccountingError",
    "Evaluator",
    "Frame",
    "Liveness",
    "Schedule",
    "Scope",
    "gathered_from_master",
    "is_accumulating_cast",
    "state_kind",
]


def _is_async_issue(op: Operation) -> bool:
    """A collective (or coalesced group of them) issued asynchronously whose input its
    stream reads until the collective completes. Not an all-gather: its input is a
    parameter shard, persistent, or FSDP's low-precision copy, which FSDP frees right
    after issuing the gather (`post_unshard`; stream-ordered, so the unshard stream's
    pool reuses it only after the gather)."""
    if isinstance(op, GroupOp):
        kind = op.collective_kind()
        return op.is_async is not None and kind is not None and kind is not AllGatherOp
    return isinstance(op, CollectiveOp) and op.is_async is not None and not isinstance(op, AllGatherOp)


def _waited_at(op: Operation, scope, base: int, s, issued: int) -> int:
    """Where the compute stream first waits for `op` in `scope` (a collective is complete
    there); its issue position when it is waited for elsewhere."""
    waits = [base + s.offset[u.operation] for r in op.results for u in r.uses
             if isinstance(u.operation, WaitOp) and s.scope_of.get(u.operation) is scope]
    return min(waits, default=issued)
