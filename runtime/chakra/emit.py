"""Chakra emission: a training step in the scheduled form (docs/scheduled-ir.md) - sharded,
optionally pipelined, its sizes bound - translated into one `<prefix>.<rank>.et` per
rank and `comm_group.json` (stage.md §IV-B2, §IV-E; ../shared/CHAKRA.md; docs/chakra.md
"Emission"). Every grouping, fusion, bucketing and ordering decision is the scheduling
passes'; this module makes none of its own.

Requires: stg IR after stg-match-collectives (no `stg.reshard` left) and
stg-vocab-parallel-cross-entropy (no cross-entropy over a split vocab; the other
scheduling passes are optional: without them each op is its own node), every size
numeric under the module's stg.config, the mesh and `bindings`, and micro-batch and
repeat counts that evaluate. Guarantees: traces `check_trace` accepts - unique ids,
acyclic deps, matched send/recv, identical collective sequences within each group.

How the program becomes nodes (expansion happens here, and only here):

- **Rank classes.** A function marked `stg.stage = {pp = k}` is the program of every
  rank whose pp coordinate is k; otherwise `@train_step` (or the module's only
  function) is every rank's. One class is expanded once; its ranks differ only in
  communicator groups and send/recv peers, which are patched per rank into
  pre-encoded bytes.
- **Loops** (`stg.repeat`, `stg.microbatch`) are unrolled and `func.call`s inlined;
  `--iterations N` runs the whole function N times. Data deps follow SSA use-def
  (through `stg.wait` and views): a carried value of iteration i+1 depends on
  iteration i's yield, a scanned slice on the iteration that stacked it, a state read
  (`stg.param`, `stg.optimizer_state`) on the last `stg.assign` of that state (per
  layer of a stack, or the layer it names), so gradient accumulation chains across
  micro-batches and iteration i+1's forward waits for iteration i's optimizer.
- **One op, one node.** A compute op is a COMP node; a `stg.group` of compute ops is
  one (its members' FLOPs, bytes and times summed); a collective, or a group of them,
  one COMM_COLL node; send and recv their nodes.
- **Control deps are stream order.** Compute nodes form one stream in program order
  (each depends on the previous): for a pipeline stage that order is the schedule's
  (GPipe, 1F1B), so the trace encodes it. Each stream the scheduled form names (or,
  unnamed, each communicator group; each peer and direction for send and recv) is a
  chain of its own (NCCL orders a communicator's collectives; ASTRA-sim pairs them by
  order). A communication node is issued when the compute stream reaches it: it
  depends on the last compute node before it in program order (a CUDA stream waits on
  the compute stream's event when the op is enqueued) - so an FSDP all-gather starts
  once the compute before its place in the program has run, where stg-prefetch may
  have moved it earlier; nothing starts at t=0 by itself. A `ready` group (a gradient
  bucket) has no issue point: it waits for its gradients' last writes only.
- Views (`stg.reshape`, `stg.split`, `stg.local_slice`, `stg.fill`, `stg.wait`),
  `stg.release` and state reads and writes make no node: they pass dependencies on.

COMP nodes carry `duration_micros` (the cost model, runtime/cost), `num_ops` and
`tensor_size` (ints); collectives `comm_type`, `comm_size` (bytes: an all-gather's
shard, the whole buffer otherwise - the op's local input) and `pg_name` (a key of
comm_group.json); send/recv `comm_src`, `comm_dst`, `comm_tag` (unique per micro-batch
and iteration) and `comm_size`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from stagec.dialects.kinds import class_tests
from stagec.dialects.stg.attributes import TokenType
from stagec.dialects.stg.comm import (
    AllReduceStagesOp,
    CollectiveOp,
    RecvOp,
    ReshardOp,
    SendOp,
)
from stagec.dialects.stg.compute import EinsumOp
from stagec.dialects.stg.cost import CostInterface
from stagec.dialects.stg.memory import OffloadOp, ReleaseOp, ReloadOp, WaitOp
from stagec.dialects.stg.mesh import MeshOp
from stagec.dialects.stg.model_ops import CrossEntropyOp
from stagec.dialects.stg.schedule import GroupOp, collective_stream, p2p_stream, stream_of, view_ops
from stagec.dialects.stg.state import AssignOp, InputOp, OptimizerStateOp, ParamOp, StateOp
from stagec.dialects.stg.structure import LoopOp, PhaseOp, RepeatOp, YieldOp
from stagec.dialects.symbolic import Expr, SymbolicError
from stagec.runtime.chakra.errors import EmitError, OutputError
from stagec.runtime.chakra.ranks import RankSpace
from stagec.runtime.chakra.schema import CommType, NodeType
from stagec.runtime.chakra.staging import (
    COMM_GROUP_FILE,
    OutputEstimate,
    PreviousJobError,
    Staging,
    is_staging,
    previous_output,
)
from stagec.runtime.chakra.wire import encode_attr, encode_metadata, encode_node_head, encode_varint, frame

__all__ = [
    "EmitError",
    "EmitOptions",
    "EmitReport",
    "OutputError",
    "OutputEstimate",
    "PreviousJobError",
    "Program",
    "build_programs",
    "emit_traces",
]





@dataclass(frozen=True)
class EmitOptions:
    """What to emit (docs/chakra.md "Emission")."""

    iterations: int = 1
    optimizer: bool = True
    prefix: str = "trace"
    workers: int = 0  # processes writing files; 0: one per core (at most 8)


def _coll_type(op: Operation) -> CommType:
    return CommType[op.COLLECTIVE_KIND.upper()]


COMM_KIND_NAMES = {
    CommType.ALL_REDUCE: "all_reduce",
    CommType.ALL_GATHER: "all_gather",
    CommType.REDUCE_SCATTER: "reduce_scatter",
    CommType.ALL_TO_ALL: "all_to_all",
    CommType.BROADCAST: "broadcast",
}
_VIEWS = (*view_ops(), WaitOp)
# _Expander._steps's chain of class tests, once per op class (dialects/kinds.py)
_STEP_TESTS = class_tests(end=(YieldOp, func.ReturnOp), group=GroupOp, state=StateOp, assign=AssignOp, wait=WaitOp,
                          view=_VIEWS, no_node=(ReleaseOp, MeshOp), reshard=ReshardOp, collective=CollectiveOp,
                          stages=AllReduceStagesOp, p2p=(SendOp, RecvOp), loop=LoopOp, phase=PhaseOp,
                          copy=(OffloadOp, ReloadOp), call=func.CallOp, cross_entropy=CrossEntropyOp,
                          costed=CostInterface)
_PHASE_SHORT = {"forward": "fwd", "backward": "bwd", "recompute": "rcp", "optimizer": "opt"}


# -- the static part of a node --------------------------------------------------------------


@dataclass
class Static:
    """What every node made from one IR op (or fused group) shares."""

    type: NodeType
    label: str
    category: str  # gemm, grouped_gemm, attention, elementwise, other; or a comm kind
    duration: int = 0
    num_ops: int = 0
    size: int = 0  # tensor_size (compute) or comm_size (communication), bytes
    patch: tuple | None = None  # ("pg", axes, among) | ("send"|"recv", axis, peer coordinate)
    attrs: bytes = b""  # pre-encoded static attributes
    nanos: int = 0  # the cost model's time unrounded, in ns (the simulator's; a trace holds whole microseconds)


@dataclass
class Program:
    """One rank class's node stream: node i has id i."""

    name: str
    ranks: list[int]
    statics: list[Static] = field(default_factory=list)
    node_static: list[int] = field(default_factory=list)
    node_data: list[tuple] = field(default_factory=list)
    node_ctrl: list[tuple] = field(default_factory=list)
    node_ctx: list[int] = field(default_factory=list)
    node_tag: dict[int, int] = field(default_factory=dict)
    contexts: list[str] = field(default_factory=list)
    # the position, in the memory analysis's schedule (passes/analysis/liveness.py), of
    # the op each node comes from, counted on over iterations; `positions` per iteration
    node_position: list[int] = field(default_factory=list)
    positions: int = 0

    def __len__(self) -> int:
        return len(self.node_static)

    def counts(self) -> dict[str, int]:
        """Nodes by category (compute categories, collective kinds, send, recv)."""
        per_static = [0] * len(self.statics)
        for s in self.node_static:
            per_static[s] += 1
        out: dict[str, int] = {}
        for st, n in zip(self.statics, per_static):
            if n:
                out[st.category] = out.get(st.category, 0) + n
        return out

    def totals(self) -> dict[str, int]:
        """FLOPs, and bytes by communication kind, of one rank of the class."""
        per_static = [0] * len(self.statics)
        for s in self.node_static:
            per_static[s] += 1
        out: dict[str, int] = {"flops": 0}
        for st, n in zip(self.statics, per_static):
            if not n:
                continue
            if st.type == NodeType.COMP_NODE:
                out["flops"] += n * st.num_ops
            else:
                key = f"{st.category}_bytes"
                out[key] = out.get(key, 0) + n * st.size
        return out


