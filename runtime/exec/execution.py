"""One real rank executing its program: the interpreter's op semantics on this rank's
locals, communication and memory through csrc.

`RankExecution` is the interpreter's `Execution` (runtime/interpreter) placed on one
rank: every SSA value is still a `PerRank` list, holding only this rank's local, so
each compute op runs the interpreter's own implementation (compute.py, model_ops.py,
training.py, ...) once, on this rank. The ops whose meaning spans ranks or memory are
lowered here instead, in the scheduled IR's order (docs/scheduled-ir.md):

- collectives (comm.py) on the communicator of their axes, issued where they stand,
  asynchronously; `stg.wait` waits for the handle. A coalesced `stg.group` of
  collectives is one csrc group call; its views of the results run once it is waited.
  A `ready` group (a gradient bucket) is issued at its place, when its gradients are
  already final.
- stg.send / stg.recv on the world communicator (the peer's world rank, the op's tag);
  sends are buffered - their handles complete by the end of the step - as the
  interpreter's mailbox is; stg.all_reduce_stages is sends and receives adding up the
  listed stages in the listed order, as the interpreter does.
- stg.param / stg.optimizer_state / stg.assign on this rank's shards (state.py), and
  stg.input on the step's batch (cut to this rank's block).
- stg.release drops the value (its buffer is freed when nothing else holds it);
  stg.offload / stg.reload copy through the device's offloader: csrc's HostOffloader
  (a copy thread) on the CPU, its CudaOffloader (a copy stream) on a GPU.

The rank's `device` (device.py) says where its tensors live and how the compute waits
for a handle; every tensor made here is made on it. Point-to-point messages go over
the MPI world, through host memory on a GPU rank (device.py says why).

Every op records what the rank is doing (`activity`) for the failure messages, and
`executed` counts, per step, the communication and memory ops the rank ran (a
group's members one by one) and the bytes it offloaded: what `stagec run --json`
reports of rank 0, so a test sees that the passes' ops really ran.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable
from typing import Any

import torch
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, SSAValue

from stagec.dialects.stg.attributes import DistributedTensorType, TokenType
from stagec.dialects.stg.comm import (
    AllGatherOp,
    AllReduceOp,
    AllReduceStagesOp,
    AllToAllOp,
    BroadcastOp,
    CollectiveOp,
    LocalSliceOp,
    RecvOp,
    ReduceScatterOp,
    ReshardOp,
    SendOp,
)
from stagec.dialects.stg.model_ops import CrossEntropyOp
from stagec.dialects.stg.memory import OffloadOp, ReleaseOp, ReloadOp, WaitOp
from stagec.dialects.stg.schedule import GroupOp
from stagec.dialects.stg.state import AssignOp, InputOp, OptimizerStateOp, ParamOp
from stagec.dialects.stg.structure import YieldOp
from stagec.runtime.exec.comm import Lowering, Pending, done, wait
from stagec.runtime.exec.device import RankDevice
from stagec.runtime.exec.state import LocalState
from stagec.runtime.interpreter.collectives import Mailbox
from stagec.runtime.interpreter.errors import InterpreterError, describe_op
from stagec.runtime.interpreter.interpreter import Execution, Interpreter
from stagec.runtime.interpreter.model_ops import _cross_entropy as model_cross_entropy
from stagec.runtime.interpreter.registry import implementation_of
from stagec.runtime.interpreter.state import StateStore
from stagec.runtime.interpreter.tensor_types import torch_dtype
from stagec.runtime.interpreter.values import Layout, Placement, Token, shard

# stg.all_reduce_stages' messages: a tag no stg.send uses (theirs are small)
ALL_REDUCE_STAGES_TAG = 30000
# the ops `executed` counts: communication and memory (collectives, waits, releases,
# host copies); "offloaded bytes" counts the bytes stg.offload copied to the host
COUNTED = frozenset({"stg.all_gather", "stg.reduce_scatter", "stg.all_reduce", "stg.all_to_all", "stg.broadcast",
                     "stg.reshard", "stg.send", "stg.recv", "stg.all_reduce_stages", "stg.wait", "stg.release",
                     "stg.offload", "stg.reload"})


class RankPlacement(Placement):
    """The ranks of a program (a pipeline stage's, or all), of which this process runs one."""

    def __init__(self, mesh, fixed, rank: int):
        super().__init__(mesh, fixed)
        if rank not in self.ranks:
            raise InterpreterError(f"rank {rank} does not run the program on {self}")
        self.all_ranks = self.ranks
        self.ranks = [rank]


class HostValue:
    """A tensor offloaded to host memory: csrc's HostCopy and what it held."""

    def __init__(self, copy, shape, dtype):
        self.copy, self.shape, self.dtype = copy, shape, dtype


_OVERRIDES: dict[type[Operation], Callable] = {}


def lowers(*classes: type[Operation]):
    def register(fn):
        for cls in classes:
            _OVERRIDES[cls] = fn
        return fn

    return register


def _lowered(op_class: type[Operation]) -> Callable | None:
    for cls in op_class.__mro__:
        if cls in _OVERRIDES:
            return _OVERRIDES[cls]
    return None


class RankExecution(Execution):
    """Runs a function of the module on this rank (module doc)."""

    def __init__(self, interpreter: Interpreter, placement: RankPlacement, state: LocalState,
                 lowering: Lowering, world, offloader=None, *, check: bool = False,
                 activity: Callable[[str], None] | None = None):
        super().__init__(interpreter, StateStore(), placement, Mailbox())
        self.device: RankDevice = lowering.device
        # ops that make a tensor from nothing (fills, masks) make it on the device
        self.ranks = [dataclasses.replace(r, device=self.device.torch) for r in self.ranks]
        self.rank = placement.ranks[0]
        self.state = state
        self.lowering = lowering
        self.world = world
        self.offloader = offloader
        self.check = check
        self.inputs: dict[str, torch.Tensor] = {}
        self.sends: list = []
        self.step = 0
        self._activity = activity
        self._described: dict[Operation, str] = {}
        self._impls: dict[type[Operation], Callable] = {}
        self.profiler = None  # profiler.py's RunProfiler under `stagec run --profile`
        self.executed: Counter[str] = Counter()  # this step's (module doc)

    # -- running -----------------------------------------------------------------------
    def run_function(self, func: FuncOp, inputs: dict[str, torch.Tensor], step: int) -> list[Any]:
        """One call of `func` (a whole training step) on this rank's locals; returns its
        results (PerRank lists). Buffered sends are complete when it returns."""
        self.inputs, self.step = inputs, step
        self.values, self.released, self.layers = {}, {}, []
        self.executed = Counter()
        with torch.no_grad():
            results = self.run_block(func.body.block, [])
        self.note("completing sends")
        for work in self.sends:
            wait(work)
        self.sends.clear()
        return results

    def note(self, what: str) -> None:
        if self._activity is not None:
            self._activity(f"step {self.step}: {what}")

    def release(self, ssa: SSAValue, op: Operation) -> None:
        self.values.pop(ssa, None)
        self.released[ssa] = op

    def run_op(self, op: Operation) -> None:
        if self.profiler is not None:
            self.profiler.measure(op, self._run_op)
        else:
            self._run_op(op)

    def _run_op(self, op: Operation) -> None:
        impl = self._impls.get(type(op))
        if impl is None:
            impl = _lowered(type(op)) or implementation_of(op)
            if impl is None:
                raise InterpreterError(f"{describe_op(op)}: the runtime has no implementation of this op")
            self._impls[type(op)] = impl
        if op.name in COUNTED:
            self.executed[op.name] += 1
        if self._activity is not None:
            text = self._described.get(op)
            if text is None:
                text = self._described[op] = describe_op(op)
            self._activity(f"step {self.step}: {text}{self._where()}")
        try:
            results = impl(op, [self.value(v) for v in op.operands], self)
            for i, (ssa, value) in enumerate(zip(op.results, results, strict=True)):
                if self.check:
                    self._check(ssa.type, value, f"result #{i}")
                self.bind(ssa, value)
        except InterpreterError as e:
            if e.located:
                raise
            raise InterpreterError(f"{describe_op(op)}{self._where()}: {e}", located=True) from e
        except (RuntimeError, IndexError, ValueError, TypeError) as e:
            raise InterpreterError(f"{describe_op(op)}{self._where()}: {type(e).__name__}: {e}", located=True) from e

    def _check(self, ty, value, what: str) -> None:
        if isinstance(value, Token) and isinstance(value.payload, Pending):
            return
        super()._check(ty, value, what)

    # -- values of this rank -------------------------------------------------------------
    def local(self, value) -> torch.Tensor:
        return value[self.rank]

    def wrap(self, local) -> list:
        out: list = [None] * self.mesh.num_ranks
        out[self.rank] = local
        return out


def _result(op: Operation, ex: RankExecution, pending: Pending):
    """A Token carrying the pending value for an async op; the value itself otherwise."""
    ty = op.results[0].type
    if isinstance(ty, TokenType):
        return [Token(pending)]
    return [ex.wrap(pending.result())]


def _value_type(ty):
    return ty.value_type if isinstance(ty, TokenType) else ty


# -- collectives ------------------------------------------------------------------------


def _issue(op: CollectiveOp, local: torch.Tensor, ex: RankExecution, calls: list | None = None) -> Pending:
    if isinstance(op, BroadcastOp):
        return ex.lowering.broadcast(local, op.axis_names, op.root.value.data, calls)
    dst = _value_type(op.results[0].type)
    if isinstance(op, ReshardOp):
        return ex.lowering.regroup(local, Layout.of(op.input.type), Layout.of(dst), op.mesh_axes(), calls=calls)
    maximum = isinstance(op, AllReduceOp) and op.maximum is not None
    return ex.lowering.regroup(local, Layout.of(op.input.type), Layout.of(dst), op.axis_names,
                               maximum=maximum, calls=calls)


@lowers(AllGatherOp, ReduceScatterOp, AllReduceOp, AllToAllOp, BroadcastOp, ReshardOp)
def collective(op, operands, ex: RankExecution):
    return _result(op, ex, _issue(op, ex.local(operands[0]), ex))


@lowers(LocalSliceOp)
def local_slice(op, operands, ex: RankExecution):
    """No communication: every member holds the whole; this rank keeps its block."""
    dst = Layout.of(_value_type(op.results[0].type)).within(op.axis_names)
    return _result(op, ex, done(shard(ex.local(operands[0]), dst, ex.mesh, ex.rank)))


@lowers(WaitOp)
def wait_op(op: WaitOp, operands, ex: RankExecution):
    (token,) = operands
    payload = token.payload
    if isinstance(payload, Pending):
        value = payload.result()
        payload = value if isinstance(value, list) else ex.wrap(value)
    return [] if op.result is None else [payload]


@lowers(GroupOp)
def group(op: GroupOp, operands, ex: RankExecution):
    """A coalesced collective is one csrc group call; a compute group (one kernel) is
    the interpreter's. Ops of the body before the collectives (state reads, views of
    their inputs) run now; the ops after them (views of their results) once waited."""
    if op.collective_kind() is None:
        return implementation_of(op)(op, operands, ex)
    kind = op.collective_kind()
    body = list(op.body.block.ops)
    yielded = body[-1]
    assert isinstance(yielded, YieldOp)
    calls: list = []
    results: dict[SSAValue, Pending] = {}
    later: list[Operation] = []
    for inner in body[:-1]:
        if isinstance(inner, CollectiveOp) and not isinstance(inner, AllReduceStagesOp):
            results[inner.results[0]] = _issue(inner, ex.local(ex.value(inner.input)), ex, calls)
            ex.executed[inner.name] += 1
        elif any(v in results or any(v is r for o in later for r in o.results) for v in inner.operands):
            later.append(inner)
        else:
            ex.run_op(inner)
    if issubclass(kind, AllReduceStagesOp):
        raise InterpreterError("a group of stg.all_reduce_stages is not lowered yet: run it ungrouped")
    members = [inner for inner in body[:-1] if inner.results and inner.results[0] in results]
    group_axes = members[0].axis_names if not isinstance(members[0], ReshardOp) else members[0].mesh_axes()
    comm_group = ex.lowering.comms.group(group_axes)
    if calls:
        ops_module = ex.device.ops()
        work = comm_group.comm.group([getattr(ops_module, name)(*args) for name, args in calls])
    else:
        work = None  # one-rank groups: nothing to exchange

    def finish() -> list:
        for ssa, pending in results.items():
            # the members' handles are the group's: finish each without waiting again
            pending._work = None
            ex.bind(ssa, ex.wrap(pending.result()))
        for inner in later:
            ex.run_op(inner)
        return [ex.value(v) for v in yielded.operands]

    whole = Pending(work, finish, ex.device.wait)
    if op.is_async is not None:
        return [Token(_Member(whole, i)) for i in range(len(yielded.operands))]
    return whole.result()


class _Member(Pending):
    """One yielded value of a group: waiting for it waits for the group."""

    def __init__(self, whole: Pending, index: int):
        self._whole, self._index = whole, index

    def result(self):
        return self._whole.result()[self._index]


@lowers(CrossEntropyOp)
def cross_entropy(op: CrossEntropyOp, operands, ex: RankExecution):
    """Over a split vocab (the one a stg.vjp recomputes for its gradient; the forward's
    is Megatron's, stg-vocab-parallel-cross-entropy), each rank needs the other shards'
    logits as constants, as the interpreter gives them: an all-gather of the shards,
    this rank's own kept live so that the vjp differentiates it."""
    vocab_axes = op.logits.type.splits[-1]
    if not vocab_axes:
        return implementation_of(op)(op, operands, ex)
    logits, labels = (ex.local(v) for v in operands)
    group = ex.lowering.comms.group(vocab_axes)
    shards = torch.empty((group.size, *logits.shape), dtype=logits.dtype, device=logits.device)
    ex.device.wait(group.comm.all_gather(logits.detach().contiguous().view(-1), shards.view(-1)))
    pieces: list = [None] * group.size
    for p, member in enumerate(group.members):
        pieces[ex.mesh.index_over(member, tuple(vocab_axes))] = logits if member == ex.rank else shards[p]
    whole = torch.cat(pieces, -1)
    return [ex.wrap(model_cross_entropy(op, ex.ranks[0], whole, labels))]


# -- point to point ---------------------------------------------------------------------


def _peer(op, ex: RankExecution) -> int:
    mesh, axis, peer = ex.mesh, op.axis.data, op.peer.value.data
    if not 0 <= peer < mesh.size(axis):
        raise InterpreterError(f"peer {peer} is outside mesh axis '{axis}' ({mesh})")
    return mesh.rank_of({**mesh.coords[ex.rank], axis: peer})


@lowers(SendOp)
def send(op: SendOp, operands, ex: RankExecution):
    tensor = ex.device.to_host(ex.local(operands[0]))
    ex.sends.append(ex.world.send(tensor, _peer(op, ex), op.tag.value.data))
    return [Token(None)] if op.token is not None else []


@lowers(RecvOp)
def recv(op: RecvOp, operands, ex: RankExecution):
    ty = _value_type(op.results[0].type)
    # the MPI world receives into host memory; a GPU rank's value moves to its device
    out = torch.empty(ex.sizes.local_shape(ty), dtype=torch_dtype(ty.element_type), device="cpu")
    work = ex.world.recv(out, _peer(op, ex), op.tag.value.data)
    return _result(op, ex, Pending(work, lambda: ex.device.from_host(out)))


@lowers(AllReduceStagesOp)
def all_reduce_stages(op: AllReduceStagesOp, operands, ex: RankExecution):
    (axis,), among, mesh = op.axis_names, op.coordinates, ex.mesh
    mine = mesh.coord(ex.rank, axis)
    if mine not in among:
        raise InterpreterError(f"rank {ex.rank} ({axis} = {mine}) is not among the stages {list(among)}")
    local = ex.device.to_host(ex.local(operands[0]))  # over the MPI world (module doc)
    at = {c: mesh.rank_of({**mesh.coords[ex.rank], axis: c}) for c in among}
    sends = [ex.world.send(local, at[c], ALL_REDUCE_STAGES_TAG) for c in among if c != mine]
    parts = {}
    for c in among:
        if c != mine:
            parts[c] = torch.empty_like(local)
            wait(ex.world.recv(parts[c], at[c], ALL_REDUCE_STAGES_TAG))
    for work in sends:
        wait(work)
    total = None
    for c in among:
        part = local if c == mine else parts[c]
        total = part if total is None else total + part
    return _result(op, ex, done(ex.device.from_host(total)))


# -- memory -----------------------------------------------------------------------------


@lowers(ReleaseOp)
def release(op: ReleaseOp, operands, ex: RankExecution):
    ex.release(op.input, op)
    return []


@lowers(OffloadOp)
def offload(op: OffloadOp, operands, ex: RankExecution):
    local = ex.local(operands[0]).contiguous()
    copy, work = ex.offloader.offload(local)
    ex.executed["offloaded bytes"] += local.numel() * local.element_size()
    host = HostValue(copy, tuple(local.shape), local.dtype)
    return _result(op, ex, Pending(work, lambda: host, ex.device.wait))


@lowers(ReloadOp)
def reload(op: ReloadOp, operands, ex: RankExecution):
    host: HostValue = ex.local(operands[0])
    out = torch.empty(host.shape, dtype=host.dtype, device=ex.device.torch)
    work = ex.offloader.reload(host.copy, out)
    return _result(op, ex, Pending(work, lambda: out, ex.device.wait))


# -- state ------------------------------------------------------------------------------


def _layers(op, ex: RankExecution) -> list[tuple[int, int]]:
    explicit = op.explicit_layer()
    return [explicit] if explicit is not None else ex.layers


@lowers(ParamOp, OptimizerStateOp)
def read_state(op, operands, ex: RankExecution):
    ty: DistributedTensorType = op.result.type
    layers = _layers(op, ex)
    table = "params" if isinstance(op, ParamOp) else "states"
    key = op.tensor_name.data if table == "params" else (op.tensor_name.data, op.param.data)
    local = ex.state.read(table, key, ty, ex.sizes, layers)
    return [ex.wrap(local)]


@lowers(AssignOp)
def assign(op: AssignOp, operands, ex: RankExecution):
    name, param = op.key
    table, key = ("params", name) if param is None else ("states", (name, param))
    ex.state.write(table, key, ex.local(operands[0]), Layout.of(op.value.type), _layers(op, ex))
    return []


@lowers(InputOp)
def read_input(op: InputOp, operands, ex: RankExecution):
    name = op.tensor_name.data
    if name not in ex.inputs:
        raise InterpreterError(f'the data loader gives no input "{name}" (it gives {", ".join(sorted(ex.inputs))})')
    ty = op.result.type
    value = ex.inputs[name]
    layers = _layers(op, ex)
    if layers and tuple(value.shape) != ex.sizes.global_shape(ty):
        value = value[tuple(i for i, _ in layers)]
    return [ex.wrap(shard(value, Layout.of(ty), ex.mesh, ex.rank))]

