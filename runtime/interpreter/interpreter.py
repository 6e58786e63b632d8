"""The interpreter: binds a module's symbols and mesh, and runs its functions.

`Interpreter` holds what does not change between runs (the simulated mesh, the
symbol bindings). A run executes a function on a placement - every rank, or the ranks
of one pipeline stage - as an `Execution`, which holds the SSA values and the layer
indices of the enclosing stg.repeats and runs ops in program order on all its ranks
at once, checking each result against its type. Functions placed on different ranks
run side by side in threads and exchange messages through one Mailbox (a message
nobody receives by the end is an error); each sees its own writes to the state
store, which takes them all when the run ends (state.py).

`run_stages` runs a pipelined module (docs/pipeline.md): every function marked
`stg.stage = {pp = k}` on the ranks of its stage. stg.all_reduce_stages, the sum of a
tied weight's partial gradients over the stages holding it, meets its peers through
the same Mailbox (it lives here, with the program placement it depends on).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import torch
from xdsl.dialects.builtin import DictionaryAttr, ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from stagec.dialects.stg.attributes import DistributedTensorType, TokenType
from stagec.dialects.stg.config import ConfigError, config_bindings
from stagec.dialects.stg.mesh import MeshOp
from stagec.dialects.stg.structure import YieldOp
from stagec.runtime.interpreter import (  # noqa: F401  (each registers its ops)
    collectives,
    compute,
    inference,
    memory,
    model_ops,
    shape_ops,
    state,
    structure,
    training,
)
from stagec.runtime.interpreter.collectives import Mailbox
from stagec.runtime.interpreter.errors import InterpreterError, describe_op
from stagec.runtime.interpreter.registry import Rank, implementation_of
from stagec.runtime.interpreter.state import StateStore, StoreWrites, merge_writes
from stagec.runtime.interpreter.tensor_types import Sizes, check_value
from stagec.runtime.interpreter.values import (
    Layout,
    PerRank,
    Placement,
    SimulatedMesh,
    Token,
    assemble_global,
    shard_global,
)


def _simulated_mesh(module: ModuleOp, env: dict[str, int]) -> SimulatedMesh:
    meshes = [op for op in module.ops if isinstance(op, MeshOp)]
    if not meshes:
        return SimulatedMesh()
    mesh = meshes[0]
    for other in meshes[1:]:
        if other.axis_sizes != mesh.axis_sizes:
            raise InterpreterError(
                f"the interpreter simulates one mesh, but the module declares @{mesh.sym_name.data} "
                f"and @{other.sym_name.data} with different axes"
            )
    sizes = []
    for axis, size in mesh.axis_sizes.items():
        if not size.symbols <= env.keys():
            raise InterpreterError(
                f"mesh @{mesh.sym_name.data} axis '{axis}' has no size: give it in "
                f"Interpreter(module, bindings={{'{axis}': ...}})"
            )
        value = size.evaluate(env)
        if env.get(axis, value) != value:
            raise InterpreterError(
                f"mesh @{mesh.sym_name.data} declares axis '{axis}' = {value}, but the bindings say {env[axis]}"
            )
        if value < 1:
            raise InterpreterError(f"mesh axis '{axis}' must have a positive size, not {value}")
        sizes.append(value)
    return SimulatedMesh(mesh.axis_names, sizes)


class Interpreter:
    """Runs the functions of a stg module numerically (see the package docstring).

    `bindings` gives symbol values (B, S, symbolic mesh axis sizes, ...); the module's
    `stg.config` dictionary is merged under them.
    """

    def __init__(self, module: ModuleOp, bindings: Mapping[str, int] | None = None, *, verify: bool = True):
        if verify:
            try:
                module.verify()
            except VerifyException as e:
                raise InterpreterError(f"the module does not verify: {e}") from e
        self.module = module
        try:
            env = {**config_bindings(module), **(bindings or {})}
        except ConfigError as e:
            raise InterpreterError(str(e)) from None
        self.mesh = _simulated_mesh(module, env)
        env.update(self.mesh.sizes)
        self.sizes = Sizes(env)

    def function(self, name: str) -> FuncOp:
        for op in self.module.ops:
            if isinstance(op, FuncOp) and op.sym_name.data == name:
                if not op.body.blocks:
                    raise InterpreterError(f"@{name} is a declaration without a body")
                return op
        names = [op.sym_name.data for op in self.module.ops if isinstance(op, FuncOp)]
        raise InterpreterError(f"the module has no function @{name} (it has {', '.join('@' + n for n in names) or 'none'})")

    def run(
        self, name: str, store: StateStore | None = None, args: Sequence[torch.Tensor | PerRank] = ()
    ) -> list[torch.Tensor]:
        """Runs @name on every rank and returns its results as global tensors: split
        dims concatenated, partial sums summed. An argument is a global tensor (sharded
        by its type) or a list of every rank's local; stg.assign updates `store`."""
        return self.run_programs({name: {}}, store, {name: args})[name]

    def run_per_rank(
        self, name: str, store: StateStore | None = None, args: Sequence[torch.Tensor | PerRank] = ()
    ) -> list[PerRank | Token]:
        """Runs @name on every rank and returns its results as every rank's locals."""
        return self.run_programs({name: {}}, store, {name: args}, per_rank=True)[name]

    def run_programs(
        self,
        programs: Mapping[str, Mapping[str, int]],
        store: StateStore | None = None,
        args: Mapping[str, Sequence[torch.Tensor | PerRank]] | None = None,
        *,
        per_rank: bool = False,
    ) -> dict[str, list]:
        """Runs several functions at once, each on the ranks its coordinates select:
        `{"stage0": {"pp": 0}, "stage1": {"pp": 1}}` runs a two-stage pipeline, whose
        stg.send / stg.recv pair up across the functions. Each function runs in its own
        thread (a receive waits for its send); results are global over each function's
        ranks, or per rank."""
        store = store if store is not None else StateStore()
        args = args or {}
        placements = {name: Placement(self.mesh, fixed) for name, fixed in programs.items()}
        taken: dict[int, str] = {}
        for name, placement in placements.items():
            for rank in placement.ranks:
                if rank in taken:
                    raise InterpreterError(f"rank {rank} would run both @{taken[rank]} and @{name}")
                taken[rank] = name
        mailbox = Mailbox(len(programs))
        runs = {name: _Run(self, name, placement, store, mailbox, args.get(name, ())) for name, placement in placements.items()}
        if len(runs) == 1:
            next(iter(runs.values())).run()
        else:
            threads = [threading.Thread(target=run.run, name=f"stg @{name}") for name, run in runs.items()]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        errors = [run.error for run in runs.values() if run.error is not None]
        # report the failure that stopped the others, not the programs it stopped
        errors.sort(key=lambda e: e.stopped)
        if errors:
            raise errors[0]
        if undelivered := _undelivered(mailbox):
            raise InterpreterError(
                "the programs ended with messages nobody received: " + "; ".join(undelivered)
                + " (every stg.send needs its stg.recv)"
            )
        merge_writes(store, {name: run.execution.writes for name, run in runs.items()})
        if per_rank:
            return {name: run.results for name, run in runs.items()}
        return {name: run.global_results() for name, run in runs.items()}


    def stages(self) -> dict[str, dict[str, int]]:
        """The module's stage programs: each function marked `stg.stage = {pp = k}`
        (stg-pipeline's schedules) -> the coordinates it runs on."""
        found = {}
        for op in self.module.ops:
            if isinstance(op, FuncOp) and isinstance(stage := op.attributes.get("stg.stage"), DictionaryAttr):
                found[op.sym_name.data] = {axis: c.value.data for axis, c in stage.data.items()}
        if not found:
            raise InterpreterError("the module has no function marked stg.stage (run stg-pipeline first)")
        return found

    def run_stages(self, store: StateStore | None = None, *, per_rank: bool = False) -> dict[str, list]:
        """Runs every stage program of a pipelined module side by side (`stages()`);
        returns each one's results (the last stage returns the step's loss)."""
        return self.run_programs(self.stages(), store, per_rank=per_rank)