class Stacked:
    """Per-iteration dependencies of a value stacked by a loop (or scanned into one)."""

    __slots__ = ("items",)

    def __init__(self, items: list):
        self.items = items

    def union(self) -> tuple:
        seen: set[int] = set()
        for item in self.items:
            if item is not None:
                seen.update(item.union() if isinstance(item, Stacked) else item)
        return tuple(sorted(seen))


def _deps(value) -> tuple:
    return value.union() if isinstance(value, Stacked) else value


def _union(values: dict[int, object], ids: tuple[int, ...]) -> tuple:
    """The sorted union of the deps of the values `ids` names. Every deps tuple the
    emitter stores is sorted and free of repeats, so one operand's is its own (most
    ops read one value; the set would be built 10^5 times for nothing)."""
    if len(ids) == 1:
        d = values[ids[0]]
        return d.union() if d.__class__ is Stacked else d
    seen: set[int] = set()
    for v in ids:
        d = values[v]
        seen.update(d.union() if d.__class__ is Stacked else d)
    return tuple(sorted(seen))


# -- expansion -------------------------------------------------------------------------------


class _Expander:
    """Walks one rank class's function and appends its nodes to a Program."""

    def __init__(self, module: ModuleOp, env: dict[str, int], cost, options: EmitOptions,
                 space: RankSpace, program: Program, tag_base: int):
        self.module = module
        self.env = env
        self.cost = cost
        self.options = options
        self.space = space
        self.p = program
        self.tag_base = tag_base
        self.functions = {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)}
        self.values: dict[int, object] = {}  # id(SSA value) -> deps (xDSL's __hash__ is slow)
        self.state: dict[tuple, tuple] = {}
        self.static_ids: dict[tuple, int] = {}
        self.computes: list[bool] = []  # per static: a COMP node's (IntEnum compares are slow)
        self.compiled: dict[int, list] = {}
        self.last_comp: int | None = None
        # copies a stg.wait blocks the compute stream on: the next compute node waits
        # for them (an all-gather's wait needs no barrier: its consumer reads the data)
        self.barrier: tuple = ()
        self.streams: dict[str, int] = {}
        self.layers: list[int] = []
        self.phase = ""
        self.comm_only = False
        self.call_counts: dict[str, int] = {}
        self.call_mb: dict[int, int] = {}
        self.seq = 0  # the current micro-batch call's number (send/recv tags)
        self.ctx_parts: list[str] = []
        self.ctx_index = 0
        self.ctx_cache: dict[str, int] = {}
        self.position = -1  # the leaf op being expanded, as the memory analysis numbers them

    # -- helpers -------------------------------------------------------------------------

    def int(self, expr: Expr, what: str) -> int:
        try:
            value = expr.evaluate_fraction(self.env)
        except SymbolicError as error:
            raise EmitError(f"cannot evaluate {what} ({expr}): {error}") from None
        if value.denominator != 1:
            raise EmitError(f"{what} ({expr}) is not an integer: {value}")
        return int(value)

    def get(self, v: SSAValue):
        try:
            return self.values[id(v)]
        except KeyError:
            owner = v.owner
            what = owner.name if isinstance(owner, Operation) else "a block argument"
            raise EmitError(f"internal: a value of {what} is used before the emitter saw it") from None

    def deps(self, values) -> tuple:
        seen: set[int] = set()
        for v in values:
            seen.update(_deps(self.get(v)))
        return tuple(sorted(seen))

    def set_ctx(self) -> None:
        text = ".".join(self.ctx_parts)
        index = self.ctx_cache.get(text)
        if index is None:
            index = self.ctx_cache[text] = len(self.p.contexts)
            self.p.contexts.append(text)
        self.ctx_index = index

    def static(self, key: tuple, make: Callable[[], Static]) -> int:
        index = self.static_ids.get(key)
        if index is None:
            st = make()
            index = self.static_ids[key] = len(self.p.statics)
            self.p.statics.append(st)
            self.computes.append(st.type == NodeType.COMP_NODE)
        return index

    def op_cost(self, op: Operation):
        try:
            return self.cost.op_cost(op, self.env)
        except Exception as error:  # noqa: BLE001 - the cost model's CostError and size errors
            raise EmitError(f"cannot cost {op.name}: {error}") from None

    def label(self, op: Operation, what: str | None = None) -> str:
        phase = _PHASE_SHORT.get(self.phase, self.phase)
        name = what or op.name.removeprefix("stg.")
        hint = next((r.name_hint for r in op.results if r.name_hint), None)
        if hint and op.results and isinstance(op.results[0].type, TokenType):
            hint = hint.removesuffix("_t")  # stg-schedule's token of the value the trace names
        parts = [p for p in (phase, name, hint) if p]
        return ".".join(parts)

    def compute_static(self, op: Operation) -> int:
        def make() -> Static:
            c = self.op_cost(op)
            return _comp_static(self.label(op), _category(op), c.num_ops, c.tensor_size, c.micros)

        return self.static(("op", id(op), self.phase), make)

    def stream(self, op: Operation | None, axes: tuple[str, ...], among: tuple[int, ...] | None = None) -> str:
        """The op's stream (the scheduled form names it), or its communicator group's."""
        return (stream_of(op) if op is not None else None) or collective_stream(axes, self.space.axes, among)

    def add_node(self, static: int, data: tuple, *, stream: str | None = None, issue: bool = True) -> int:
        """Append a node; ctrl deps: the compute stream, or the node's comm stream and
        its issue point on the compute stream."""
        p = self.p
        nid = len(p.node_static)
        last = self.last_comp
        if stream is None and self.computes[static]:
            ctrl = () if last is None or last in data else (last,)
            if self.barrier:
                ctrl = tuple(sorted(set(ctrl).union(self.barrier).difference(data)))
                self.barrier = ()
            self.last_comp = nid
        else:
            wanted = set()
            if stream is not None:
                prev = self.streams.get(stream)
                if prev is not None:
                    wanted.add(prev)
                self.streams[stream] = nid
            if issue and last is not None:
                wanted.add(last)
            ctrl = tuple(sorted(wanted.difference(data))) if wanted else ()
        p.node_static.append(static)
        p.node_data.append(data)
        p.node_ctrl.append(ctrl)
        p.node_ctx.append(self.ctx_index)
        p.node_position.append(self.position)
        return nid

    # -- walking ---------------------------------------------------------------------------

    def run_function(self, fn: func.FuncOp, iteration: int) -> None:
        self.ctx_parts = [f"it{iteration}"]
        self.set_ctx()
        self.seq = iteration
        for arg in fn.body.block.args:
            self.values[id(arg)] = ()
        self.walk(fn.body.block)

    def walk(self, block: Block) -> list:
        """Expand a block once; returns the deps of what its terminator yields."""
        steps = self.compiled.get(id(block))
        if steps is None:
            steps = self.compiled[id(block)] = self._compile(block)
        out: list = []
        values = self.values
        static_ids = self.static_ids
        for kind, op, a, b, leaf in steps:
            self.position += leaf
            if kind == 0:  # compute: one node
                d = _union(values, a)
                if not self.comm_only:
                    static = static_ids.get(("op", id(op), self.phase))
                    if static is None:
                        static = self.compute_static(op)
                    d = (self.add_node(static, d),)
                for r in b:
                    values[r] = d
            elif kind == 1:  # a view: deps pass on
                d = _union(values, a)
                for r in b:
                    values[r] = d
            elif kind == 2:  # state read
                name, param, layers = a
                values[b] = self.state.get((name, param, tuple(self.layers) if layers is None else layers), ())
            elif kind == 3:  # state write
                d = values[a]
                name, param, layers = b
                key = (name, param, tuple(self.layers) if layers is None else layers)
                self.state[key] = d.union() if d.__class__ is Stacked else d
            elif kind == 4:  # terminator
                out = [values[v] for v in a]
            elif kind == 5:
                a(op) if b is None else a(op, b)
        return out

    def _compile(self, block: Block) -> list[tuple]:
        """The block's ops with their handlers, decided once (isinstance on xDSL's ops
        is slow, and a layer body runs thousands of times). A step's last field is 1
        for an op the memory analysis gives a position (every op but loops, phases,
        calls and terminators: liveness.py's Schedule)."""
        steps = [step + (0 if step[0] == 4 or step[2] in (self.loop, self.run_phase, self.call) else 1,)
                 for step in self._steps(block)]
        return steps

    def _steps(self, block: Block) -> list[tuple]:
        steps: list[tuple] = []
        for op in block.ops:
            t = _STEP_TESTS(op)
            operands = tuple(id(v) for v in op.operands)
            results = tuple(id(r) for r in op.results)
            if t.end:
                steps.append((4, op, operands, None))
            elif t.group:
                members = op.members()
                inputs = tuple(id(v) for v in _group_inputs(op, members))
                collective = None
                if op.collective_kind() is not None:
                    axes = members[0].axis_names
                    collective = (axes, self.space.group_size(axes) == 1, self.stream(op, axes), op.ready is None)
                steps.append((5, op, self.group, (members, inputs, collective, tuple(id(r) for r in op.outputs))))
            elif t.state:
                steps.append((2, op, _state_slot(op), id(op.result)))
            elif t.assign:
                steps.append((3, op, id(op.value), _state_slot(op)))
            elif t.wait and _STEP_TESTS(op.token.owner).copy:
                steps.append((5, op, self.copy_wait, None))
            elif t.view:
                steps.append((1, op, operands, results))
            elif t.no_node:
                steps.append((6, op, None, None))
            elif t.reshard:
                raise EmitError("a stg.reshard is left: run stg-match-collectives before emitting a trace")
            elif t.collective:
                axes = op.axis_names
                among = op.coordinates if t.stages else None
                steps.append((5, op, self.collective, (operands, axes, among, self.space.group_size(axes, among) == 1,
                                                       self.stream(op, axes, among))))
            elif t.p2p:
                steps.append((5, op, self.p2p, operands))
            elif t.loop:
                steps.append((5, op, self.loop, None))
            elif t.phase:
                steps.append((5, op, self.run_phase, None))
            elif t.call:
                steps.append((5, op, self.call, None))
            elif t.cross_entropy and op.logits.type.splits[-1]:
                raise EmitError("a cross-entropy over a split vocab: run stg-vocab-parallel-cross-entropy before "
                                "emitting a trace (its all-reduces are ops of the scheduled form)")
            elif t.copy and stream_of(op) is not None:
                steps.append((5, op, self.copy, None))
            elif t.costed:
                # offload/reload copies run as compute nodes: Chakra's memory nodes need
                # a remote-memory configuration ASTRA-sim does not have by default
                steps.append((0, op, operands, results))
            elif op.regions:
                raise EmitError(f"the emitter does not know {op.name}, which has regions")
            else:
                steps.append((1, op, operands, results))
        return steps

    # -- structure -------------------------------------------------------------------------

    def loop(self, op: LoopOp) -> None:
        count = self.int(op.count_expr, f"the count of {op.name}")
        body = op.body.block
        n = len(op.carried)
        carried = [_deps(self.get(v)) for v in op.carried]
        scanned = [self.get(v) for v in op.scanned]
        n_out = len(op.outputs) - n
        stacks: list[list] = [[None] * count for _ in range(n_out)]
        reverse = op.reverse is not None
        is_repeat = isinstance(op, RepeatOp)
        offset = self.int(op.offset_expr, "a repeat's offset") if is_repeat else 0
        word = "L" if is_repeat else "mb"
        depth = len(self.ctx_parts)
        for i in range(count):
            idx = count - 1 - i if reverse else i
            for arg, value in zip(body.args[:n], carried):
                self.values[id(arg)] = value
            for arg, value in zip(body.args[n:], scanned):
                self.values[id(arg)] = value.items[idx] if isinstance(value, Stacked) else value
            if is_repeat:
                self.layers.append(offset + idx)
            self.ctx_parts.append(f"{word}{offset + idx}")
            self.set_ctx()
            ys = self.walk(body)
            self.ctx_parts.pop()
            if is_repeat:
                self.layers.pop()
            carried = [_deps(y) for y in ys[:n]]
            for j, y in enumerate(ys[n:]):
                stacks[j][idx] = y
        del self.ctx_parts[depth:]
        self.set_ctx()
        for r, value in zip(op.outputs[:n], carried):
            self.values[id(r)] = value
        for r, items in zip(op.outputs[n:], stacks):
            self.values[id(r)] = Stacked(items)

    def run_phase(self, op: PhaseOp) -> None:
        kind = str(op.kind.data)
        saved = (self.phase, self.comm_only)
        self.phase = kind
        if kind == "optimizer":
            self.comm_only = not self.options.optimizer
        ys = self.walk(op.body.block)
        self.phase, self.comm_only = saved
        for r, y in zip(op.outputs, ys):
            self.values[id(r)] = y

    def call(self, op: func.CallOp) -> None:
        name = op.callee.root_reference.data
        callee = self.functions.get(name)
        if callee is None:
            raise EmitError(f"func.call of @{name}, which the module lacks")
        count = self.call_counts.get(name, 0)
        self.call_counts[name] = count + 1
        # the micro-batch: a call taking another call's results (a stage's backward
        # taking its forward's saved values) has that call's; else the call's number
        # (the schedule calls each forward in micro-batch order)
        for v in op.arguments:
            if isinstance(v.owner, func.CallOp) and id(v.owner) in self.call_mb:
                count = self.call_mb[id(v.owner)]
                break
        self.call_mb[id(op)] = count
        saved_seq = self.seq
        self.seq = count
        for arg, v in zip(callee.body.block.args, op.arguments):
            self.values[id(arg)] = self.get(v)
        self.ctx_parts.append(f"{name.rsplit('_', 1)[-1]}{count}")
        self.set_ctx()
        ys = self.walk(callee.body.block)
        self.ctx_parts.pop()
        self.set_ctx()
        self.seq = saved_seq
        for r, y in zip(op.results, ys):
            self.values[id(r)] = y

    # -- compute ---------------------------------------------------------------------------

    def group(self, op: GroupOp, info: tuple) -> None:
        """Ops issued as one: one GEMM node, or one collective node (its members'
        sizes summed); it depends on every value its members read from outside.
        `info`: its members, the ids of what they read from outside, for collectives
        what group_collective needs, the ids of its outputs (decided once per op by
        _compile)."""
        members, inputs, collective, outputs = info
        values = self.values
        d = _union(values, inputs)
        if collective is not None:
            d = self.group_collective(op, members, d, collective)
        elif not self.comm_only:
            def make() -> Static:
                num, size, micros = 0, 0, 0.0
                for m in members:
                    c = self.op_cost(m)
                    num, size, micros = num + c.num_ops, size + c.tensor_size, micros + c.micros
                gemms = sum(isinstance(m, EinsumOp) for m in members)
                return _comp_static(self.label(members[0], f"einsum.x{gemms}"), _category(members[0]), num, size,
                                    micros)

            d = (self.add_node(self.static(("op", id(op), self.phase), make), d),)
        for r in outputs:
            values[r] = d

    def group_collective(self, op: GroupOp, members: list[Operation], d: tuple, info: tuple) -> tuple:
        """`info`: the members' axes, whether their group is one rank, the stream, whether
        the group has an issue point (not a `ready` bucket)."""
        axes, alone, stream, issue = info
        if alone:
            return d

        def make() -> Static:
            comm_type = _coll_type(members[0])
            size = sum(self.op_cost(m).tensor_size for m in members)
            micros = self.cost.collective_micros(COMM_KIND_NAMES[comm_type], size, self.space.group_size(axes))
            what = f"{COMM_KIND_NAMES[comm_type]}{'_bucket' if op.ready is not None else ''}.x{len(members)}"
            label = self.label(members[0], what)
            return _coll_static(label, comm_type, size, micros, ("pg", axes, None))

        static = self.static(("op", id(op), self.phase), make)
        return (self.add_node(static, d, stream=stream, issue=issue),)

    # -- communication ---------------------------------------------------------------------

    def collective(self, op: CollectiveOp, info: tuple) -> None:
        """`info`: the ids of the op's operands, its axes, its `among` coordinates,
        whether its group is one rank, its stream (decided once per op by _compile)."""
        operands, axes, among, alone, stream = info
        d = _union(self.values, operands)
        if alone:
            self.values[id(op.result)] = d
            return
        def make() -> Static:
            c = self.op_cost(op)
            return _coll_static(self.label(op), _coll_type(op), c.tensor_size, c.micros, ("pg", axes, among))

        static = self.static(("op", id(op), self.phase), make)
        nid = self.add_node(static, d, stream=stream)
        self.values[id(op.result)] = (nid,)

    def copy(self, op: OffloadOp | ReloadOp) -> None:
        """A copy on its stream (stg-offload's `"copy"`): a COMP node labelled `copy`
        (Chakra's memory nodes need a remote-memory configuration ASTRA-sim lacks by
        default) ordered on its stream and issued where the compute stream reaches it,
        not on the compute stream - the simulator runs it on the copy engine."""
        d = self.deps(op.operands)
        if self.comm_only:
            self.values[id(op.results[0])] = d
            return

        def make() -> Static:
            c = self.op_cost(op)
            return _comp_static(self.label(op), COPY_CATEGORY, 0, c.tensor_size, c.micros)

        static = self.static(("op", id(op), self.phase), make)
        self.values[id(op.results[0])] = (self.add_node(static, d, stream=stream_of(op)),)

    def copy_wait(self, op: WaitOp) -> None:
        """The compute stream waits here for the copy (stg-offload's synchronization:
        the device buffer is freed, or the reloaded state is back, only after it)."""
        d = self.deps(op.operands)
        self.barrier = tuple(sorted(set(self.barrier).union(d)))
        if op.result is not None:
            self.values[id(op.result)] = d

    def p2p(self, op: SendOp | RecvOp, operands: tuple[int, ...]) -> None:
        d = _union(self.values, operands)
        role = "send" if isinstance(op, SendOp) else "recv"
        axis, peer = op.axis.data, op.peer.value.data

        def make() -> Static:
            c = self.op_cost(op)
            kind = NodeType.COMM_SEND_NODE if role == "send" else NodeType.COMM_RECV_NODE
            attrs = encode_attr("comm_size", c.tensor_size)
            return Static(kind, self.label(op), role, max(1, round(c.micros)), 0, c.tensor_size,
                          (role, axis, peer), attrs, max(1, round(c.micros * 1000)))

        static = self.static(("op", id(op), self.phase), make)
        nid = self.add_node(static, d, stream=stream_of(op) or p2p_stream(role, axis, peer))
        self.p.node_tag[nid] = op.tag.value.data + self.tag_base * self.seq
        for r in op.results:
            self.values[id(r)] = (nid,)


