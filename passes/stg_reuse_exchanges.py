"""stg-reuse-exchanges: an all-to-all of data already exchanged the same way reuses the
first exchange's result instead of sending the data again.

stg-autodiff saves a layer's values for its backward; under expert parallelism the
MoE dispatch's tokens and the experts' outputs are saved as they were *before* their
all-to-all, so the backward, which needs them exchanged, sends them again. An
all-to-all's result is no larger than its input, so the frameworks keep the exchanged
tensor instead (Megatron's expert GEMMs save their inputs): the forward saves the
all-to-all's result in the input's place, and the backward's all-to-all goes.

    forward:   %x = stg.all_to_all %d on @m [ep] ...     stg.yield ..., %d, ...   (saved)
    backward:  %y = stg.all_to_all %d_saved on @m [ep] ...
  becomes
    forward:   %x = stg.all_to_all %d on @m [ep] ...     stg.yield ..., %x, ...   (saved)
    backward:  (%d_saved is the exchanged tensor; uses of %y read it)

The saved value travels forward repeat -> forward phase -> (a pipeline stage's
forward function, the schedule's calls, its backward function) -> the backward
repeat's scan; every hop is retyped to the exchanged layout. With recompute the
backward's recompute phase yields its exchanged tokens the same way. Two all-to-alls
of one value in one block are one. All-gathers are redone, as
Megatron's sequence parallelism does to save memory.

Requires: stg IR after stg-match-collectives (synchronous collectives; before
stg-schedule). Guarantees: the step computes what it computed; a saved value is
replaced only where the backward's all-to-all is its only reader, so nothing more is
kept alive than before (the exchanged tensor has as many elements as the saved one).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from stagec.dialects.stg.comm import AllToAllOp
from stagec.dialects.stg.structure import PhaseOp, RepeatOp, stacked, terminator

__all__ = ["StgReuseExchanges", "reuse_exchanges"]


@dataclass(frozen=True)
class StgReuseExchanges(ModulePass):
    """Save an all-to-all's result for the backward instead of exchanging the saved input again."""

    name = "stg-reuse-exchanges"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        reuse_exchanges(op)


def reuse_exchanges(module: ModuleOp) -> int:
    """Remove every all-to-all that repeats an earlier exchange; returns how many."""
    functions = {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)}
    removed = 0
    for op in [op for op in module.walk() if isinstance(op, AllToAllOp)]:
        if op.parent is None or op.is_async is not None:
            continue
        if _same_block_twin(op) or _recomputed_exchange(op) or _saved_exchange(op, functions):
            removed += 1
    return removed


def _exchanges_alike(a: AllToAllOp, b: AllToAllOp) -> bool:
    return a.axis_names == b.axis_names and a.src == b.src and a.dst == b.dst and a.is_async is None


def _same_block_twin(op: AllToAllOp) -> AllToAllOp | None:
    """An earlier all-to-all of the same value in the same block (a recomputed forward's)."""
    block = op.parent_block()
    for use in op.input.uses:
        other = use.operation
        if other is not op and isinstance(other, AllToAllOp) and other.parent_block() is block \
                and _exchanges_alike(other, op) and block.get_operation_index(other) < block.get_operation_index(op):
            op.result.replace_all_uses_with(other.result)
            op.detach()
            op.erase()
            return other
    return None


def _recomputed_exchange(op: AllToAllOp) -> AllToAllOp | None:
    """With recompute the backward's recompute phase exchanges the tokens it rebuilds
    and yields them unexchanged, and the backward exchanges them again: the phase
    yields its exchanged tokens instead."""
    value = op.input
    phase = value.op if isinstance(value, OpResult) else None
    if not isinstance(phase, PhaseOp) or phase.parent_block() is not op.parent_block() or _only_use(value) is not op:
        return None
    yielded = terminator(phase.body)
    original = yielded.values[value.index]
    twin = next((u.operation for u in original.uses if isinstance(u.operation, AllToAllOp)
                 and u.operation.parent_block() is phase.body.block and _exchanges_alike(u.operation, op)), None)
    if twin is None:
        return None
    yielded.operands[value.index] = twin.result
    exchanged = Rewriter.replace_value_with_new_type(value, twin.result.type)
    op.result.replace_all_uses_with(exchanged)
    op.detach()
    op.erase()
    return twin


