"""Liveness and the memory timeline of a training step (stage.md §V-B).

STAGE tracks each tensor's lifetime "from creation to last use, assuming garbage
collection immediately thereafter"; this module does that over the schedule of one
function (a training step's `@train_step`, or any stg function), per rank: every size
is a tensor's local shard, evaluated with integer bindings.

The schedule is the function's leaf ops in program order with loop bodies unrolled:
position p is the p-th op executed. Phases are transparent; a `stg.vjp` is one fused
kernel (one position; its body is never walked); loop bodies are laid out once and
their profile is tiled `count` times, so an 80-layer model costs one layer's walk.

The memory model, by kind (KINDS):

- **Persistent states** live for the whole step: parameters (`weights`), `"grad"`
  states (`gradients`), `"master"`, `"exp_avg"`, `"exp_avg_sq"`, `"step"`,
  `"momentum"` and any other per-parameter state (`optimizer_states`). Each distinct
  (state name, param) pair is counted once, times its repeat multiplicity (a state
  read inside `stg.repeat L` names L tensors; a micro-batch loop reads the same one).
  A value written to a state by `stg.assign` *is* that state's storage (updates are
  in place), and so is every value it aliases.
- **Transient tensors** (`activations`; results of communication ops are
  `communication`) are SSA values, live from the op defining them to their last use,
  both ends included; a value never used lives at its defining op only. Aliases
  share one buffer: a reshape's result (a view), a wait's result (its token's
  payload), a phase's result (its yield), a loop's block arguments and results.
  - Inside a loop body a value lives for its iteration unless yielded: a carried
    value lives into the next iteration until its block argument's last use there
    (the last iteration's until the loop result's last use);
  - a per-iteration output is one slice of the loop's stacked result: slices grow
    iteration by iteration, and a later loop that scans the stack (a backward
    `reverse` repeat) frees slice i after its last use in the iteration that
    receives it. Any other use of the stack keeps every slice until that use.
  - a value used inside a loop lives until its use in the loop's last iteration;
    a whole tensor scanned by a loop until the last iteration's use.
  - a value returned by the function lives to the end of the step.
  - a `stg.vjp`'s operands and results count, not the forward ops in its body.
  - `stg.release %x` ends x's lifetime there if its last use comes later (it never
    extends one); `stg.offload %x` ends x's device lifetime at the copy (at its
    `stg.wait` when asynchronous) and `stg.reload` makes a new device buffer. An
    offloaded persistent state is off the device from the copy until its reload.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from xdsl.dialects import func
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue

from stagec.dialects.stg.attributes import TensorType, TokenType, element_bytes
from stagec.dialects.stg.comm import CommOp
from stagec.dialects.stg.memory import OffloadOp, ReleaseOp, ReloadOp, WaitOp
from stagec.dialects.stg.shape_ops import ReshapeOp
from stagec.dialects.stg.state import AssignOp, OptimizerStateOp, ParamOp
from stagec.dialects.stg.structure import LoopOp, PhaseOp, RepeatOp, YieldOp
from stagec.dialects.symbolic import Expr, SymbolicError, UnboundSymbolError

KINDS = ("weights", "gradients", "optimizer_states", "activations", "communication")
_KIND = {k: i for i, k in enumerate(KINDS)}
_ACT, _COMM = _KIND["activations"], _KIND["communication"]
_NEVER = 1 << 62


class AccountingError(ValueError):
    """The program cannot be accounted with these bindings (an unbound symbol, a size
    that does not divide, an unsupported structure); the message says which."""


class Evaluator:
    """Symbolic sizes and counts to exact integers under fixed bindings, memoised."""

    def __init__(self, env: Mapping[str, int]):
        self.env = dict(env)
        self._ints: dict[Expr, int] = {}
        self._bytes: dict[Attribute, int] = {}

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
        return value


# -- persistent states ----------------------------------------------------------------


@dataclass(frozen=True)
class PersistentState:
    """A state kept across steps: (state, param) is ("<name>", None) for a parameter
    and e.g. ("exp_avg", "<param name>") for one of its optimizer states."""

    state: str
    param: str | None
    kind: str
    multiplicity: int
    bytes: int  # local bytes of all `multiplicity` tensors


def state_kind(state: str, param: str | None) -> str:
    if param is None:
        return "weights"
    return "gradients" if state == "grad" else "optimizer_states"


def repeat_multiplicity(op: Operation, ev: Evaluator) -> int:
    """How many distinct tensors a state op names: the product of the enclosing
    stg.repeat counts (micro-batch loops re-read the same tensor)."""
    count, parent = 1, op.parent_op()
    while parent is not None:
        if isinstance(parent, RepeatOp):
            count *= ev.int(parent.count_expr, "a repeat count")
        parent = parent.parent_op()
    return count


def persistent_states(function: func.FuncOp, ev: Evaluator) -> list[PersistentState]:
    """Every distinct (state, param) the function reads or assigns, counted once (the
    largest size if two mentions disagree)."""
    found: dict[tuple[str, str | None], PersistentState] = {}
    for op in function.walk():
        if isinstance(op, ParamOp):
            key, ty = (op.tensor_name.data, None), op.result.type
        elif isinstance(op, OptimizerStateOp):
            key, ty = (op.tensor_name.data, op.param.data), op.result.type
        elif isinstance(op, AssignOp):
            key, ty = op.key, op.value.type
        else:
            continue
        mult = repeat_multiplicity(op, ev)
        state = PersistentState(key[0], key[1], state_kind(*key), mult, mult * ev.device_bytes(ty))
        if key not in found or found[key].bytes < state.bytes:
            found[key] = state
    return list(found.values())


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


class Frame(NamedTuple):
    """One enclosing loop iteration of a lifetime walk: the body, the iteration, the
    position where the parent's iteration starts, and whether the walk stands for
    every iteration (a value captured from outside the loop)."""

    scope: Scope
    iteration: int
    parent_base: int
    every: bool


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
                    path.append((child.loop.name, i, child.count))
                    scope = child
                    break
            else:
                return path


# -- lifetimes -------------------------------------------------------------------------


def _is_alias_op(op: Operation) -> bool:
    """Ops whose result is a view of their operand's buffer."""
    return isinstance(op, ReshapeOp) or (isinstance(op, WaitOp) and op.result is not None)


