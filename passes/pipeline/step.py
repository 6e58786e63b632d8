"""The parts of a training step stg-pipeline cuts (docs/training-ir.md):

    func.func @train_step() {
      <reads of the inputs [M, B, S], the loss accumulator's zero>
      %loss = stg.microbatch M carry(...) scan(...) {
        stg.phase forward  { <embedding>  stg.repeat L {layer}  <norm, head, loss> }
        stg.phase backward { <head grads> stg.repeat L reverse {layer grads} <embedding grads> }
        <loss accumulation>
      }
      stg.phase optimizer { <embedding, norm, head updates>  stg.repeat L {layer updates} }
      func.return %loss
    }

A layer stack is a top-level stg.repeat of the forward phase, with its backward (the
reverse repeat scanning its saved activations) and its optimizer update (the repeat
of the optimizer phase updating the same parameters).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from stagec.dialects.stg.names import TRAIN_STEP_FUNCTION
from stagec.dialects import stg
from stagec.dialects.stg import PhaseKind
from stagec.dialects.symbolic import Expr
from stagec.passes.diagnostics import PassError

RUN_AUTODIFF = "run stg-autodiff{micro_batches=N} (N > 1) first"


@dataclass
class LayerStack:
    forward: stg.RepeatOp
    backward: stg.RepeatOp
    optimizer: stg.RepeatOp | None = None

    @property
    def size(self) -> Expr:
        return self.forward.count_expr


@dataclass
class TrainStep:
    function: func.FuncOp
    loop: stg.MicroBatchOp
    forward: stg.PhaseOp
    backward: stg.PhaseOp
    trailing: list[Operation]  # the micro-batch body after the phases (loss accumulation)
    optimizer: stg.PhaseOp | None
    micro_batches: int
    stacks: list[LayerStack] = field(default_factory=list)

    def stack_of_output(self, value: SSAValue) -> tuple[int, int] | None:
        """(stack, stacked output index) if `value` is a forward stack's per-layer output."""
        for s, stack in enumerate(self.stacks):
            if value.owner is stack.forward:
                n = len(stack.forward.carried)
                if value.index >= n:
                    return s, value.index - n
        return None


def phase_value(value: SSAValue) -> SSAValue:
    """What a phase result stands for: the value its body yields."""
    while isinstance(value.owner, stg.PhaseOp):
        value = stg.structure.terminator(value.owner.body).values[value.index]
    return value


def _param_names(op: Operation) -> frozenset[str]:
    names = set()
    for inner in op.walk():
        if isinstance(inner, stg.ParamOp):
            names.add(inner.tensor_name.data)
        elif isinstance(inner, stg.OptimizerStateOp):
            names.add(inner.param.data)
        elif isinstance(inner, stg.AssignOp):
            names.add(inner.key[1] or inner.key[0])
    return frozenset(names)


def find_train_step(module: ModuleOp) -> TrainStep:
    function = next(
        (op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == TRAIN_STEP_FUNCTION), None
    )
    if function is None or not function.body.blocks:
        raise PassError(f"the module has no func.func @train_step to pipeline; {RUN_AUTODIFF}")
    loops = [op for op in function.body.block.ops if isinstance(op, stg.MicroBatchOp)]
    if len(loops) != 1:
        raise PassError(
            "@train_step has no stg.microbatch loop: a pipeline schedules micro-batches; " + RUN_AUTODIFF
            if not loops else "@train_step has more than one stg.microbatch loop",
            function,
        )
    loop = loops[0]
    count = loop.count_expr.as_int()
    if count is None:
        raise PassError(
            f"the micro-batch count {loop.count_expr} must be a number to lay out the schedule", loop
        )
    for op in function.body.block.ops:
        if op is loop or isinstance(op, (func.ReturnOp, stg.PhaseOp)) or _is_source(op):
            continue
        raise PassError(f"'{op.name}' at the top of @train_step: stg-pipeline expects only input reads, "
                        "the micro-batch loop and the optimizer phase there", op)

    phases = {}
    trailing: list[Operation] = []
    for op in loop.body.block.ops:
        if isinstance(op, stg.PhaseOp) and op.kind.data in (PhaseKind.FORWARD, PhaseKind.BACKWARD):
            if trailing or op.kind.data in phases:
                raise PassError("the micro-batch loop must hold a forward phase then a backward phase", op)
            phases[op.kind.data] = op
        elif isinstance(op, stg.YieldOp):
            continue
        elif len(phases) == 2:
            trailing.append(op)
        else:
            raise PassError(f"'{op.name}' before the backward phase, outside the phases of the micro-batch loop", op)
    if len(phases) != 2:
        raise PassError("the micro-batch loop must hold a forward and a backward phase; " + RUN_AUTODIFF, loop)
    optimizers = [
        op for op in function.body.block.ops if isinstance(op, stg.PhaseOp) and op.kind.data == PhaseKind.OPTIMIZER
    ]
    step = TrainStep(
        function, loop, phases[PhaseKind.FORWARD], phases[PhaseKind.BACKWARD], trailing,
        optimizers[0] if optimizers else None, count,
    )
    _find_stacks(step)
    return step


def _is_source(op: Operation) -> bool:
    return isinstance(op, (stg.ParamOp, stg.InputOp, stg.OptimizerStateOp, stg.FillOp))


def _find_stacks(step: TrainStep) -> None:
    forwards = [op for op in step.forward.body.block.ops if isinstance(op, stg.RepeatOp)]
    if not forwards:
        raise PassError("the forward phase has no layer stack (stg.repeat) to cut into stages", step.forward)
    backwards = [op for op in step.backward.body.block.ops if isinstance(op, stg.RepeatOp)]
    stacks = {id(f): LayerStack(f, None) for f in forwards}  # type: ignore[arg-type]
    for backward in backwards:
        owners = set()
        for scanned in backward.scanned:
            value = phase_value(scanned)
            if isinstance(value.owner, stg.RepeatOp) and id(value.owner) in stacks:
                owners.add(id(value.owner))
        if len(owners) != 1:
            raise PassError(
                "a backward stg.repeat must scan the saved activations of exactly one forward layer stack", backward
            )
        stack = stacks[owners.pop()]
        if stack.backward is not None or backward.count_expr != stack.size:
            raise PassError("this backward stg.repeat does not match its forward layer stack", backward)
        stack.backward = backward
    for stack in stacks.values():
        if stack.backward is None:
            raise PassError("this layer stack has no backward stg.repeat scanning its activations", stack.forward)
        if stack.forward.scanned:
            raise PassError("stg-pipeline cannot cut a layer stack that scans per-layer inputs", stack.forward)
    if step.optimizer is not None:
        by_params = {_param_names(s.forward): s for s in stacks.values()}
        for op in step.optimizer.body.block.ops:
            if not isinstance(op, stg.RepeatOp):
                continue
            stack = by_params.get(_param_names(op))
            if stack is None or stack.optimizer is not None or op.count_expr != stack.size or op.operands:
                raise PassError("this optimizer stg.repeat updates no layer stack of the forward phase", op)
            stack.optimizer = op
    step.stacks = [stacks[id(f)] for f in forwards]
