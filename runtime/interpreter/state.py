"""Named state: the store of global tensors a program reads and writes.

Reads give each rank its shard of the global tensor. A read inside nested stg.repeats
names one tensor per iteration: the store holds it stacked, outer repeat first
(`[L, out, in]`), and iteration i addresses layer i (count-1-i under `reverse`);
stg.microbatch iterations do not index state. An input read inside a repeat may also
be one tensor shared by every layer (the rotary angles), which its shape tells.

An optimizer state missing from the store starts at zero (gradient accumulators,
Adam's moments and step); a missing parameter or input is an error. stg.assign
reassembles the global tensor and writes it, into the layer's slice inside repeats.
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


def _shape_str(shape) -> str:
    return f"[{', '.join(str(s) for s in shape)}]"


@implements(ParamOp, InputOp, OptimizerStateOp)
def read(op: StateOp, operands, ex):
    ty = op.result.type
    shape, dtype = ex.sizes.global_shape(ty), torch_dtype(ty.element_type)
    indices = tuple(i for i, _ in ex.layers)
    stacked = tuple(n for _, n in ex.layers) + shape
    table, key = _slot(op)
    stored = getattr(ex.store, table).get(key)
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
    return [shard_global(value, Layout.of(ty), ex.placement)]


@implements(AssignOp)
def assign(op: AssignOp, operands, ex):
    ty = op.value.type
    value = assemble_global(operands[0], Layout.of(ty), ex.placement)
    table, key = _slot(op)
    tensors = getattr(ex.store, table)
    if not ex.layers:
        tensors[key] = value
        return []
    indices = tuple(i for i, _ in ex.layers)
    stacked = tuple(n for _, n in ex.layers) + tuple(value.shape)
    if (table, key) not in ex.owned_state:
        # the first write of this run copies the stacked tensor (or creates it), so
        # that tensors the caller still holds are never changed in place
        current = tensors.get(key)
        if current is None:
            current = torch.zeros(stacked, dtype=value.dtype)
        elif tuple(current.shape) != stacked or current.dtype != value.dtype:
            raise InterpreterError(
                f"{_describe_key(table, key)} is {_shape_str(current.shape)} {current.dtype} in the "
                f"state store, but the program writes it per layer as {_shape_str(stacked)} {value.dtype}"
            )
        else:
            current = current.clone()
        tensors[key] = current
        ex.owned_state.add((table, key))
    tensors[key][indices] = value
    return []
