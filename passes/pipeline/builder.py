"""Cutting a training step into per-stage programs (docs/pipeline.md).

Every op of the micro-batch body goes to one stage's forward or backward function:

- a layer stack's forward and backward repeats are cut into the stages' slices
  (`stg.repeat L/2 offset L/2 of L`), each slice on its stage;
- any other op goes where its operands are: in the forward phase to the latest stage
  that produces one of them, in the backward phase to the earliest (data flows up the
  pipeline, then down); an op whose operands are all state reads or inputs goes by
  its position: before the first layer stack on the first stage, after the last on the
  last (the other way round in the backward phase);
- reads of state (stg.param, stg.input, stg.optimizer_state) and stg.fill are not
  placed: each function that uses one reads it itself, just before the first use;
- a gradient accumulation `grad(W) += a + b` whose terms come from different stages
  (a weight tied across stages) is split: each stage adds its own terms to its own
  copy of grad(W); the schedules sum the copies with stg.all_reduce_stages after the
  last backward.

A value used by a function other than the one computing it moves:
- forward -> backward of the same stage: the forward returns it and the schedule
  passes it to the backward call (saved activations, the micro-batch's inputs);
- between stages: stg.send right after it is computed, stg.recv just before its first
  use, with a tag of its own (the Mailbox and ASTRA-sim pair them on it).

Under an interleaved schedule the "stages" above are the pp*v virtual stages: virtual
stage s is model chunk s // pp of rank s % pp, with functions `@stage{k}_chunk{c}_forward`
and `_backward`; a send or recv names the peer's rank, and the schedule of rank k
calls the functions of all its chunks.

The schedule `@train_step_stage{k}` slices the micro-batches out of the inputs, calls
the stage's forward and backward in schedule order, accumulates the loss (the stage
computing it), sums tied gradients, and runs the stage's share of the optimizer
phase: the updates of the weights it holds, and its slices of the layer stacks'.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, FunctionType, IntegerAttr, StringAttr, i64
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from stagec.dialects.stg.names import GRAD, TRAIN_STEP_FUNCTION
from stagec.dialects import stg
from stagec.dialects.stg import ElementwiseKind, PhaseKind
from stagec.dialects.stg.state import StateOp
from stagec.dialects.stg.structure import stacked, unstacked
from stagec.dialects.symbolic import Expr
from stagec.passes.diagnostics import PassError
from stagec.passes.pipeline.accumulation import Accumulation, find_accumulations
from stagec.passes.pipeline.partition import Chunk
from stagec.passes.pipeline.schedule import Step
from stagec.passes.pipeline.step import LayerStack, TrainStep, phase_value

FORWARD, BACKWARD, SCHEDULE = PhaseKind.FORWARD, PhaseKind.BACKWARD, "schedule"


def is_source(op: Operation) -> bool:
    """Ops every function that needs their value runs itself (module doc)."""
    return isinstance(op, (stg.ParamOp, stg.InputOp, stg.OptimizerStateOp, stg.FillOp))


def external_uses(op: Operation) -> list[SSAValue]:
    """The values `op` uses, its operands and those its regions capture, in order."""
    inside: set[Operation] = set(op.walk())
    seen: dict[SSAValue, None] = {}
    for inner in op.walk():
        for operand in inner.operands:
            owner = operand.owner
            defining = owner if isinstance(owner, Operation) else owner.parent_op()
            if isinstance(operand, BlockArgument) and defining in inside:
                continue
            if isinstance(owner, Operation) and owner in inside:
                continue
            seen.setdefault(operand, None)
    return list(seen)


def _describe(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "a value"


def _state_param(op: Operation) -> str | None:
    """The parameter a state op belongs to."""
    if isinstance(op, stg.ParamOp):
        return op.tensor_name.data
    if isinstance(op, stg.OptimizerStateOp):
        return op.param.data
    if isinstance(op, stg.AssignOp):
        name, param = op.key
        return param if param is not None else name
    return None


class Function:
    """A stage function under construction: of virtual stage `stage` on rank `rank`
    (a schedule's stage is its rank)."""

    def __init__(self, name: str, stage: int, kind: str, rank: int | None = None):
        self.name, self.stage, self.kind = name, stage, kind
        self.rank = stage if rank is None else rank
        self.block = Block()
        self.cursor = self.block  # where new ops go
        self.values: dict[SSAValue, SSAValue] = {}  # original value -> its value here
        self.results: list[SSAValue] = []  # a forward's results
        self.inputs: list[int] = []  # a forward's arguments: micro-batch scan indices
        self.saved: list[int] = []  # a backward's arguments: its forward's result indices

    def append(self, op: Operation) -> Operation:
        self.cursor.add_op(op)
        return op

    def result_index(self, value: SSAValue) -> int:
        for i, r in enumerate(self.results):
            if r is value:
                return i
        self.results.append(value)
        return len(self.results) - 1


class StageBuilder:
    """Builds the per-stage functions of a training step (module doc)."""

    def __init__(self, step: TrainStep, chunks: list[list[Chunk]], pp: int, mesh: str, schedules: list[list[Step]],
                 virtual: int = 1):
        """`chunks` has the layers of each of the pp*virtual virtual stages; `schedules`
        the calls of each of the pp ranks."""
        self.step, self.chunks, self.pp, self.mesh, self.schedules = step, chunks, pp, mesh, schedules
        self.virtual, self.stages = virtual, pp * virtual
        assert len(chunks) == self.stages
        names = [f"stage{s}" if virtual == 1 else f"stage{s % pp}_chunk{s // pp}" for s in range(self.stages)]
        self.forward = [Function(f"{n}_forward", s, FORWARD, s % pp) for s, n in enumerate(names)]
        self.backward = [Function(f"{n}_backward", s, BACKWARD, s % pp) for s, n in enumerate(names)]
        self.schedule = [Function(f"{TRAIN_STEP_FUNCTION}_stage{k}", k, SCHEDULE) for k in range(pp)]
        # original value -> (function computing it, its value there)
        self.home: dict[SSAValue, tuple[Function, SSAValue]] = {}
        # (stack, per-layer output index) -> stage -> (function, that stage's slice)
        self.pieces: dict[tuple[int, int], dict[int, tuple[Function, SSAValue]]] = {}
        self.moved: dict[tuple[SSAValue, Function], SSAValue] = {}
        self.next_tag = 0
        self.tied_grads: dict[str, tuple[Attribute, set[int]]] = {}  # param -> (grad type, stages)
        self.trailing_stage: int | None = None
        self.body_args = list(step.loop.body.block.args)
        self.carries = len(step.loop.carried)

    # -- moving values -----------------------------------------------------------------

    def fetch(self, value: SSAValue, fn: Function, user: Operation | None = None) -> SSAValue:
        """`value` (of the original program) as `fn` sees it."""
        value = phase_value(value)
        if value in fn.values:
            return fn.values[value]
        owner = value.owner
        if isinstance(owner, Operation) and is_source(owner):
            if user is not None:
                self._check_read_not_moved_past_write(owner, user)
            new = fn.append(owner.clone())
            out = new.results[0]
        elif value in self.body_args and value.index >= self.carries:
            if fn.kind == FORWARD:
                out = fn.block.insert_arg(value.type, len(fn.block.args))
                out.name_hint = value.name_hint
                fn.inputs.append(value.index - self.carries)
            elif fn.kind == BACKWARD:
                source = self.forward[fn.stage]
                out = self.move(self.fetch(value, source), source, fn)
            else:
                raise PassError(f"{_describe(value)}, a micro-batch input, is used outside the phases", user)
        elif value in self.home:
            source, new_value = self.home[value]
            out = self.move(new_value, source, fn)
        else:
            where = f" ('{owner.name}')" if isinstance(owner, Operation) else ""
            raise PassError(
                f"stg-pipeline cannot give {fn.name} {_describe(value)}{where}: it is neither computed by a "
                "stage nor a state read", user
            )
        fn.values[value] = out
        return out

    def _check_read_not_moved_past_write(self, read: Operation, user: Operation) -> None:
        """A read runs at its first use; no write of the same state may come between."""
        if not isinstance(read, StateOp) or read.parent is not user.parent:
            return
        slot = (read.tensor_name.data, getattr(read, "param", None) and read.param.data)
        op = read.next_op
        while op is not None and op is not user:
            if isinstance(op, stg.AssignOp) and (op.state_name.data, op.param and op.param.data) == slot:
                raise PassError(
                    f"'{read.name}' \"{read.tensor_name.data}\" is written before its value is used; "
                    "stg-pipeline reads state where it is used", read
                )
            op = op.next_op

    def move(self, value: SSAValue, source: Function, target: Function) -> SSAValue:
        """`value` of `source` in `target`: a saved value or a send/recv pair."""
        if source is target:
            return value
        key = (value, target)
        if key in self.moved:
            return self.moved[key]
        if source.stage == target.stage and source.kind == FORWARD and target.kind == BACKWARD:
            target.saved.append(source.result_index(value))
            out = target.block.insert_arg(value.type, len(target.block.args))
            out.name_hint = value.name_hint
        elif source.stage != target.stage and SCHEDULE not in (source.kind, target.kind):
            self._check_direction(value, source, target)
            if source.rank == target.rank:
                raise PassError(
                    f"{target.name} needs {_describe(value)} from {source.name}, a chunk of the same rank: "
                    "stg-pipeline moves values between virtual stages of different ranks only"
                )
            tag = self.next_tag
            self.next_tag += 1
            send = stg.SendOp(value, self.mesh, "pp", target.rank, tag)
            if isinstance(value, BlockArgument):
                where = InsertPoint.at_start(value.block)
            else:
                where = InsertPoint.after(value.owner)
            Rewriter.insert_op(send, where)
            recv = target.append(stg.RecvOp(self.mesh, "pp", source.rank, tag, value.type))
            out = recv.result
            out.name_hint = value.name_hint
        else:
            raise PassError(f"stg-pipeline cannot move {_describe(value)} from {source.name} to {target.name}")
        self.moved[key] = out
        return out

    def _check_direction(self, value: SSAValue, source: Function, target: Function) -> None:
        ok = {
            (FORWARD, FORWARD): source.stage < target.stage,
            (FORWARD, BACKWARD): True,
            (BACKWARD, BACKWARD): source.stage > target.stage,
            (BACKWARD, FORWARD): False,
        }[(source.kind, target.kind)]
        if not ok:
            raise PassError(
                f"{target.name} needs {_describe(value)} from {source.name}, which runs after it in every "
                "schedule: the stages would wait for each other"
            )

    # -- placing ops -----------------------------------------------------------------------

    def place(self, op: Operation, fn: Function, record: bool = True) -> Operation:
        mapper = {v: self.fetch(v, fn, op) for v in external_uses(op)}
        new = fn.append(op.clone(value_mapper=mapper))
        for old, result in zip(op.results, new.results):
            fn.values[old] = result
            if record:
                self.home[old] = (fn, result)
        return new

    def stage_of(self, value: SSAValue) -> int | None:
        value = phase_value(value)
        if value in self.home:
            return self.home[value][0].stage
        if self.step.stack_of_output(value) is not None:
            raise PassError(
                f"{_describe(value)}, the per-layer outputs of a layer stack, is used whole outside the stack's "
                "backward; stg-pipeline holds each stage's layers on that stage only", value.owner
            )
        return None

    def slice_of(self, repeat: stg.RepeatOp, chunk: Chunk, carried, scanned, fn: Function) -> stg.RepeatOp:
        """The chunk's layers of `repeat`, in `fn`."""
        args = set(repeat.body.block.args)
        mapper = {v: self.fetch(v, fn, repeat) for v in external_uses(repeat) if v not in (*repeat.operands, *args)}
        body = Region()
        repeat.body.clone_into(body, value_mapper=mapper)
        whole = chunk.offset == Expr.const(0) and chunk.count == chunk.size
        return fn.append(
            stg.RepeatOp(
                chunk.count, carried, scanned, body, reverse=repeat.reverse is not None,
                offset=None if whole else chunk.offset, stack=None if whole else chunk.size,
            )
        )

    def stack_chunks(self, s: int) -> list[tuple[int, Chunk]]:
        return [(k, c) for k, chunks in enumerate(self.chunks) for c in chunks if c.stack == s]

    # -- the phases ------------------------------------------------------------------------

    def build(self) -> None:
        self._forward_phase()
        self._backward_phase()
        self._trailing_ops()
        owners = self._owners()
        tied = self._tied(owners)
        for k in range(self.pp):
            self._schedule(k, owners, tied)

    def _forward_phase(self) -> None:
        stacks = {stack.forward: s for s, stack in enumerate(self.step.stacks)}
        last = 0
        for op in self.step.forward.body.block.ops:
            if isinstance(op, stg.YieldOp) or is_source(op):
                continue
            if op in stacks:
                last = self._forward_stack(stacks[op], self.step.stacks[stacks[op]])
                continue
            stages = [k for v in external_uses(op) if (k := self.stage_of(v)) is not None]
            self.place(op, self.forward[max(stages) if stages else last])

    def _forward_stack(self, s: int, stack: LayerStack) -> int:
        repeat, n = stack.forward, len(stack.forward.carried)
        previous: tuple[Function, list[SSAValue]] | None = None
        for k, chunk in self.stack_chunks(s):
            fn = self.forward[k]
            if previous is None:
                carried = [self.fetch(v, fn, repeat) for v in repeat.carried]
            else:
                carried = [self.move(v, previous[0], fn) for v in previous[1]]
            new = self.slice_of(repeat, chunk, carried, [], fn)
            previous = (fn, list(new.results[:n]))
            for j, result in enumerate(new.results[n:]):
                self.pieces.setdefault((s, j), {})[k] = (fn, result)
        assert previous is not None
        for old, new in zip(repeat.results[:n], previous[1]):
            self.home[old] = (previous[0], new)
        return previous[0].stage

    def _backward_phase(self) -> None:
        block = self.step.backward.body.block
        accumulations = {a.assign: a for a in find_accumulations(block)}
        deferred = {op for a in accumulations.values() for op in a.ops} | {a.read for a in accumulations.values()}
        stacks = {stack.backward: s for s, stack in enumerate(self.step.stacks)}
        last = self.stages - 1
        for op in block.ops:
            if isinstance(op, stg.YieldOp) or (is_source(op) and op not in deferred):
                continue
            if op in stacks:
                last = self._backward_stack(stacks[op], self.step.stacks[stacks[op]])
            elif op in accumulations:
                self._accumulation(accumulations[op], last)
            elif op not in deferred:
                stages = [k for v in external_uses(op) if (k := self.stage_of(v)) is not None]
                self.place(op, self.backward[min(stages) if stages else last])

    def _backward_stack(self, s: int, stack: LayerStack) -> int:
        repeat, n = stack.backward, len(stack.backward.carried)
        previous: tuple[Function, list[SSAValue]] | None = None
        for k, chunk in reversed(self.stack_chunks(s)):
            fn = self.backward[k]
            if previous is None:
                carried = [self.fetch(v, fn, repeat) for v in repeat.carried]
            else:
                carried = [self.move(v, previous[0], fn) for v in previous[1]]
            scanned = []
            for v in repeat.scanned:
                found = self.step.stack_of_output(phase_value(v))
                if found is None or found[0] != s:
                    raise PassError("a backward layer stack scans a value that is not its forward's activations", repeat)
                source, piece = self.pieces[found][k]
                scanned.append(self.move(piece, source, fn))
            new = self.slice_of(repeat, chunk, carried, scanned, fn)
            previous = (fn, list(new.results[:n]))
            if len(new.results) > n:
                raise PassError("stg-pipeline cannot cut a backward layer stack with per-layer outputs", repeat)
        assert previous is not None
        for old, new in zip(repeat.results[:n], previous[1]):
            self.home[old] = (previous[0], new)
        return previous[0].stage

    def _accumulation(self, acc: Accumulation, default: int) -> None:
        by_stage: dict[int, list[SSAValue]] = {}
        for term in acc.terms:
            stage = self.stage_of(term)
            by_stage.setdefault(default if stage is None else stage, []).append(term)
        if len(by_stage) == 1:
            fn = self.backward[next(iter(by_stage))]
            for op in acc.ops:
                self.place(op, fn)
            return
        grad_type = acc.read.result.type
        self.tied_grads.setdefault(acc.param, (grad_type, set()))[1].update(by_stage)
        for stage, terms in sorted(by_stage.items(), reverse=True):
            fn = self.backward[stage]
            total = self.fetch(terms[0], fn, acc.assign)
            for term in terms[1:]:
                total = fn.append(
                    stg.ElementwiseOp(ElementwiseKind.ADD, [total, self.fetch(term, fn, acc.assign)], total.type)
                ).result
            if acc.cast is not None:  # each stage casts its own partial sum
                total = fn.append(acc.cast.clone({acc.cast.inputs[0]: total})).result
            read = fn.append(acc.read.clone()).result
            pair = [read, total] if acc.read_first else [total, read]
            grad = fn.append(stg.ElementwiseOp(ElementwiseKind.ADD, pair, grad_type)).result
            fn.append(stg.AssignOp(grad, GRAD, acc.param))

    def _trailing_ops(self) -> None:
        """The loss accumulation after the phases runs in the schedule of the stage that
        computes the loss, once per micro-batch."""
        stages = set()
        for op in self.step.trailing:
            for v in external_uses(op):
                value = phase_value(v)
                if value in self.home:
                    fn = self.home[value][0]
                    if fn.kind != FORWARD:
                        raise PassError(
                            f"'{op.name}' after the phases uses a value of the backward phase", op
                        )
                    stages.add(fn.stage)
        if len(stages) > 1:
            raise PassError(
                "the ops after the phases of the micro-batch loop use values of several stages "
                f"({', '.join(map(str, sorted(stages)))})", self.step.trailing[0]
            )
        self.trailing_stage = stages.pop() if stages else self.stages - 1
        for op in self.step.trailing:
            for v in external_uses(op):
                value = phase_value(v)
                if value in self.home:
                    fn, new = self.home[value]
                    fn.result_index(new)

    def _owners(self) -> dict[str, set[int]]:
        """The ranks whose forward or backward functions touch each parameter (outside
        the layer stacks, whose parameters go with their layers)."""
        owners: dict[str, set[int]] = {}
        for fn in (*self.forward, *self.backward):
            for op in _outside_repeats(fn.block):
                if (param := _state_param(op)) is not None:
                    owners.setdefault(param, set()).add(fn.rank)
        return owners

    # -- the schedules ---------------------------------------------------------------------

    def _schedule(self, k: int, owners: dict[str, set[int]], all_tied: dict[str, tuple[Attribute, list[int]]]) -> None:
        fn, loop = self.schedule[k], self.step.loop
        m = self.step.micro_batches
        mine = range(k, self.stages, self.pp)  # the rank's virtual stages, chunk by chunk
        # the micro-batches' inputs
        inputs: list[dict[int, SSAValue]] = [{} for _ in range(m)]
        for j in dict.fromkeys(j for s in mine for j in self.forward[s].inputs):
            whole = self.fetch(loop.scanned[j], fn, loop)
            piece = stacked(unstacked(whole.type), Expr.const(1))
            split = fn.append(stg.SplitOp(whole, 0, [piece] * m))
            arg = self.body_args[self.carries + j]
            for i, part in enumerate(split.outputs):
                sliced = fn.append(stg.ReshapeOp(part, arg.type)).result
                sliced.name_hint = f"{arg.name_hint}_{i}" if arg.name_hint else None
                inputs[i][j] = sliced
        tied = {p: held for p, held in all_tied.items() if k in held[1]}
        for param, (ty, stages) in sorted(tied.items()):
            if k != stages[0]:
                # this copy of grad(W) holds this stage's terms only
                zero = fn.append(stg.FillOp(0.0, ty)).result
                fn.append(stg.AssignOp(zero, GRAD, param))
        carries = None
        assert self.trailing_stage is not None
        if k == self.trailing_stage % self.pp:
            carries = [self.fetch(v, fn, loop) for v in loop.carried]
        results: dict[tuple[int, int], Sequence[SSAValue]] = {}
        for step in self.schedules[k]:
            i, s = step.micro_batch, step.chunk * self.pp + k
            forward, backward = self.forward[s], self.backward[s]
            if step.kind == "F":
                types = [v.type for v in forward.results]
                call = fn.append(func.CallOp(forward.name, [inputs[i][j] for j in forward.inputs], types))
                results[s, i] = call.results
                if carries is not None and s == self.trailing_stage:
                    carries = self._accumulate(fn, carries, results[s, i], forward)
            else:
                fn.append(func.CallOp(backward.name, [results[s, i][r] for r in backward.saved], []))
                del results[s, i]
        for param, (ty, stages) in sorted(tied.items()):
            read = fn.append(stg.OptimizerStateOp(GRAD, param, ty)).result
            total = fn.append(stg.AllReduceStagesOp(read, self.mesh, "pp", stages)).result
            fn.append(stg.AssignOp(total, GRAD, param))
        if carries is not None:
            for old, new in zip(loop.results, carries):
                self.home[old] = (fn, new)
        if self.step.optimizer is not None:
            self._optimizer(k, fn, owners)

    def _tied(self, owners: dict[str, set[int]]) -> dict[str, tuple[Attribute, list[int]]]:
        """Weights held on several ranks whose gradient the backward accumulates ->
        (the gradient's type, the ranks holding a copy)."""
        grads: dict[str, Attribute] = {p: ty for p, (ty, _) in self.tied_grads.items()}
        for f in self.backward:
            for op in _outside_repeats(f.block):
                if isinstance(op, stg.AssignOp) and op.state_name.data == GRAD and op.param is not None:
                    grads.setdefault(op.param.data, op.value.type)
        tied = {}
        for param, ty in grads.items():
            split = self.tied_grads.get(param, (ty, set()))[1]
            stages = owners.get(param, set()) | {s % self.pp for s in split}
            if len(stages) > 1:
                tied[param] = (ty, sorted(stages))
        return tied

    def _accumulate(self, fn: Function, carries: list[SSAValue], results: Sequence[SSAValue],
                    forward: Function) -> list[SSAValue]:
        """One micro-batch's ops after the phases (the loss accumulation)."""
        mapper: dict[SSAValue, SSAValue] = dict(zip(self.body_args[: self.carries], carries))
        for op in self.step.trailing:
            for v in external_uses(op):
                value = phase_value(v)
                if v in mapper:
                    continue
                if value in self.home:
                    mapper[v] = results[forward.result_index(self.home[value][1])]
                else:
                    mapper[v] = self.fetch(v, fn, op)
            new = fn.append(op.clone(value_mapper=mapper))
            mapper.update(zip(op.results, new.results))
        yielded = stg.structure.terminator(self.step.loop.body).values[: self.carries]
        return [mapper.get(v, v) for v in yielded]

    def _optimizer(self, k: int, fn: Function, owners: dict[str, set[int]]) -> None:
        phase = self.step.optimizer
        stacks = {stack.optimizer: s for s, stack in enumerate(self.step.stacks) if stack.optimizer is not None}
        everywhere = frozenset(range(self.pp))
        stages_of: dict[SSAValue, frozenset[int]] = {}
        block = Block()
        fn.cursor = block
        for op in phase.body.block.ops:
            if isinstance(op, stg.YieldOp) or is_source(op):
                continue
            if op in stacks:
                for stage, chunk in self.stack_chunks(stacks[op]):
                    if stage % self.pp == k:
                        self.slice_of(op, chunk, [], [], fn)
                continue
            if (param := _state_param(op)) is not None:
                stages = frozenset(owners.get(param) or {0})
            else:
                found = set()
                for v in external_uses(op):
                    if v in stages_of:
                        found.add(stages_of[v])
                    elif isinstance(v.owner, Operation) and (param := _state_param(v.owner)) is not None:
                        found.add(frozenset(owners.get(param) or {0}))
                if len(found) > 1:
                    raise PassError(
                        f"'{op.name}' in the optimizer phase combines values of different stages (e.g. a global "
                        "gradient norm); stg-pipeline does not support that yet", op
                    )
                stages = found.pop() if found else everywhere
            for result in op.results:
                stages_of[result] = stages
            if k in stages:
                self.place(op, fn, record=False)
        block.add_op(stg.YieldOp())
        fn.cursor = fn.block
        fn.append(stg.PhaseOp(PhaseKind.OPTIMIZER, Region(block)))

    # -- the functions ---------------------------------------------------------------------

    def functions(self, returned: Iterable[SSAValue]) -> list[func.FuncOp]:
        """The finished functions, each stage's forward, backward and schedule."""
        returns: list[list[SSAValue]] = [[] for _ in range(self.pp)]
        for value in returned:
            value = phase_value(value)
            if value in self.home and self.home[value][0].kind == SCHEDULE:
                fn, new = self.home[value]
            else:
                fn = self.schedule[self.pp - 1]
                new = self.fetch(value, fn)
            returns[fn.stage].append(new)
        out = []
        for k in range(self.pp):
            for s in range(k, self.stages, self.pp):
                out.append(_wrap(self.forward[s], PhaseKind.FORWARD, self.forward[s].results))
                out.append(_wrap(self.backward[s], PhaseKind.BACKWARD, []))
            schedule = self.schedule[k]
            schedule.append(func.ReturnOp(*returns[k]))
            op = func.FuncOp(
                schedule.name, FunctionType.from_lists([], [v.type for v in returns[k]]), Region(schedule.block)
            )
            op.attributes["stg.stage"] = DictionaryAttr({"pp": IntegerAttr(k, i64)})
            out.append(op)
        return out


def _outside_repeats(block: Block) -> Iterable[Operation]:
    for op in block.ops:
        if isinstance(op, stg.RepeatOp):
            continue
        yield op
        for region in op.regions:
            for inner in region.blocks:
                yield from _outside_repeats(inner)


def _wrap(fn: Function, kind: PhaseKind, results: list[SSAValue]) -> func.FuncOp:
    """`fn`'s ops inside a stg.phase of `kind` (the analyses' phase spans), returning
    `results`."""
    body = Block()
    for op in list(fn.block.ops):
        op.detach()
        body.add_op(op)
    body.add_op(stg.YieldOp(*results))
    phase = stg.PhaseOp(kind, Region(body))
    fn.block.add_op(phase)
    fn.block.add_op(func.ReturnOp(*phase.results))
    types = FunctionType.from_lists([a.type for a in fn.block.args], [r.type for r in phase.results])
    return func.FuncOp(fn.name, types, Region(fn.block))


def describe_layers(chunks: list[list[Chunk]], sizes: Sequence[Expr], pp: int | None = None) -> StringAttr:
    """`k: [lo, hi) of L; ...` per stage; with `pp` (interleaved), `k.c: ...` per chunk c
    of rank k, in virtual-stage order."""
    parts = []
    for s, stage in enumerate(chunks):
        held = ", ".join(
            f"[{c.offset}, {c.offset + c.count}) of {sizes[c.stack]}" for c in stage
        )
        parts.append(f"{s}: {held}" if pp is None else f"{s % pp}.{s // pp}: {held}")
    return StringAttr("; ".join(parts))
