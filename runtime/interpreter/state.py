"""Named state: the store of global tensors a program reads and writes.

Reads give each rank its shard of the global tensor. A read inside nested stg.repeats
names one tensor per iteration: the store holds it stacked, outer repeat first
(`[L, out, in]`), and iteration i addresses layer i (count-1-i under `reverse`);
stg.microbatch iterations do not index state. An input read inside a repeat may also
be one tensor shared by every layer (the rotary angles), which its shape tells.

A slice of a stack (`stg.repeat 2 offset 4 of 8`, a pipeline stage's layers) reads
layers 4 and 5 of the [8, ...] stacked tensor.

An optimizer state missing from the store starts at zero (gradient accumulators,
Adam's moments and step); a missing parameter or input is an error. stg.assign
reassembles the global tensor and writes it, into the layer's slice inside repeats.

Each program of a run (each pipeline stage) has a memory of its own: it sees its own
writes (`StoreWrites`), and the store takes them when every program has ended
(`merge_writes`). Two programs may write the same state only with the same value -
the copies of a tied weight on two stages - which the merge checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from stagec.dialects.stg.state import (
    AssignOp,
    InputOp,
    OptimizerStateOp,
    ParamOp,
    StateOp,
)
from stagec.runtime.interpreter.errors import InterpreterError
from stagec.runtime.interpreter.registry import implements
from stagec.runtime.interpreter.tensor_types import torch_dtype
from stagec.runtime.interpreter.values import Layout, assemble_global, shard_global


@dataclass
class StateStore:
    """Global tensors by name: parameters (Hugging Face names without the layer index),
    per-parameter optimizer states keyed (state, parameter), and batch inputs."""

    params: dict[str, torch.Tensor] = field(default_factory=dict)
    states: dict[tuple[str, str], torch.Tensor] = field(default_factory=dict)
    inputs: dict[str, torch.Tensor] = field(default_factory=dict)


def _describe_key(table: str, key) -> str:
    if table == "states":
        return f'optimizer state "{key[0]}" of "{key[1]}"'
    return f'{table[:-1]} "{key}"'


def _python_key(table: str, key) -> str:
    return f"{key!r}" if table == "states" else f'"{key}"'


def _slot(op: StateOp | AssignOp) -> tuple[str, object]:
    """(table, key): where the op's tensor lives in the StateStore."""
    if isinstance(op, ParamOp):
        return "params", op.tensor_name.data
    if isinstance(op, InputOp):
        return "inputs", op.tensor_name.data
    if isinstance(op, OptimizerStateOp):
        return "states", (op.tensor_name.data, op.param.data)
    name, param = op.key
    return ("params", name) if param is None else ("states", (name, param))


class StoreWrites:
    """One program's view of the store: its own writes over the shared store, which
    no program changes while others run (module doc). `layers[slot]` records which
    layers of a stacked state the program wrote, None for a whole write."""

    def __init__(self, store: StateStore):
        self.store = store
        self.tensors: dict[tuple[str, object], torch.Tensor] = {}
        self.layers: dict[tuple[str, object], set[tuple[int, ...]] | None] = {}
        # slots whose tensor here is this program's own copy, writable in place
        self.owned: set[tuple[str, object]] = set()

    def get(self, table: str, key) -> torch.Tensor | None:
        if (table, key) in self.tensors:
            return self.tensors[(table, key)]
        return getattr(self.store, table).get(key)

    def write(self, table: str, key, value: torch.Tensor) -> None:
        self.tensors[(table, key)] = value
        self.layers[(table, key)] = None
        self.owned.discard((table, key))

    def write_layer(self, table: str, key, indices: tuple[int, ...], stacked: tuple[int, ...],
                    value: torch.Tensor) -> None:
        slot = (table, key)
        if slot not in self.owned:
            # the first write copies the stacked tensor (or creates it), so that tensors
            # the caller or another program still holds are never changed in place
            current = self.get(table, key)
            if current is None:
                current = torch.zeros(stacked, dtype=value.dtype)
            elif tuple(current.shape) != stacked or current.dtype != value.dtype:
                raise InterpreterError(
                    f"{_describe_key(table, key)} is {_shape_str(current.shape)} {current.dtype} in the "
                    f"state store, but the program writes it per layer as {_shape_str(stacked)} {value.dtype}"
                )
            else:
                current = current.clone()
            self.tensors[slot] = current
            self.owned.add(slot)
            self.layers.setdefault(slot, set())
        self.tensors[slot][indices] = value
        if self.layers[slot] is not None:
            self.layers[slot].add(indices)


