"""Calls and rank classes of a pipelined training step, for the analyses.

stg-pipeline (docs/pipeline.md) gives each stage a schedule function,
`@train_step_stage{k}` marked `stg.stage = {pp = k}`, that calls the stage's forward
and backward once per micro-batch. The FLOP and memory analyses read one function's
schedule, so they take the schedule with every call replaced by its callee's body:
each call then counts once, and a call's results are ordinary values of the caller,
live from the call to their last use (the activations a 1F1B stage keeps in flight).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from stagec.dialects.stg.mesh import MeshOp
from stagec.passes.analysis.liveness import AccountingError, Evaluator

STAGE_ATTR = "stg.stage"
_MAX_DEPTH = 32


def inline_calls(function: func.FuncOp) -> func.FuncOp:
    """A detached copy of `function` whose func.calls (of functions of the same
    module) are replaced by their callees' bodies, recursively; `function` itself
    when it calls nothing."""
    if not any(isinstance(op, func.CallOp) for op in function.walk()):
        return function
    module = function.parent_op()
    callees = {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)} if module else {}
    copy = function.clone()
    _inline_block_calls(copy.body.block, callees, ())
    return copy


def _inline_block_calls(block: Block, callees: dict[str, func.FuncOp], stack: tuple[str, ...]) -> None:
    for op in list(block.ops):
        _inline_within(op, callees, stack)


def _inline_within(op: Operation, callees: dict[str, func.FuncOp], stack: tuple[str, ...]) -> None:
    if isinstance(op, func.CallOp):
        _inline_call(op, callees, stack)
        return
    for region in op.regions:
        for inner in region.blocks:
            _inline_block_calls(inner, callees, stack)


def _inline_call(call: func.CallOp, callees: dict[str, func.FuncOp], stack: tuple[str, ...]) -> None:
    name = call.callee.root_reference.data
    callee = callees.get(name)
    if callee is None or not callee.body.blocks:
        raise AccountingError(f"func.call of @{name}, which the module does not define")
    if name in stack or len(stack) >= _MAX_DEPTH:
        raise AccountingError(f"@{name} calls itself ({' -> '.join(stack + (name,))}); a step cannot be accounted")
    body = callee.body.block
    mapping: dict[SSAValue, SSAValue] = dict(zip(body.args, call.operands, strict=True))
    block = call.parent_block()
    returned: list[SSAValue] = []
    for op in body.ops:
        if isinstance(op, func.ReturnOp):
            returned = [mapping.get(v, v) for v in op.operands]
            break
        clone = op.clone(mapping)
        block.insert_op_before(clone, call)
        _inline_within(clone, callees, stack + (name,))
    for result, value in zip(call.results, returned, strict=True):
        result.replace_all_uses_with(value)
    call.detach()
    call.erase()


# -- rank classes ----------------------------------------------------------------------------


@dataclass(frozen=True)
class StageProgram:
    """A function that is the program of the ranks at one coordinate of some mesh axes."""

    function: func.FuncOp
    coordinates: dict[str, int]


def stage_programs(module: ModuleOp) -> list[StageProgram]:
    """The module's `stg.stage` functions, in order of their coordinates."""
    found = []
    for op in module.ops:
        if isinstance(op, func.FuncOp) and isinstance(attr := op.attributes.get(STAGE_ATTR), DictionaryAttr):
            coords = {k: v.value.data for k, v in attr.data.items() if isinstance(v, IntegerAttr)}
            found.append(StageProgram(op, coords))
    return sorted(found, key=lambda p: tuple(sorted(p.coordinates.items())))


def ranks_at(mesh: MeshOp | None, coordinates: dict[str, int], ev: Evaluator) -> tuple[int, ...]:
    """Every rank of `mesh` whose coordinates include `coordinates`."""
    if mesh is None:
        return (0,)
    names = mesh.axis_names
    for axis in coordinates:
        if axis not in names:
            raise AccountingError(f"a stage names mesh axis '{axis}', which mesh @{mesh.sym_name.data} lacks")
    sizes = [ev.int(s, f"the size of mesh axis '{a}'") for a, s in mesh.axis_sizes.items()]
    # rank = row-major position of the coordinates (mesh.py): the stride of axis i is
    # the product of the sizes after it.
    strides = [prod(sizes[i + 1 :]) for i in range(len(sizes))]
    fixed = [(strides[names.index(a)], sizes[names.index(a)], c) for a, c in coordinates.items()]
    return tuple(r for r in range(prod(sizes)) if all((r // st) % n == c for st, n, c in fixed))


__all__ = ["STAGE_ATTR", "StageProgram", "inline_calls", "ranks_at", "stage_programs"]
