"""Reverse mode over stg blocks, with layer stacks differentiated as loops.

A `BlockReverser` walks one forward block backwards and writes the backward ops into
a backward block. A forward value the backward needs is referenced directly while
the backward is built; afterwards `seal_phase` routes such references out of a phase
through its yield, and `reverse_repeat` routes those out of a layer body as stacked
per-iteration outputs that the backward `stg.repeat ... reverse` scans. State reads
(parameters) are re-read where needed, never saved. With recompute, a layer's
backward first re-runs its forward in a `stg.phase recompute`, so only the layer's
inputs are saved (stage.md Fig. 11).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.ir import Block, Operation, Region, SSAValue

from stagec.dialects.stg.names import GRAD
from stagec.dialects import stg
from stagec.dialects.stg import ElementwiseKind as E
from stagec.dialects.stg import PhaseKind, TensorType
from stagec.dialects.stg.state import StateOp
from stagec.dialects.stg.structure import terminator
from stagec.dialects.stg.vjp import AutodiffError, VjpInterface, add, elementwise, is_differentiable, zeros


@dataclass(frozen=True)
class GradientPolicy:
    """How parameter gradients are stored: in `grad_type(param)`, summed into the
    "grad" state when micro-batches accumulate."""

    grad_element_type: Callable[[TensorType], object]
    accumulate: bool


def activity(block: Block, active: set[SSAValue]) -> None:
    """Marks the values that depend on a parameter (only those need cotangents)."""
    for op in block.ops:
        if isinstance(op, stg.ParamOp):
            active.add(op.result)
        elif isinstance(op, stg.RepeatOp):
            _loop_activity(op, active)
        elif not isinstance(op, StateOp) and any(v in active for v in op.operands):
            active.update(r for r in op.results if is_differentiable(r))
        for region in op.regions if not isinstance(op, stg.RepeatOp) else ():
            for inner in region.blocks:
                activity(inner, active)


def _loop_activity(op: stg.RepeatOp, active: set[SSAValue]) -> None:
    body = op.body.block
    n = len(op.carried)
    for arg, v in zip(body.args, [*op.carried, *op.scanned]):
        if v in active:
            active.add(arg)
    while True:
        activity(body, active)
        values = terminator(op.body).values
        grown = [a for a, v in zip(body.args[:n], values[:n]) if v in active and a not in active]
        if not grown:
            break
        active.update(grown)
    for i, (r, v) in enumerate(zip(op.outputs, terminator(op.body).values)):
        if v in active or (i < n and body.args[i] in active):
            active.add(r)


def _inside(block: Block, op: Operation) -> bool:
    return block.is_ancestor(op)


def seal_phase(block: Block, kind: PhaseKind) -> stg.PhaseOp:
    """Wraps a detached block into a phase whose yield carries every value of the
    block used outside it, and redirects those uses to the phase's results."""
    escaping = [
        r
        for op in block.ops
        for r in op.results
        if any(not _inside(block, use.operation) for use in r.uses)
    ]
    block.add_op(stg.YieldOp(*escaping))
    phase = stg.PhaseOp(kind, Region(block))
    for value, result in zip(escaping, phase.outputs):
        value.replace_uses_with_if(result, lambda use: not _inside(block, use.operation))
    return phase


@dataclass
class BlockReverser:
    """Reverse mode over the ops of `forward`, emitting into `backward`."""

    forward: Block
    backward: Block
    active: set[SSAValue]
    policy: GradientPolicy
    recompute: bool
    parent: BlockReverser | None = None
    recomputed: dict[SSAValue, SSAValue] = field(default_factory=dict)
    cotangents: dict[SSAValue, SSAValue] = field(default_factory=dict)
    _state_reads: dict[SSAValue, SSAValue] = field(default_factory=dict)
    _param_grads: dict[str, tuple[TensorType, SSAValue]] = field(default_factory=dict)

    # -- the Emitter interface of the rules ---------------------------------------------

    def emit(self, op: Operation) -> Operation:
        self.backward.add_op(op)
        return op

    def is_active(self, value: SSAValue) -> bool:
        return value in self.active

    def primal(self, value: SSAValue) -> SSAValue:
        """A forward value as the backward may use it."""
        owner = value.owner
        defined_here = (
            owner.parent_block() is self.forward if isinstance(owner, Operation) else owner is self.forward
        )
        if not defined_here:
            return self.parent.primal(value) if self.parent is not None else value
        if isinstance(owner, StateOp):
            if value not in self._state_reads:
                self._state_reads[value] = self.emit(owner.clone()).results[0]
            return self._state_reads[value]
        return self.recomputed.get(value, value)

    # -- the walk -----------------------------------------------------------------------

    def accumulate(self, value: SSAValue, cotangent: SSAValue) -> None:
        if value in self.cotangents:
            cotangent = add(self, self.cotangents[value], cotangent)
        self.cotangents[value] = cotangent

    def run(self, seeds: dict[SSAValue, SSAValue]) -> None:
        for value, cotangent in seeds.items():
            self.accumulate(value, cotangent)
        for op in reversed(list(self.forward.ops)):
            if isinstance(op, stg.YieldOp):
                continue
            result_cts = [self.cotangents.get(r) for r in op.results]
            if all(ct is None for ct in result_cts):
                continue
            if isinstance(op, stg.ParamOp):
                self._record_param_grad(op, result_cts[0])
                continue
            if isinstance(op, StateOp):
                continue
            if isinstance(op, stg.RepeatOp):
                grads = reverse_repeat(self, op, result_cts)
            elif isinstance(op, VjpInterface):
                grads = op.vjp(self, result_cts)
            else:
                raise AutodiffError(op, "no gradient rule in stg-autodiff")
            for operand, grad in zip(op.operands, grads):
                if grad is not None and operand in self.active:
                    self.accumulate(operand, grad)
        self._emit_param_grads()

    def _record_param_grad(self, op: stg.ParamOp, grad: SSAValue) -> None:
        name = op.tensor_name.data
        if name in self._param_grads:
            grad = add(self, self._param_grads[name][1], grad)
        self._param_grads[name] = (op.result.type, grad)

    def _emit_param_grads(self) -> None:
        """Stores each parameter's gradient in its "grad" state (a parameter read
        twice, as tied embeddings are, gets the sum)."""
        for name, (param_type, grad) in self._param_grads.items():
            grad_type = TensorType(param_type.shape, self.policy.grad_element_type(param_type))
            if grad.type != grad_type:
                grad = elementwise(self, E.CAST, [grad], grad_type)
            if self.policy.accumulate:
                held = self.emit(stg.OptimizerStateOp(GRAD, name, grad_type)).results[0]
                grad = add(self, held, grad)
            self.emit(stg.AssignOp(grad, GRAD, name))