def merge_writes(store: StateStore, writes: dict[str, StoreWrites]) -> None:
    """Put what the programs of a run wrote into the store. A state several programs
    wrote must have been written the same way (whole, or per layer) and with equal
    values wherever their writes overlap."""
    slots: dict[tuple[str, object], list[str]] = {}
    for name, program in writes.items():
        for slot in program.tensors:
            slots.setdefault(slot, []).append(name)
    for (table, key), names in slots.items():
        tensors = getattr(store, table)
        first = writes[names[0]]
        if len(names) == 1:
            tensors[key] = first.tensors[(table, key)]
            continue
        what = _describe_key(table, key)
        whole = [writes[n].layers[(table, key)] is None for n in names]
        if any(whole) and not all(whole):
            raise InterpreterError(
                f"@{names[whole.index(True)]} writes {what} whole, but @{names[whole.index(False)]} per layer"
            )
        merged = first.tensors[(table, key)].clone()
        written: dict[tuple[int, ...], str] = {}
        for name in names:
            tensor, layers = writes[name].tensors[(table, key)], writes[name].layers[(table, key)]
            for index in [()] if layers is None else sorted(layers):
                part = tensor[index]
                if tuple(tensor.shape) != tuple(merged.shape):
                    raise InterpreterError(
                        f"@{names[0]} and @{name} write {what} as {_shape_str(merged.shape)} and {_shape_str(tensor.shape)}"
                    )
                if index in written and not torch.equal(merged[index], part):
                    layer = f" (layer {', '.join(map(str, index))})" if index else ""
                    raise InterpreterError(
                        f"@{written[index]} and @{name} both write {what}{layer} with different values: "
                        "the copies of a state held on several stages must stay equal"
                    )
                merged[index] = part
                written.setdefault(index, name)
        tensors[key] = merged


def _shape_str(shape) -> str:
    return f"[{', '.join(str(s) for s in shape)}]"


def _layers(op, ex) -> list[tuple[int, int]]:
    """(layer, stack size) per stack the op addresses: its own `layer K of N`, else the
    enclosing stg.repeats'."""
    explicit = op.explicit_layer()
    return [explicit] if explicit is not None else ex.layers


@implements(ParamOp, InputOp, OptimizerStateOp)
def read(op: StateOp, operands, ex):
    ty = op.result.type
    shape, dtype = ex.sizes.global_shape(ty), torch_dtype(ty.element_type)
    layers = _layers(op, ex)
    indices = tuple(i for i, _ in layers)
    stacked = tuple(n for _, n in layers) + shape
    table, key = _slot(op)
    stored = ex.writes.get(table, key)
    what = _describe_key(table, key)
    if stored is None:
        if table != "states":
            raise InterpreterError(
                f"{what} is not in the state store; pass it as StateStore({table}="
                f"{{{_python_key(table, key)}: <{dtype} tensor {_shape_str(stacked)}>}})"
                + (" (stacked per layer of the enclosing stg.repeat)" if indices else "")
            )
        value = torch.zeros(shape, dtype=dtype)
    else:
        if table == "inputs" and tuple(stored.shape) == shape:
            value = stored  # one input every layer reads
        elif tuple(stored.shape) != stacked:
            layers = f", stacked per layer of {len(indices)} enclosing stg.repeat(s)" if indices else ""
            raise InterpreterError(
                f"{what} is {_shape_str(stored.shape)} in the state store, but the program reads "
                f"it as {_shape_str(stacked)}{layers} ({ty.layout_str()} under {ex.sizes.bound(ty) or 'no bindings'})"
            )
        else:
            value = stored[indices] if indices else stored
        if value.dtype != dtype:
            raise InterpreterError(f"{what} is {value.dtype} in the state store, but the program reads it as {dtype}")
        # a copy: a later stg.assign may write the stored tensor in place
        value = value.clone()
    return [shard_global(value, Layout.of(ty, ex.sizes), ex.placement)]


@implements(AssignOp)
def assign(op: AssignOp, operands, ex):
    ty = op.value.type
    value = assemble_global(operands[0], Layout.of(ty, ex.sizes), ex.placement)
    table, key = _slot(op)
    layers = _layers(op, ex)
    if not layers:
        ex.writes.write(table, key, value)
        return []
    indices = tuple(i for i, _ in layers)
    stacked = tuple(n for _, n in layers) + tuple(value.shape)
    ex.writes.write_layer(table, key, indices, stacked, value)
    return []
