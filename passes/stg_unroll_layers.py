"""stg-unroll-layers: the layer loops of the forward and backward phases become one copy
of the body per layer, so a pass that decides per layer - DeepCompile's prefetch
(deepcompile.md §4.2), ZeRO-3's fetch queue, FSDP2's next-group prefetch - sees the
step as the flat operator list the paper schedules (docs/scheduled-ir.md "Compact at
scale": "a pass that decides per layer unrolls the layer loop it needs").

    %h, %saved = stg.repeat 2 carry(%c = %x : T) {       %wa = stg.param "wa" layer 0 of 2 : ...
      %wa = stg.param "wa" : ...                  ==>     %h0 = ... %x ...
      %h1 = ... %c ...                                    %wa_1 = stg.param "wa" layer 1 of 2 : ...
      stg.yield %h1, %h1 : T, T                           %h1 = ... %h0 ...
    }

- every per-layer state op (param, optimizer state, assign) of the copy for layer i
  names `layer i of L` explicitly;
- carried values thread from copy to copy; a scanned operand feeds each copy its
  layer's value and a stacked result becomes the list of the copies' values: a stacked
  result that leaves its phase is yielded per layer (the phase gets one result per
  layer in its place), and the backward repeat that scans it takes each layer's;
- under `reverse` the copies run layer L-1 first, as the backward walks the layers;
- a recompute phase inside a copy is dissolved into the backward: DeepCompile
  compiles the backward with its recompute as one graph, and its gathers must be free
  to move across layers.

Only repeats inside forward and backward phases are unrolled (the optimizer's per-layer
loop gathers nothing and stays structured). A stacked value used other than through a
phase's yield into a scan of another unrolled repeat is refused, as is a pipeline
stage's slice (`offset ... of ...`).

Requires: stg IR after stg-shard and stg-match-collectives, before the scheduling
passes (run it before stg-fully-shard), the repeat counts bound (numbers, or sizes in
stg.config). Guarantees: the step computes what it did; no stg.repeat left in a forward
or backward phase; the module verifies.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from stagec.dialects.stg.names import PhaseKind
from stagec.dialects.stg.state import LayerAddressed, layer_props
from stagec.dialects.stg.structure import PhaseOp, RepeatOp, YieldOp
from stagec.passes.diagnostics import PassError

__all__ = ["StgUnrollLayers", "unroll_layers"]

_UNROLLED_PHASES = (PhaseKind.FORWARD, PhaseKind.BACKWARD)


@dataclass(frozen=True)
class StgUnrollLayers(ModulePass):
    """One copy of the layer body per layer in the forward and backward phases."""

    name = "stg-unroll-layers"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        unroll_layers(op)


def unroll_layers(module: ModuleOp) -> int:
    """Unroll in place (module doc); returns the number of repeats unrolled."""
    from stagec.dialects.stg.config import config_bindings

    env = config_bindings(module)
    per_layer: dict[SSAValue, list[SSAValue]] = {}
    repeats = [op for op in module.walk() if isinstance(op, RepeatOp) and _in_unrolled_phase(op)]
    for repeat in repeats:
        _unroll(repeat, env, per_layer)
    for phase in [op for op in module.walk() if isinstance(op, PhaseOp) and op.kind.data == PhaseKind.RECOMPUTE]:
        if _in_unrolled_phase(phase):
            _dissolve(phase)
    leftover = [v for v in per_layer if v.uses]
    if leftover:
        raise PassError(f"stg-unroll-layers: the stacked value %{leftover[0].name_hint or '?'} is used whole "
                        "after its layers were unrolled", leftover[0].owner if isinstance(leftover[0].owner, Operation) else None)
    for value in per_layer:
        owner = value.owner
        if isinstance(owner, PhaseOp) and owner.parent is None:
            owner.erase()  # a phase _through_phase_yield replaced
    return len(repeats)


def _in_unrolled_phase(op: Operation) -> bool:
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, PhaseOp) and parent.kind.data in _UNROLLED_PHASES:
            return True
        parent = parent.parent_op()
    return False


def _count(repeat: RepeatOp, env: dict) -> int:
    count = repeat.count_expr
    try:
        return int(count.evaluate(env))
    except Exception as error:  # noqa: BLE001 - any unbound or bad count is the same message
        raise PassError(f"stg-unroll-layers needs the layer count as a number ({count}: {error}); "
                        "bind it in stg.config or with stg-instantiate", repeat) from None


def _unroll(repeat: RepeatOp, env: dict, per_layer: dict[SSAValue, list[SSAValue]]) -> None:
    if repeat.offset is not None:
        raise PassError("stg-unroll-layers: a pipeline stage's slice of a layer stack (offset ... of ...) is not "
                        "unrolled", repeat)
    n = _count(repeat, env)
    block = repeat.parent_block()
    assert block is not None
    body = repeat.body.block
    n_carried = len(repeat.carried)
    carried = list(repeat.carried)
    scans = []
    for value in repeat.scanned:
        pieces = per_layer.get(value)
        if pieces is None or len(pieces) != n:
            raise PassError("stg-unroll-layers: a scanned operand must be the stacked result of an unrolled layer "
                            "loop (this one comes from elsewhere)", repeat)
        scans.append(pieces)
    reverse = repeat.reverse is not None
    stacked: list[list[SSAValue | None]] = [[None] * n for _ in repeat.results[n_carried:]]
    for iteration in range(n):
        layer = n - 1 - iteration if reverse else iteration
        mapper: dict[SSAValue, SSAValue] = {}
        args = list(body.args)
        for arg, value in zip(args[:n_carried], carried):
            mapper[arg] = value
        for arg, pieces in zip(args[n_carried:], scans):
            mapper[arg] = pieces[layer]
        yielded = None
        for op in body.ops:
            if isinstance(op, YieldOp):
                yielded = [mapper.get(v, v) for v in op.operands]
                continue
            copy = op.clone(value_mapper=mapper)
            for inner in copy.walk():
                if isinstance(inner, LayerAddressed) and inner.explicit_layer() is None:
                    inner.properties.update(layer_props((layer, n)))
            block.insert_op_before(copy, repeat)
        assert yielded is not None
        carried = yielded[:n_carried]
        for k, value in enumerate(yielded[n_carried:]):
            stacked[k][layer] = value
    for result, value in zip(repeat.results[:n_carried], carried):
        result.replace_all_uses_with(value)
    for result, pieces in zip(repeat.results[n_carried:], stacked):
        per_layer[result] = pieces  # type: ignore[assignment]
        _through_phase_yield(result, pieces, per_layer)
    if not any(r.uses for r in repeat.results):
        repeat.detach()
        repeat.erase()


def _through_phase_yield(value: SSAValue, pieces: list[SSAValue], per_layer: dict) -> None:
    """A stacked value yielded by its phase: the phase yields each layer's piece instead,
    and its stacked result maps to the new per-layer results."""
    for use in list(value.uses):
        yield_op = use.operation
        phase = yield_op.parent_op()
        if not isinstance(yield_op, YieldOp) or not isinstance(phase, PhaseOp):
            continue
        index = use.index
        operands = list(yield_op.operands)
        new_operands = operands[:index] + list(pieces) + operands[index + 1:]
        yield_op.detach()
        yield_op.erase()
        phase.body.block.add_op(YieldOp(*new_operands))
        region = phase.detach_region(phase.body)
        new_phase = PhaseOp(phase.kind.data, region)
        new_phase.attributes.update(phase.attributes)
        parent = phase.parent_block()
        assert parent is not None
        parent.insert_op_before(new_phase, phase)
        old_results = list(phase.results)
        new_results = list(new_phase.results)
        moved: dict[SSAValue, SSAValue] = {}
        for k, old in enumerate(old_results):
            if k != index:
                moved[old] = new_results[k if k < index else k + len(pieces) - 1]
                old.replace_all_uses_with(moved[old])
        # pieces of a value unrolled before, yielded by this phase too, now come from the new one
        for key, earlier in per_layer.items():
            per_layer[key] = [moved.get(v, v) for v in earlier]
        for k, piece in enumerate(new_results[index:index + len(pieces)]):
            piece.name_hint = f"{old_results[index].name_hint or 'saved'}_{k}"
        per_layer[old_results[index]] = new_results[index:index + len(pieces)]
        # the old phase, emptied, keeps only its stacked result, which the scans of
        # repeats still to unroll read as the per-layer pieces; erased once they are
        phase.detach()


def _dissolve(phase: PhaseOp) -> None:
    """Move a recompute phase's ops into the enclosing block (module doc)."""
    block = phase.body.block
    yielded = block.last_op
    assert isinstance(yielded, YieldOp)
    values = list(yielded.operands)
    for op in list(block.ops):
        if op is yielded:
            continue
        op.detach()
        phase.parent_block().insert_op_before(op, phase)
    for result, value in zip(phase.results, values):
        result.replace_all_uses_with(value)
    phase.detach()
    phase.erase()