def reverse_repeat(outer: BlockReverser, op: stg.RepeatOp, result_cts) -> list[SSAValue | None]:
    """The backward of a layer stack: a `stg.repeat` in the opposite direction that
    carries the cotangents of the carried values and scans the saved activations."""
    n = len(op.carried)
    body = op.body.block
    backward = Block(arg_types=[v.type for v in op.carried])
    stacked_seeds = {}
    for value, ct in zip(terminator(op.body).values[n:], result_cts[n:]):
        if ct is not None:
            stacked_seeds[value] = (ct, backward.insert_arg(value.type, len(backward.args)))

    inner = BlockReverser(body, backward, outer.active, outer.policy, outer.recompute, parent=outer)
    recompute_block = Block()
    if outer.recompute:
        _clone_forward(body, recompute_block, inner)
        # marks where the recompute phase goes once its yields are known
        backward.add_op(recompute_block_placeholder := stg.YieldOp())
    seeds = {
        v: arg
        for v, arg in zip(terminator(op.body).values[:n], backward.args[:n])
        if v in outer.active
    }
    seeds |= {v: arg for v, (_, arg) in stacked_seeds.items()}
    inner.run(seeds)

    carried_cts = [
        ct if (ct := inner.cotangents.get(a)) is not None else zeros(inner, a.type) for a in body.args[:n]
    ]
    scanned_grads = [(i, inner.cotangents[a]) for i, a in enumerate(body.args[n:]) if a in inner.cotangents]
    backward.add_op(stg.YieldOp(*carried_cts, *(g for _, g in scanned_grads)))
    if outer.recompute:
        phase = seal_phase(recompute_block, PhaseKind.RECOMPUTE)
        backward.insert_op_before(phase, recompute_block_placeholder)
        recompute_block_placeholder.detach()
        recompute_block_placeholder.erase()

    saved = _saved_values(body, backward)
    forward = _with_saved_outputs(op, saved, outer.active)
    for value in saved:
        arg = backward.insert_arg(value.type, len(backward.args))
        value.replace_uses_with_if(arg, lambda use: _inside(backward, use.operation))

    init = [
        ct if ct is not None else zeros(outer, v.type) for ct, v in zip(result_cts[:n], op.carried)
    ]
    first_saved = len(forward.outputs) - len(saved)
    scans = [ct for ct, _ in stacked_seeds.values()] + list(forward.outputs[first_saved:])
    reverse = outer.emit(
        stg.RepeatOp(op.count_expr, init, scans, Region(backward), reverse=op.reverse is None)
    )
    grads: list[SSAValue | None] = list(reverse.outputs[:n])
    scanned_grads_by_index = dict(zip((i for i, _ in scanned_grads), reverse.outputs[n:]))
    grads += [scanned_grads_by_index.get(i) for i in range(len(op.scanned))]
    return grads


def _clone_forward(body: Block, into: Block, inner: BlockReverser) -> None:
    """Re-runs a layer's forward for its backward (activation recompute); cloning
    records each forward value's recomputed twin in `inner.recomputed`."""
    for op in body.ops:
        if not isinstance(op, stg.YieldOp):
            into.add_op(op.clone(value_mapper=inner.recomputed))


def _saved_values(body: Block, backward: Block) -> list[SSAValue]:
    """The values of a forward layer body its backward body refers to."""
    candidates = [*body.args, *(r for op in body.ops for r in op.results)]
    return [v for v in candidates if any(_inside(backward, use.operation) for use in v.uses)]


def _with_saved_outputs(op: stg.RepeatOp, saved: list[SSAValue], active: set[SSAValue]) -> stg.RepeatOp:
    """Replaces a forward repeat by one that also stacks the saved values."""
    if not saved:
        return op
    old_yield = terminator(op.body)
    old_yield.detach()
    op.body.block.add_op(stg.YieldOp(*old_yield.values, *saved))
    old_yield.erase()
    region = op.detach_region(op.body)
    new = stg.RepeatOp(op.count_expr, list(op.carried), list(op.scanned), region, reverse=op.reverse is not None)
    op.parent_block().insert_op_before(new, op)
    for old, fresh in zip(op.outputs, new.outputs):
        old.replace_all_uses_with(fresh)
        if old in active:
            active.add(fresh)
    op.detach()
    op.erase()
    return new


__all__ = ["BlockReverser", "GradientPolicy", "activity", "reverse_repeat", "seal_phase"]