class Liveness:
    """Buffers, their kinds and their lifetimes over a Schedule."""

    def __init__(self, schedule: Schedule):
        self.s = schedule
        self.persistent: set[SSAValue] = set()
        for op in schedule.root.block.walk():
            if isinstance(op, AssignOp):
                self.persistent |= self.owners_of(op.value)
        self.diffs: dict[Scope, np.ndarray] = {}

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
        return isinstance(value.owner, (ParamOp, OptimizerStateOp))

    def offloaded_state(self, offload: OffloadOp) -> bool:
        owners = self.owners_of(offload.operands[0])
        return bool(owners) and all(self.is_state_read(v) or v in self.persistent for v in owners)

    def kind_of(self, value: SSAValue) -> int:
        op = value.owner
        if isinstance(op, CommOp):
            return _COMM
        if isinstance(op, ReloadOp):
            source = self._offload_of(op.operands[0])
            if source is not None:
                kinds = {self.kind_of(v) for v in self.owners_of(source.operands[0]) if not self.is_state_read(v)}
                if len(kinds) == 1:
                    return kinds.pop()
        return _ACT

    def _offload_of(self, host: SSAValue) -> OffloadOp | None:
        op = host.owner
        if isinstance(op, WaitOp):
            op = op.token.owner
        return op if isinstance(op, OffloadOp) else None

    def owners(self) -> Iterable[SSAValue]:
        """Every transient buffer: function arguments and leaf-op results that are no
        state, view or persistent update, and hold device bytes."""
        yield from self.s.root.block.args
        for op in self.s.leaves:
            if isinstance(op, (ParamOp, OptimizerStateOp)) or _is_alias_op(op):
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
            frames = frames + (Frame(child, i, base, True),)
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
        while work:
            item = work.pop()
            value, sc, b, fr, sl = item
            if (value, b, sl, fr) in seen:
                continue
            seen.add((value, b, sl, fr))
            for use in value.uses:
                op, idx = use.operation, use.index
                leaf = s.enclosing_leaf.get(op, op)
                target = s.scope_of[leaf]
                bb, ff = b, fr
                if target is not sc:
                    bb, ff = self._descend(sc, b, fr, target, last=not isinstance(leaf, (ReleaseOp, OffloadOp)))
                pos = bb + s.offset[leaf]
                if leaf is not op:  # inside a fused kernel's body
                    end = max(end, pos)
                elif isinstance(op, ReleaseOp):
                    cap = min(cap, pos)
                elif isinstance(op, OffloadOp):
                    stop = pos
                    waits = [u.operation for u in op.results[0].uses if isinstance(u.operation, WaitOp)]
                    waits = [w for w in waits if s.scope_of.get(w) is target]
                    if op.is_async is not None and waits:
                        stop = min(bb + s.offset[w] for w in waits)
                    end, cap = max(end, stop), min(cap, stop)
                elif isinstance(op, YieldOp):
                    work.extend(self._through_yield(op, idx, target, bb, ff, sl))
                elif isinstance(op, func.ReturnOp):
                    end = max(end, s.root.length - 1)
                elif isinstance(op, LoopOp):
                    work.append(self._into_loop(op, idx, bb, ff, sl))
                else:
                    end = max(end, pos)
                    if _is_alias_op(op):
                        work.append((op.results[0], target, bb, ff, sl))
        return start, max(start, min(end, cap))

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
        if idx >= len(parent.carried):  # a per-iteration output: one slice of the stack
            return [(result, scope.parent, f.parent_base, outer, None if (f.every or sl is not None) else f.iteration)]
        if f.every:  # yielded by every iteration: the next ones' arguments alias it too
            out = [(result, scope.parent, f.parent_base, outer, sl)]
            if scope.count > 1:
                out.append((scope.block.args[idx], scope, base, frames, sl))
            return out
        if f.iteration < scope.count - 1:
            nxt = Frame(scope, f.iteration + 1, f.parent_base, False)
            return [(scope.block.args[idx], scope, base + scope.length, outer + (nxt,), sl)]
        return [(result, scope.parent, f.parent_base, outer, sl)]

    def _into_loop(self, loop: LoopOp, idx: int, base: int, frames: tuple, sl):
        body = self.s.body_scope[loop]
        start = base + self.s.offset[loop]
        arg = loop.body.block.args[idx]
        if idx < len(loop.carried):
            return (arg, body, start, frames + (Frame(body, 0, base, False),), sl)
        if sl is not None:  # one slice of a stack: the iteration that receives it
            j = body.count - 1 - sl if loop.reverse is not None else sl
            return (arg, body, start + j * body.length, frames + (Frame(body, j, base, False),), None)
        j = body.count - 1
        return (arg, body, start + j * body.length, frames + (Frame(body, j, base, True),), None)

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
            home = self.home(owner)
            loops = []
            scope = s.scope_of_value(owner)
            while scope is not home:
                loops.append(scope)
                scope = scope.parent
            loops.reverse()
            diff = self._diff(home)
            for iterations in itertools.product(*(range(sc.count) for sc in loops)):
                base, frames = 0, ()
                for sc, i in zip(loops, iterations):
                    frames += (Frame(sc, i, base, False),)
                    base += s.offset[sc.loop] + i * sc.length
                first, last = self.lifetime(owner, s.scope_of_value(owner), base, frames)
                diff[first, kind] += size
                diff[last + 1, kind] -= size

    def add_offloaded_states(self, states: Mapping[tuple, PersistentState]) -> None:
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
                    users = [u.operation for u in user.result.uses] if user.result is not None else []
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