def _undelivered(mailbox: Mailbox) -> list[str]:
    """The messages left in the mailbox, as 'N from rank a to rank b with tag t'."""
    left = mailbox.pending()
    return [f"{n} from rank {sender} to rank {receiver} with tag {tag}" for (sender, receiver, tag), n in left]


class _Run:
    """One function running on its placement (in its own thread with several)."""

    def __init__(self, interpreter: Interpreter, name: str, placement: Placement, store: StateStore,
                 mailbox: Mailbox, args: Sequence[torch.Tensor | PerRank]):
        self.interpreter, self.name, self.placement = interpreter, name, placement
        self.func = interpreter.function(name)
        self.execution = Execution(interpreter, store, placement, mailbox)
        self.args = args
        self.results: list = []
        self.error: InterpreterError | None = None

    def run(self) -> None:
        try:
            self.results = self.execution.run_block(self.func.body.block, self._arguments())
        except InterpreterError as e:
            self.error = e
        except Exception as e:  # a bug of the interpreter: report it, stop the others
            self.error = InterpreterError(f"@{self.name}: internal error: {e!r}")
            self.error.__cause__ = e
        finally:
            self.execution.mailbox.finished(failed=self.error is not None)

    def _arguments(self) -> list[PerRank]:
        block, name = self.func.body.block, self.name
        if len(self.args) != len(block.args):
            raise InterpreterError(f"@{name} takes {len(block.args)} arguments, {len(self.args)} given")
        values = []
        for i, (arg, value) in enumerate(zip(block.args, self.args)):
            ty = arg.type
            if not isinstance(ty, DistributedTensorType):
                raise InterpreterError(f"@{name} argument #{i} is {ty}; the interpreter passes tensors only")
            if isinstance(value, (list, tuple)):
                value = list(value)
            else:
                value = shard_global(value, Layout.of(ty, self.interpreter.sizes), self.placement)
            check_value(value, ty, self.interpreter.sizes, f"@{name} argument #{i}")
            values.append(value)
        return values

    def global_results(self) -> list[torch.Tensor]:
        out = []
        for i, (ty, value) in enumerate(zip(self.func.function_type.outputs.data, self.results)):
            if not isinstance(ty, DistributedTensorType) or isinstance(value, Token):
                raise InterpreterError(f"@{self.name} result #{i} is {ty}; only tensors can be returned as global tensors")
            out.append(assemble_global(value, Layout.of(ty, self.interpreter.sizes), self.placement))
        return out