# -- the saved value's way from the forward to the backward ----------------------------------------


def _only_use(value: SSAValue) -> Operation | None:
    uses = list(value.uses)
    return uses[0].operation if len(uses) == 1 else None


def _saved_exchange(op: AllToAllOp, functions: dict) -> AllToAllOp | None:
    """When `op` exchanges a saved value the forward exchanged the same way, save the
    forward's result instead and remove `op` (module doc)."""
    scan_arg = op.input
    if not isinstance(scan_arg, BlockArgument) or _only_use(scan_arg) is not op:
        return None
    backward = scan_arg.block.parent_op()
    if not isinstance(backward, RepeatOp) or scan_arg.index < len(backward.carried):
        return None
    saved = backward.scanned[scan_arg.index - len(backward.carried)]
    if _only_use(saved) is not backward:
        return None
    hops = _hops_to_forward(saved, functions)
    if hops is None:
        return None
    forward_result, through = hops
    forward = forward_result.op
    yielded = terminator(forward.body)
    slot = forward_result.index  # a repeat yields its carried values, then its outputs, as it returns them
    original = yielded.values[slot]
    twin = next((u.operation for u in original.uses if isinstance(u.operation, AllToAllOp)
                 and u.operation.parent_block() is forward.body.block and _exchanges_alike(u.operation, op)), None)
    if twin is None:
        return None
    # the forward saves the exchanged tensor; every hop to the backward carries its type
    yielded.operands[slot] = twin.result
    new_type = stacked(twin.result.type, forward.count_expr)
    for value in [forward_result, *through]:
        _retype(value, new_type)
    exchanged = Rewriter.replace_value_with_new_type(scan_arg, twin.result.type)
    op.result.replace_all_uses_with(exchanged)
    op.detach()
    op.erase()
    return twin


def _hops_to_forward(saved: SSAValue, functions: dict) -> tuple[OpResult, list[SSAValue]] | None:
    """The forward repeat's result that `saved` is, and the values between them (phase
    results, function returns, call results, function arguments), if every one of them
    is only passed on."""
    through: list[SSAValue] = []
    value = saved
    while True:
        if isinstance(value, OpResult) and isinstance(value.op, RepeatOp):
            repeat = value.op
            if value.index < len(repeat.carried) or len(list(value.uses)) != 1:
                return None
            return value, through
        through.append(value)
        if isinstance(value, OpResult) and isinstance(value.op, PhaseOp):
            value = terminator(value.op.body).values[value.index]
            if len(list(value.uses)) != 1:
                return None
        elif isinstance(value, BlockArgument) and isinstance(value.block.parent_op(), func.FuncOp):
            value = _returned_for_argument(value, functions, through)
            if value is None:
                return None
        else:
            return None


def _returned_for_argument(arg: BlockArgument, functions: dict, through: list) -> SSAValue | None:
    """A pipeline stage's backward function argument: every call passes it a result of
    the same forward function at the same index; that function's returned value."""
    callee = arg.block.parent_op()
    name = callee.sym_name.data
    calls = [op for f in functions.values() for op in f.walk()
             if isinstance(op, func.CallOp) and op.callee.root_reference.data == name]
    sources = set()
    for call in calls:
        given = call.arguments[arg.index]
        if not (isinstance(given, OpResult) and isinstance(given.op, func.CallOp)) or len(list(given.uses)) != 1:
            return None
        sources.add((given.op.callee.root_reference.data, given.index))
        through.append(given)
    if len(sources) != 1:
        return None
    (forward_name, index), = sources
    forward = functions.get(forward_name)
    if forward is None:
        return None
    returned = forward.body.block.last_op.operands[index]
    if len(list(returned.uses)) != 1:
        return None
    through.append(("return", forward, index))
    through.append(("argument", callee, arg.index))
    return returned


def _retype(value, new_type) -> None:
    if isinstance(value, tuple):  # a function's signature
        what, function, index = value
        inputs, outputs = list(function.function_type.inputs.data), list(function.function_type.outputs.data)
        (outputs if what == "return" else inputs)[index] = new_type
        function.function_type = FunctionType.from_lists(inputs, outputs)
        if what == "argument":
            Rewriter.replace_value_with_new_type(function.body.block.args[index], new_type)
        return
    Rewriter.replace_value_with_new_type(value, new_type)