# the category of a copy node (emit.py `copy`): the simulator runs it on the copy engine
COPY_CATEGORY = "copy"


def _state_slot(op: StateOp | AssignOp) -> tuple:
    """(name, parameter, layers) of the state an op reads or writes; layers None: the
    enclosing repeats' iteration, decided as the loop runs. A read and the write it
    sees have the same slot."""
    explicit = op.explicit_layer()
    layers = (explicit[0],) if explicit is not None else None
    if isinstance(op, AssignOp):
        return (*op.key, layers)
    if isinstance(op, ParamOp):
        return (op.tensor_name.data, None, layers)
    if isinstance(op, OptimizerStateOp):
        return (op.tensor_name.data, op.param.data, layers)
    if isinstance(op, InputOp):
        return ("<input>", op.tensor_name.data, ())
    return (op.name, op.tensor_name.data, layers)


def _group_inputs(op: GroupOp, members: list[Operation]) -> list[SSAValue]:
    """The values a group's members read from outside it."""
    body = op.body.block
    return [v for m in members for v in m.operands
            if not (isinstance(v.owner, Operation) and v.owner.parent_block() is body)]


def _category(op: Operation) -> str:
    from stagec.dialects.stg.cost import flop_category

    return flop_category(op)


def _comp_static(label: str, category: str, num_ops: int, size: int, micros: float) -> Static:
    attrs = encode_attr("num_ops", int(num_ops)) + encode_attr("tensor_size", int(size))
    return Static(NodeType.COMP_NODE, label, category, max(1, round(micros)), int(num_ops), int(size), None, attrs,
                  max(1, round(micros * 1000)))


