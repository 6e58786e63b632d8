"""Folding an exported model's unrolled layers into one `stg.repeat L` body.

torch.export unrolls `for layer in self.layers`: an 80-layer model is 80 copies of the
layer's ops. Every op convert-torch-to-stg builds is tagged with the layer its torch op
ran in, read off the nn.Module path (`model.layers.<i>.` - the first numeric component
of the path names the layer list and the index). The folding then

1. cuts the function body into the runs of ops of layer 0, 1, ..., L-1 (ops between
   two layers that belong to none - a residual add in the parent's loop, a cast - join
   the layer before them, or failing that the layer after them);
2. checks that every layer is the same program as layer 0: the same ops with the same
   properties and types, operands that are the same earlier op of the layer, the same
   value from outside every layer (e.g. `rope.angles`), or the layer's input, and
   parameters whose names differ only in the layer index;
3. checks that each layer passes exactly one value on (the hidden state), which the
   next layer takes as its input;
4. builds one `stg.repeat L carry(%h = <layer 0's input>)` whose body is layer 0 with
   its parameters renamed without the index (model.layers.0.mlp.up_proj.weight ->
   model.layers.mlp.up_proj.weight, docs/training-ir.md), and erases the L copies.

A list of one layer (or an nn.Sequential's single child) stays unrolled. A model whose layers differ (a DeepSeek dense prefix, say) is left unrolled with a
diagnostic naming the first difference; the program is still correct, only not folded.
"""

from __future__ import annotations

import re

from xdsl.dialects import func
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Block, Operation, Region, SSAValue

from stagec.dialects import stg
from stagec.frontends.templates.blocks import module_name
from stagec.passes.torch_to_stg.context import ConversionError, strip_layer_index

__all__ = ["FoldResult", "fold_layers"]


class FoldResult:
    def __init__(self, count: int, prefix: str | None, reason: str | None = None):
        self.count = count
        self.prefix = prefix
        self.reason = reason


def _segments(block: Block, tags: dict[Operation, tuple[str, int]], tail: bool) -> tuple[str, list[list[Operation]]] | None:
    """The layers' op runs. Untagged ops between two layers (a residual add written in
    the parent's loop, a cast) go to the layer before them (`tail`) or after them; the
    first layer then takes as many ops from before it, the last as many after it."""
    prefixes = {p for p, _ in tags.values()}
    if not prefixes:
        return None
    if len(prefixes) > 1:
        raise ConversionError(f"ops of several layer lists ({', '.join(sorted(prefixes))}): only one layer stack is folded")
    prefix = prefixes.pop()
    ops = list(block.ops)
    tagged = [i for i, op in enumerate(ops) if op in tags]
    first, last = tagged[0], tagged[-1]
    count = max(i for _, i in tags.values()) + 1
    segments: list[list[Operation]] = [[] for _ in range(count)]
    gaps: list[list[Operation]] = [[] for _ in range(count + 1)]  # gaps[i]: untagged ops before layer i
    current = -1
    params: list[Operation] = []  # a parameter is read first by the layer after it
    for op in ops[first : last + 1]:
        if op in tags:
            index = tags[op][1]
            if index < current:
                raise ConversionError(f"layer {index}'s ops come after layer {current}'s: layers must run in order")
            current = index
            segments[index].extend(params)
            params = []
            segments[index].append(op)
        elif isinstance(op, (stg.ParamOp, stg.InputOp)):
            params.append(op)
        else:
            gaps[current + 1].append(op)
    if any(not s for s in segments):
        raise ConversionError("a layer index without ops: the layers are not 0..L-1")
    width = len(gaps[1]) if count > 1 else 0
    if tail:
        after = [op for op in ops[last + 1 :] if not isinstance(op, (func.ReturnOp, stg.ParamOp, stg.InputOp))][:width]
        for i in range(count):
            segments[i].extend(gaps[i + 1] if i + 1 < count else gaps[count] + after)
    else:
        before = ops[max(first - width, 0) : first]
        for i in range(count):
            segments[i][:0] = before if i == 0 else gaps[i]
        if gaps[count]:
            segments[count - 1].extend(gaps[count])
    return prefix, segments


def _signature(segment: list[Operation], carry: SSAValue, prefix: str):
    """A comparable description of one layer's program."""
    local: dict[SSAValue, tuple[int, int]] = {}
    sig = []
    for n, op in enumerate(segment):
        operands = []
        for v in op.operands:
            if v in local:
                operands.append(("local", *local[v]))
            elif v is carry:
                operands.append(("carry",))
            else:
                operands.append(("outer", id(v)))
        props = dict(op.properties)
        if isinstance(op, stg.ParamOp):
            props["name"] = StringAttr(strip_layer_index(op.tensor_name.data, prefix))
        sig.append((op.name, tuple(sorted((k, str(v)) for k, v in props.items())),
                    tuple(str(r.type) for r in op.results), tuple(operands)))
        for k, r in enumerate(op.results):
            local[r] = (n, k)
    return sig