# -- the report ----------------------------------------------------------------------------


class TimelineEntry(NamedTuple):
    position: int
    op: str
    phase: str
    bytes: dict[str, int]


@dataclass(frozen=True, eq=False)
class MemoryTimeline:
    """Live bytes by kind at each position of the schedule, persistent states included.
    `live[p, k]` is kind KINDS[k] at position p; `leaf[p]` indexes `op_names` and
    `phases` (the op executed there and its phase)."""

    live: np.ndarray
    leaf: np.ndarray
    op_names: tuple[str, ...]
    phases: tuple[str, ...]
    kinds: tuple[str, ...] = KINDS

    def __len__(self) -> int:
        return len(self.leaf)

    def __getitem__(self, position: int) -> TimelineEntry:
        leaf = int(self.leaf[position])
        return TimelineEntry(
            position,
            self.op_names[leaf],
            self.phases[leaf],
            {k: int(v) for k, v in zip(self.kinds, self.live[position])},
        )

    def entries(self) -> list[TimelineEntry]:
        return [self[p] for p in range(len(self))]

    def totals(self) -> np.ndarray:
        return self.live.sum(axis=1)

    def phase_spans(self) -> list[tuple[str, int, int]]:
        """Runs of consecutive positions in one phase: (phase, first, last)."""
        if not len(self):
            return []
        codes = np.asarray([self.phases[i] for i in range(len(self.phases))], dtype=object)[self.leaf]
        change = np.flatnonzero(codes[1:] != codes[:-1]) + 1
        starts = np.concatenate(([0], change))
        ends = np.concatenate((change - 1, [len(self) - 1]))
        return [(str(codes[a]), int(a), int(b)) for a, b in zip(starts, ends)]

    def to_json(self) -> dict:
        return {
            "kinds": list(self.kinds),
            "entries": [
                {"position": e.position, "op": e.op, "phase": e.phase, "bytes": e.bytes} for e in self.entries()
            ],
        }