def _coll_static(label: str, comm_type: CommType, size: int, micros: float, patch: tuple) -> Static:
    attrs = encode_attr("comm_type", int(comm_type)) + encode_attr("comm_size", int(size))
    return Static(NodeType.COMM_COLL_NODE, label, COMM_KIND_NAMES[comm_type], max(1, round(micros)), 0, int(size),
                  patch, attrs, max(1, round(micros * 1000)))


# -- rank classes ---------------------------------------------------------------------------


def _mesh(module: ModuleOp) -> MeshOp | None:
    return next((op for op in module.ops if isinstance(op, MeshOp)), None)


def rank_space(module: ModuleOp, env: Mapping[str, int]) -> RankSpace:
    mesh = _mesh(module)
    if mesh is None:
        return RankSpace.of((), ())
    sizes = []
    for axis, size in mesh.axis_sizes.items():
        try:
            sizes.append(env[axis] if axis in env else size.evaluate(env))
        except SymbolicError as error:
            raise EmitError(f"mesh axis '{axis}' has no size ({size}): {error}; bind it") from None
    return RankSpace.of(mesh.axis_names, sizes)


def _classes(module: ModuleOp, space: RankSpace, function: str | None) -> list[tuple[func.FuncOp, list[int]]]:
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if function is not None:
        chosen = [f for f in funcs if f.sym_name.data == function]
        if not chosen:
            raise EmitError(f"no function @{function} in the module")
        return [(chosen[0], list(range(space.world)))]
    staged = [f for f in funcs if isinstance(f.attributes.get("stg.stage"), DictionaryAttr)]
    if staged:
        out = []
        covered: set[int] = set()
        for f in staged:
            fixed = {k: v.value.data for k, v in f.attributes["stg.stage"].data.items() if isinstance(v, IntegerAttr)}
            ranks = space.ranks_where(fixed)
            out.append((f, ranks))
            covered.update(ranks)
        if len(covered) != space.world:
            raise EmitError(f"the stage functions cover {len(covered)} of the mesh's {space.world} ranks")
        return out
    by_name = {f.sym_name.data: f for f in funcs}
    for preferred in ("train_step", "forward"):
        if preferred in by_name:
            return [(by_name[preferred], list(range(space.world)))]
    if len(funcs) == 1:
        return [(funcs[0], list(range(space.world)))]
    raise EmitError("the module has no @train_step, stage functions or single function to emit")