def _inputs_and_outputs(segment: list[Operation]) -> tuple[list[SSAValue], list[SSAValue]]:
    inside = set(segment)
    defined = {r for op in segment for r in op.results}
    inputs: list[SSAValue] = []
    for op in segment:
        for v in op.operands:
            if v not in defined and v not in inputs:
                inputs.append(v)
    outputs = [r for op in segment for r in op.results if any(u.operation not in inside for u in r.uses)]
    return inputs, outputs


def fold_layers(block: Block, tags: dict[Operation, tuple[str, int]], count_symbol: str = "L") -> FoldResult:
    """Folds the layers (module doc); tries the ops between layers as each layer's tail,
    then as the next one's head."""
    failure: FoldResult | ConversionError | None = None
    for tail in (True, False):
        try:
            result = _fold(block, tags, count_symbol, tail)
        except ConversionError as error:
            failure = error
            continue
        if result.reason is None or result.prefix is None:
            return result
        failure = result
    if isinstance(failure, ConversionError):
        raise failure
    return failure


def _fold(block: Block, tags: dict[Operation, tuple[str, int]], count_symbol: str, tail: bool) -> FoldResult:
    found = _segments(block, tags, tail)
    if found is None:
        return FoldResult(0, None, "no layer list in the model")
    prefix, segments = found
    L = len(segments)
    if L < 2:
        return FoldResult(L, None, "one layer: nothing to fold")
    # the carried value: what layer 0 takes from before the layers and passes on
    carries: list[SSAValue] = []
    outputs: list[SSAValue] = []
    for i, seg in enumerate(segments):
        _, outs = _inputs_and_outputs(seg)
        if len(outs) != 1:
            raise ConversionError(
                f"layer {i} of '{prefix}' passes {len(outs)} values on; a layer stack carries one (the hidden state)"
            )
        outputs.append(outs[0])
    first_inputs, _ = _inputs_and_outputs(segments[0])
    before = set(op for op in block.ops if op not in set(segments[0]))
    outer_of_first = [v for v in first_inputs]
    # the carry of layer 0 is the one input that layer 1 takes from layer 0 instead
    if L > 1:
        second_inputs, _ = _inputs_and_outputs(segments[1])
        if outputs[0] not in second_inputs:
            raise ConversionError(f"layer 1 of '{prefix}' does not read layer 0's output")
        shared = [v for v in second_inputs if v is not outputs[0]]
        candidates = [v for v in outer_of_first if v not in shared]
    else:
        candidates = [v for v in outer_of_first if v.type == outputs[0].type]
    if len(candidates) != 1:
        raise ConversionError(f"cannot tell which value layer 0 of '{prefix}' carries on")
    carries = [candidates[0]] + outputs[:-1]
    del before
    reference = _signature(segments[0], carries[0], prefix)
    for i in range(1, L):
        sig = _signature(segments[i], carries[i], prefix)
        if sig != reference:
            where = next((k for k, (a, b) in enumerate(zip(sig, reference)) if a != b), min(len(sig), len(reference)))
            op = segments[i][where] if where < len(segments[i]) else None
            return FoldResult(L, prefix, f"layer {i} differs from layer 0 at its op #{where}"
                              + (f" ('{op.name}')" if op else ""))
    # build the repeat from layer 0
    body = Block(arg_types=[carries[0].type])
    body.args[0].name_hint = "h"
    mapping: dict[SSAValue, SSAValue] = {carries[0]: body.args[0]}
    for op in segments[0]:
        new = op.clone(value_mapper=dict(mapping))
        for old_r, new_r in zip(op.results, new.results):
            mapping[old_r] = new_r
            new_r.name_hint = old_r.name_hint
        if isinstance(new, stg.ParamOp):
            name = strip_layer_index(new.tensor_name.data, prefix)
            new.properties["name"] = StringAttr(name)
            hint = re.sub(r"\W", "", module_name(name))
            if hint[:1].isalpha():
                new.result.name_hint = hint
        body.add_op(new)
    body.add_op(stg.YieldOp(mapping[outputs[0]]))
    repeat = stg.RepeatOp(count_symbol, [carries[0]], [], Region(body))
    repeat.outputs[0].name_hint = "h"
    block.insert_op_before(repeat, segments[0][0])
    outputs[-1].replace_all_uses_with(repeat.outputs[0])
    for seg in reversed(segments):
        for op in reversed(seg):
            for r in op.results:
                if r.uses:
                    raise ConversionError(f"'{op.name}' of a folded layer is still used outside it", op)
            block.erase_op(op)
    return FoldResult(L, prefix)