class Execution:
    """One function running on a placement: SSA values, layer indices, and the shared
    state store and mailbox."""

    def __init__(self, interpreter: Interpreter, store: StateStore, placement: Placement, mailbox: Mailbox):
        self.interpreter = interpreter
        self.mesh = interpreter.mesh
        self.sizes = interpreter.sizes
        self.store = store
        self.writes = StoreWrites(store)
        self.placement = placement
        self.mailbox = mailbox
        self.ranks = [Rank(r, self.mesh, self.sizes) for r in placement.ranks]
        self.values: dict[SSAValue, Any] = {}
        self.released: dict[SSAValue, Operation] = {}
        # (the layer an iteration addresses, the stack's size) of each enclosing
        # stg.repeat, outermost first
        self.layers: list[tuple[int, int]] = []

    # -- values ----------------------------------------------------------------------------
    def value(self, ssa: SSAValue) -> Any:
        if ssa in self.released:
            raise InterpreterError(
                f"%{ssa.name_hint or '<value>'} is used after {describe_op(self.released[ssa])} released it"
            )
        try:
            return self.values[ssa]
        except KeyError:
            raise InterpreterError(f"%{ssa.name_hint or '<value>'} has no value yet (is it defined later?)") from None

    def bind(self, ssa: SSAValue, value: Any) -> None:
        self.values[ssa] = value
        self.released.pop(ssa, None)

    def release(self, ssa: SSAValue, op: Operation) -> None:
        self.released[ssa] = op

    @contextmanager
    def scope(self) -> Iterator[None]:
        """A called function's own values, outside the caller's loops."""
        saved = self.values, self.released, self.layers
        self.values, self.released, self.layers = {}, {}, []
        try:
            yield
        finally:
            self.values, self.released, self.layers = saved

    # -- running ---------------------------------------------------------------------------
    def run_block(self, block: Block, args: Sequence[Any]) -> list[Any]:
        """Runs a body with its arguments; returns what its terminator yields."""
        for arg, value in zip(block.args, args, strict=True):
            self.bind(arg, value)
        for op in block.ops:
            if isinstance(op, (YieldOp, ReturnOp)):
                return [self.value(v) for v in op.operands]
            self.run_op(op)
        return []

    def run_op(self, op: Operation) -> None:
        try:
            impl = implementation_of(op)
            if impl is None:
                raise InterpreterError("the interpreter has no implementation of this op")
            results = impl(op, [self.value(v) for v in op.operands], self)
            if len(results) != len(op.results):
                raise InterpreterError(f"produced {len(results)} results for {len(op.results)}")
            for i, (ssa, value) in enumerate(zip(op.results, results)):
                self._check(ssa.type, value, f"result #{i}")
                self.bind(ssa, value)
        except InterpreterError as e:
            if e.located:
                raise
            raise InterpreterError(f"{describe_op(op)}{self._where()}: {e}", located=True, stopped=e.stopped) from e
        except (RuntimeError, IndexError, ValueError, TypeError) as e:
            raise InterpreterError(f"{describe_op(op)}{self._where()}: {type(e).__name__}: {e}", located=True) from e

    def _where(self) -> str:
        return "".join(f" [layer {i} of {n}]" for i, n in self.layers)

    def _check(self, ty, value, what: str) -> None:
        if isinstance(ty, TokenType):
            if not isinstance(value, Token):
                raise InterpreterError(f"{what} should be a token")
            if ty.value_type is not None:
                self._check(ty.value_type, value.payload, f"{what}'s payload")
        elif isinstance(ty, DistributedTensorType):
            check_value(value, ty, self.sizes, what)