def _check_local_sizes(module: ModuleOp, env: Mapping[str, int]) -> None:
    """Every tensor's local extents are whole numbers under `env` - the rule the
    accounting holds (`stagec stats` rejects the same sizes with the same message): a
    trace of truncated shards is no run's."""
    from stagec.passes.analysis.liveness import AccountingError, Evaluator

    evaluator = Evaluator(env)
    # program order, so the first offender is named; deduplicated by identity (hashing
    # every value's type would cost more than checking it)
    types = {id(v.type): v.type for op in module.walk()
             for v in (*(a for r in op.regions for b in r.blocks for a in b.args), *op.results)}
    try:
        for ty in types.values():
            evaluator.device_bytes(ty)
    except AccountingError as error:
        raise EmitError(str(error)) from None


def _tag_base(module: ModuleOp) -> int:
    tags = [op.tag.value.data for op in module.walk() if isinstance(op, (SendOp, RecvOp))]
    return max(tags, default=-1) + 1


def module_env(module: ModuleOp, bindings: Mapping[str, int] | None) -> dict[str, int]:
    from stagec.passes.analysis.accounting import module_bindings

    try:
        return module_bindings(module, bindings)
    except Exception as error:  # noqa: BLE001 - AccountingError: a mesh size that does not evaluate
        raise EmitError(str(error)) from None


