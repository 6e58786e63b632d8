"""stg-bucket-gradients' readiness positions (passes/stg_bucket_gradients.py
`_readiness`) walk a repeat's body once and shift its gradient writes for the other
layers; they must equal a walk that expands every layer, on programs with forward and
reversed layer stacks, recompute, pipelines (calls), interleaved stages and experts."""

import pytest
from xdsl.dialects import func

from stagec.dialects import make_context
from stagec.dialects.stg.mesh import MeshOp
from stagec.dialects.stg.structure import PhaseKind, PhaseOp, RepeatOp
from stagec.dialects.stg.state import AssignOp
from stagec.dialects.stg.schedule import GroupOp
from stagec.frontends.templates import build_model, load_config
from stagec.passes import stg_bucket_gradients as bucket
from stagec.passes.analysis.accounting import module_bindings
from stagec.tools import stagec_stats
from stagec.tools.stagec_cli import _parser
from stagec.tools.step import micro_batches_for


def _expanded(fn, functions, sizes) -> dict:
    """The positions with every layer of every repeat walked (the reference)."""
    position, last, seen, counter = {}, {}, set(), 0

    def walk(block, layers):
        nonlocal counter
        for op in block.ops:
            if isinstance(op, PhaseOp) and op.kind.data == PhaseKind.OPTIMIZER:
                continue
            if isinstance(op, AssignOp) and op.state_name.data == "grad" and op.param is not None:
                work = bucket._work(op.value)
                last[(op.param.data, tuple(i for i, _ in layers))] = position.get((id(work), layers), -1)
                continue
            counter += 1
            position[(id(op), layers)] = counter
            if isinstance(op, RepeatOp):
                count = sizes.int(op.count_expr, "", op)
                offset, stack = sizes.int(op.offset_expr, "", op), sizes.int(op.stack_expr, "", op)
                for i in range(count):
                    walk(op.body.block, layers + ((offset + (count - 1 - i if op.reverse is not None else i), stack),))
            elif isinstance(op, func.CallOp):
                name = op.callee.root_reference.data
                if name not in seen and name in functions:
                    seen.add(name)
                    walk(functions[name].body.block, layers)
            elif not isinstance(op, GroupOp):
                for region in op.regions:
                    for b in region.blocks:
                        walk(b, layers)

    walk(fn.body.block, ())
    return last


@pytest.mark.parametrize("model, flags", [
    ("llama3-8b", "--tp 2 --sp --dp 2 --recompute"),
    ("llama3-8b", "--dp 2 --zero 2 --pp 2 --micro-batches 4"),
    ("llama3-8b", "--fsdp 2 --pp 2 --micro-batches 4 --schedule interleaved-1f1b --virtual-stages 2"),
    ("mixtral-8x7b", "--dp 2 --zero 1 --ep 2 --recompute"),
    ("mamba-130m", "--dp 2 --tp 2 --pp 2 --micro-batches 2"),
])
def test_one_walk_per_repeat_gives_the_expanded_positions(model, flags):
    args = _parser().parse_args(["stats", "--model", model, "--seq", "256", *flags.split()])
    module = build_model(load_config(model), args.dtype)
    for step in stagec_stats.training_passes(args, micro_batches_for(args)):
        if step.name == "stg-bucket-gradients":
            break
        step.apply(make_context(), module)
    sizes = bucket._Sizes(module_bindings(module, None))
    mesh = next(op for op in module.ops if isinstance(op, MeshOp))
    for axis, size in mesh.axis_sizes.items():
        sizes.mesh[axis] = sizes.int(size, "", mesh)
    functions = {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)}
    written = 0
    for fn in functions.values():
        ready = bucket._readiness(fn, functions, sizes)
        assert ready == _expanded(fn, functions, sizes)
        written += len(ready)
    assert written > 0