@dataclass(frozen=True, eq=False)
class MemoryReport:
    """Peak device memory of one rank over one step, and where it occurs."""

    peak_bytes: int
    breakdown: dict[str, int]  # live bytes by kind at the peak
    persistent: dict[str, int]  # persistent states by kind
    states: tuple[PersistentState, ...]
    peak_position: int | None
    peak_op: str | None
    peak_phase: str | None
    peak_loops: tuple[tuple[str, int, int], ...]  # (loop, iteration, count), outermost first
    timeline: MemoryTimeline

    @property
    def peak_location(self) -> str:
        if self.peak_position is None:
            return "no op (persistent states only)"
        where = f"{self.peak_op} (position {self.peak_position}"
        where += f", {self.peak_phase} phase)" if self.peak_phase else ")"
        for loop, i, count in self.peak_loops:
            where += f", {loop} iteration {i + 1} of {count}"
        return where


def analyze_memory(function: func.FuncOp, ev: Evaluator) -> MemoryReport:
    """Peak memory, its breakdown by kind, and the timeline of one rank's step."""
    schedule = Schedule(function, ev)
    states = persistent_states(function, ev)
    persistent = {k: 0 for k in KINDS}
    for st in states:
        persistent[st.kind] += st.bytes
    liveness = Liveness(schedule)
    liveness.add_buffers()
    liveness.add_offloaded_states({(st.state, st.param): st for st in states})
    live = liveness.profile() + np.asarray([persistent[k] for k in KINDS], dtype=np.int64)
    timeline = MemoryTimeline(
        live,
        schedule.leaf_codes(),
        tuple(op.name for op in schedule.leaves),
        tuple(schedule.leaf_phase),
    )
    if not len(timeline):
        return MemoryReport(
            sum(persistent.values()), dict(persistent), dict(persistent), tuple(states), None, None, None, (), timeline
        )
    peak = int(np.argmax(timeline.totals()))
    entry = timeline[peak]
    return MemoryReport(
        sum(entry.bytes.values()),
        entry.bytes,
        dict(persistent),
        tuple(states),
        peak,
        entry.op,
        entry.phase,
        tuple(schedule.locate(peak)),
        timeline,
    )


def plot_timeline(timeline: MemoryTimeline, path: str, title: str = "", max_points: int = 20000) -> None:
    """A PNG of the timeline: live bytes stacked by kind, phases shaded. Long
    timelines are binned to `max_points`, each bin showing its position of peak use."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    live, positions = timeline.live, np.arange(len(timeline))
    if len(timeline) > max_points:
        edges = np.linspace(0, len(timeline), max_points + 1).astype(np.int64)
        totals = timeline.totals()
        picks = np.asarray([a + int(np.argmax(totals[a:b])) for a, b in zip(edges[:-1], edges[1:]) if b > a])
        live, positions = live[picks], picks
    gib = float(1 << 30)
    fig, ax = plt.subplots(figsize=(13, 5))
    shades = {"forward": "#dbe9f6", "backward": "#fbe3d6", "recompute": "#e7f4dc", "optimizer": "#eee0f5"}
    labelled = set()
    for phase, first, last in timeline.phase_spans():
        if phase in shades:
            ax.axvspan(first, last + 1, color=shades[phase], alpha=0.6, lw=0,
                       label=None if phase in labelled else f"{phase} phase")
            labelled.add(phase)
    if len(positions):
        ax.stackplot(positions, (live / gib).T, labels=[k.replace("_", " ") for k in timeline.kinds], step="post")
        peak = int(np.argmax(timeline.totals()))
        ax.axhline(timeline.totals()[peak] / gib, color="k", lw=0.8, ls="--")
        ax.annotate(f"peak {timeline.totals()[peak] / gib:.2f} GiB", (peak, timeline.totals()[peak] / gib),
                    textcoords="offset points", xytext=(0, 4), ha="center", fontsize=8)
        ax.set_ylim(0, timeline.totals()[peak] / gib * 1.08 or 1)
    ax.set_xlabel("position in the step (ops executed)")
    ax.set_ylabel("live device memory per rank (GiB)")
    ax.set_title(title or "memory timeline")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, borderaxespad=0)
    ax.margins(x=0)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


__all__ = [
    "KINDS",
    "AccountingError",
    "Evaluator",
    "MemoryReport",
    "MemoryTimeline",
    "PersistentState",
    "Schedule",
    "TimelineEntry",
    "analyze_memory",
    "persistent_states",
    "plot_timeline",
]