def build_programs(module: ModuleOp, bindings: Mapping[str, int] | None = None, *, cost=None,
                   options: EmitOptions = EmitOptions(), function: str | None = None) -> tuple[list[Program], RankSpace]:
    """Expand every rank class of `module` into its node stream (module doc)."""
    if cost is None:
        from stagec.runtime.cost import CostModel

        cost = CostModel("h100-sxm")
    if options.iterations < 1:
        raise EmitError(f"iterations must be at least 1, not {options.iterations}")
    env = module_env(module, bindings)
    space = rank_space(module, env)
    if space.world == 0:
        space = RankSpace.of((), ())
    tag_base = _tag_base(module)
    programs = []
    classes = _classes(module, space, function)
    _check_local_sizes(module, env)
    for fn, ranks in classes:
        program = Program(fn.sym_name.data, ranks)
        expander = _Expander(module, env, cost, options, space, program, tag_base)
        for iteration in range(options.iterations):
            expander.run_function(fn, iteration)
        program.positions = (expander.position + 1) // options.iterations
        programs.append(program)
    return programs, space


# -- encoding and writing -------------------------------------------------------------------


@dataclass
class _Encoded:
    """A class's trace as bytes runs and per-rank patch points."""

    ranks: list[int]
    pieces: list  # bytes, or (body bytes, patch index)
    patches: list[tuple]  # the distinct patch keys


def encode_program(program: Program) -> _Encoded:
    statics = program.statics
    contexts = program.contexts
    names = [s.label.encode() for s in statics]
    ctx_bytes = [("@" + c).encode() if c else b"" for c in contexts]
    patch_index: dict[tuple, int] = {}
    patches: list[tuple] = []
    pieces: list = []
    run = bytearray(frame(encode_metadata()))
    tags = program.node_tag
    for nid, (s, data, ctrl, ctx) in enumerate(
        zip(program.node_static, program.node_data, program.node_ctrl, program.node_ctx)
    ):
        st = statics[s]
        name = (names[s] + ctx_bytes[ctx]).decode()
        body = encode_node_head(nid, name, st.type, data, ctrl, st.duration) + st.attrs
        tag = tags.get(nid)
        if tag is not None:
            body += encode_attr("comm_tag", tag)
        if st.patch is None:
            run += frame(body)
            continue
        if run:
            pieces.append(bytes(run))
            run = bytearray()
        index = patch_index.get(st.patch)
        if index is None:
            index = patch_index[st.patch] = len(patches)
            patches.append(st.patch)
        pieces.append((body, index))
    if run:
        pieces.append(bytes(run))
    return _Encoded(program.ranks, pieces, patches)


def _patch_bytes(space: RankSpace, rank: int, patch: tuple) -> bytes:
    kind = patch[0]
    if kind == "pg":
        _, axes, among = patch
        return encode_attr("pg_name", str(space.group_id(rank, axes, among)))
    _, axis, peer = patch
    other = space.peer(rank, axis, peer)
    if kind == "send":
        return encode_attr("comm_src", rank) + encode_attr("comm_dst", other)
    return encode_attr("comm_src", other) + encode_attr("comm_dst", rank)


def rank_bytes(encoded: _Encoded, table: Sequence[bytes]) -> bytes:
    parts: list[bytes] = []
    append = parts.append
    for piece in encoded.pieces:
        if piece.__class__ is bytes:
            append(piece)
        else:
            body, index = piece
            extra = table[index]
            append(encode_varint(len(body) + len(extra)))
            append(body)
            append(extra)
    return b"".join(parts)


def write_atomic(path: str, data: bytes) -> None:
    """Write `data` under `path` whole or not at all (temporary file + rename)."""
    temporary = f"{os.path.join(os.path.dirname(path), '.' + os.path.basename(path))}.tmp-{os.getpid()}"
    try:
        with open(temporary, "wb") as stream:
            stream.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


# Worker state, inherited by forked writer processes.
_JOB: dict = {}


def _write_ranks(ranks: Sequence[int]) -> list[tuple[int, int, str]]:
    """Write the ranks' files into the staging directory; (rank, bytes, digest) of
    each, for the rank-class file."""
    import hashlib

    encoded_by_rank, space, out_dir, prefix = _JOB["lookup"], _JOB["space"], _JOB["dir"], _JOB["prefix"]
    cache: dict[tuple, bytes] = {}
    written = []
    for rank in ranks:
        encoded = encoded_by_rank[rank]
        table = tuple(_patch_bytes(space, rank, p) for p in encoded.patches)
        key = (id(encoded), table)
        data = cache.get(key)
        if data is None:
            data = rank_bytes(encoded, table)
            cache.clear()
            cache[key] = data
        # the staging directory is the temporary name: each file is written once, in place
        path = os.path.join(out_dir, f"{prefix}.{rank}.et")
        try:
            with open(path, "wb") as stream:
                stream.write(data)
        except OSError as error:  # a failed write() names no file: name it for the message
            raise OSError(error.errno, error.strerror, path) from None
        written.append((rank, len(data), hashlib.blake2b(data, digest_size=16).hexdigest()))
    return written


@dataclass
class EmitReport:
    directory: str
    prefix: str
    world: int
    programs: list[Program]
    groups: dict[int, list[int]]
    files: int = 0

    def nodes_per_rank(self) -> dict[str, int]:
        return {p.name: len(p) for p in self.programs}


def estimate_output(encoded: Sequence[_Encoded], space: RankSpace, out_dir: str, json_dumps: bool) -> OutputEstimate:
    """The files and bytes emit_traces will write (OutputEstimate)."""
    world = max(space.world, 1)
    total = 0
    pg_patches = 0
    for enc in encoded:
        rank = enc.ranks[0]
        data = rank_bytes(enc, [_patch_bytes(space, rank, p) for p in enc.patches])
        total += len(data) * len(enc.ranks)
        if json_dumps:
            total += len(_json_dump(_decoded(data), rank)) * len(enc.ranks)
        pg_patches = max(pg_patches, sum(1 for p in enc.patches if p[0] == "pg"))
        # the rank-class file: a row of patch values per rank
        total += (12 + 8 * len(enc.patches)) * len(enc.ranks)
    total += world * 56  # the rank-class file's size and digest per rank
    total += world * 8 * pg_patches  # comm_group.json: each rank once per group it is in
    files = world * (2 if json_dumps else 1) + 2
    return OutputEstimate(out_dir, files, total)


def _decoded(data: bytes):
    from stagec.runtime.chakra.wire import decode_trace

    return decode_trace(data)


def emit_traces(module: ModuleOp, out_dir: str, bindings: Mapping[str, int] | None = None, *, cost=None,
                options: EmitOptions = EmitOptions(), progress: Callable[[int, int], None] | None = None,
                programs: tuple[list[Program], RankSpace] | None = None, refuse_previous: bool = False,
                json_dumps: bool = False, confirm: Callable[[OutputEstimate], None] | None = None) -> EmitReport:
    """Write `<prefix>.<rank>.et` for every rank, `comm_group.json` and `<prefix>.ranks.json`
    (and with `json_dumps` each trace decoded, `<prefix>.<rank>.json`) into `out_dir`.

    The result appears whole or not at all: the files are written into a staging
    directory that becomes the result when every one is written (`Staging`); an
    error, Ctrl-C or SIGTERM removes it and leaves `out_dir` as it was. `out_dir` may
    hold other files, which stay; a previous job's traces there (`previous_output`)
    are replaced - deleted when the new ones move in, so that none is left beside
    them - or, with `refuse_previous`, a PreviousJobError. `confirm` sees the OutputEstimate
    before anything is written and may raise to stop. A write that fails is an
    OutputError naming the file and the system's reason."""
    if programs is None:
        programs = build_programs(module, bindings, cost=cost, options=options)
    progs, space = programs
    if os.path.isdir(out_dir):
        previous, others = previous_output(out_dir)
        if previous and refuse_previous:
            raise PreviousJobError(out_dir, previous)
    else:
        previous = []
    encoded = [encode_program(p) for p in progs]
    if confirm is not None:
        confirm(estimate_output(encoded, space, out_dir, json_dumps))
    lookup: dict[int, _Encoded] = {}
    for enc in encoded:
        for rank in enc.ranks:
            lookup[rank] = enc
            for patch in enc.patches:  # number every group before the writers fork
                if patch[0] == "pg":
                    space.group_id(rank, patch[1], patch[2])
    world = max(space.world, 1)
    try:
        staging = Staging(out_dir)
    except OSError as error:
        path = error.filename
        if not path or is_staging(os.path.basename(path)):
            path = out_dir  # the staging directory stands for --out
        raise OutputError(f"cannot create {path}: {error.strerror or error}") from None
    try:
        done, files = _write_all(staging.path, options, lookup, space, world, progress)
        from stagec.runtime.chakra.wire import write_comm_groups

        groups = space.groups()
        write_comm_groups(os.path.join(staging.path, COMM_GROUP_FILE), groups)
        write_rank_classes(staging.path, options.prefix, world, encoded, space, files)
        if json_dumps:
            write_json_dumps(staging.path, options.prefix, world)
        staging.commit(previous)
    except OSError as error:
        staging.discard()
        raise OutputError(f"cannot write {staging.shown(error.filename)}: {error.strerror or error}") from None
    except BaseException:
        staging.discard()
        raise
    return EmitReport(out_dir, options.prefix, world, progs, groups, done)


def _write_all(directory: str, options: EmitOptions, lookup, space: RankSpace, world: int,
               progress) -> tuple[int, dict[int, tuple[int, str]]]:
    """Every rank's file, by a pool of writers for large jobs (runtime/workers.py: they
    ignore Ctrl-C and die with this process); (files written, rank -> (bytes, digest))."""
    _JOB.update(lookup=lookup, space=space, dir=directory, prefix=options.prefix)
    chunks = [list(range(i, min(i + 64, world))) for i in range(0, world, 64)]
    done = 0
    files: dict[int, tuple[int, str]] = {}
    workers = options.workers or min(8, os.cpu_count() or 1)
    try:
        if workers > 1 and world >= 256:
            from stagec.runtime.workers import quiet_pool

            with quiet_pool(workers) as pool:
                for written in pool.imap_unordered(_write_ranks, chunks):
                    done += len(written)
                    files.update((r, (n, d)) for r, n, d in written)
                    if progress:
                        progress(done, world)
        else:
            for chunk in chunks:
                written = _write_ranks(chunk)
                done += len(written)
                files.update((r, (n, d)) for r, n, d in written)
                if progress:
                    progress(done, world)
    finally:
        _JOB.clear()
    return done, files


RANK_CLASSES = "{prefix}.ranks.json"


def write_rank_classes(out_dir: str, prefix: str, world: int, encoded: Sequence[_Encoded], space: RankSpace,
                       files: Mapping[int, tuple[int, str]]) -> None:
    """`<prefix>.ranks.json`: which ranks' files are one program with other groups and
    peers patched in (a class, its patch points and each rank's values: a group's
    comm_group.json key, a send's or recv's peer), with each file's size and BLAKE2b
    digest, so a reader that finds the files unchanged can decode one file per class
    (runtime/sim/from_chakra.py). ASTRA-sim does not read it."""
    import json

    classes = []
    for enc in encoded:
        values = {}
        for rank in enc.ranks:
            row = []
            for patch in enc.patches:
                if patch[0] == "pg":
                    row.append(space.group_id(rank, patch[1], patch[2]))
                else:
                    row.append(space.peer(rank, patch[1], patch[2]))
            values[str(rank)] = row
        classes.append({"ranks": list(enc.ranks), "patches": [p[0] for p in enc.patches], "values": values})
    doc = {
        "format": "stagec rank classes", "version": 1, "prefix": prefix, "world": world,
        "classes": classes, "files": {str(r): list(files[r]) for r in sorted(files)},
    }
    write_atomic(os.path.join(out_dir, RANK_CLASSES.format(prefix=prefix)),
                 (json.dumps(doc, separators=(",", ":")) + "\n").encode())


def write_json_dumps(out_dir: str, prefix: str, world: int) -> None:
    """`<prefix>.<rank>.json` beside each trace: the file decoded, for people to read."""
    from stagec.runtime.chakra.wire import read_trace

    for rank in range(world):
        trace = read_trace(os.path.join(out_dir, f"{prefix}.{rank}.et"))
        write_atomic(os.path.join(out_dir, f"{prefix}.{rank}.json"), _json_dump(trace, rank))


def _json_dump(trace, rank: int) -> bytes:
    import json

    nodes = [
        {
            "id": n.id, "name": n.name, "type": NodeType(n.type).name,
            "data_deps": list(n.data_deps), "ctrl_deps": list(n.ctrl_deps),
            "duration_micros": n.duration_micros, "attrs": {a.name: a.value for a in n.attrs},
        }
        for n in trace.nodes
    ]
    doc = {"rank": rank, "version": trace.metadata.version, "nodes": nodes}
    return (json.dumps(doc, indent=1) + "\n").encode()
