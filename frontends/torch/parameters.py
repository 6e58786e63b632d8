"""A torch module's parameters under the names and shapes of the program imported from
it: what `stagec run --frontend torch` starts from (docs/run.md).

convert-torch-to-stg (docs/torch-frontend.md) declares one `stg.param` per parameter
the forward uses, named by its FQN, with three changes, each undone here in one place:

- the layer fold: `model.layers.3.mlp.up_proj.weight` is layer 3 of the program's
  `model.layers.mlp.up_proj.weight`, stacked [L, ...] outer first (a one-layer list
  stays unrolled and keeps its index);
- a slice of a fused weight: `W[i]` is piece i of W along the one dim in which W is k
  times the piece (HF Mixtral's `experts.gate_up_proj` [E, 2 FE, H]: w1 is `[0]`, the
  rows 0..FE-1, w3 is `[1]`);
- a view: a weight declared in another shape of the same size is the stored tensor
  viewed in it, row-major as `Tensor.view` (GPT-2's c_attn [H, 3 N D] as [H, 3, N D]).

    tensors = program_parameters(model, parameter_shapes(forward))   # {name: [L, ...]}

The result holds every parameter of the program, by the program's name, in its
global stacked shape: written to a safetensors file it is what
runtime/exec/weights.py's `SafetensorsWeights` reads and each rank shards as the
program's types say. A module parameter the program does not use, a program parameter
the module lacks and a shape none of the above explains are a `ParameterError` (one
line). `load_state(model, path)` loads a safetensors file of the module's own
state_dict into it first (`--weights`), refusing missing, unknown and misshapen
tensors the same way.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from stagec.frontends.templates import ConfigError

__all__ = ["ParameterError", "load_state", "program_parameters"]

_SLICE = re.compile(r"^(?P<base>.*)\[(?P<index>\d+)\]$")
_LIST_INDEX = re.compile(r"\.(\d+)(?=\.)")  # `.3` of `model.layers.3.mlp`


class ParameterError(ConfigError):
    """The module's parameters and the program's do not correspond: one line."""


def _shape(shape) -> str:
    return str(list(shape))


def program_parameters(model, shapes: Mapping[str, tuple[tuple[int, ...], tuple[int, ...]]]) -> dict:
    """{program parameter: its global stacked tensor} of `model` (module doc).
    `shapes`: {name: (layer stack, global shape of one)}, `parameter_shapes` of the
    forward program imported from `model`."""
    import torch

    named = {fqn: p.detach() for fqn, p in model.named_parameters()}  # a tied weight once, by its first name
    by_layer: dict[str, dict[int, str]] = {}  # the FQN without one list index -> {index: FQN}
    for fqn in named:
        for m in _LIST_INDEX.finditer(fqn):
            by_layer.setdefault(fqn[: m.start()] + fqn[m.end():], {})[int(m.group(1))] = fqn
    out, used = {}, set()
    for name, (stack, one) in shapes.items():
        sliced = _SLICE.match(name)
        base, piece = (sliced["base"], int(sliced["index"])) if sliced else (name, None)
        if len(stack) > 1:
            raise ParameterError(f"the program's parameter {name} is stacked {len(stack)} deep ({_shape(stack)}); "
                                 "a torch module's layers stack one deep")
        if stack:
            group = by_layer.get(base, {})
            fqns = [group.get(i) for i in range(stack[0])]
        else:
            fqns = [base if base in named else None]
        if None in fqns:
            raise ParameterError(f"the program's parameter {name} {_shape(stack + one)} is no parameter of the module "
                                 f"(looked for {base if not stack else _layer_name(base, by_layer, fqns)})")
        used.update(fqns)
        tensors = [_as_declared(name, fqn, named[fqn], one, piece) for fqn in fqns]
        out[name] = (torch.stack(tensors) if stack else tensors[0]).contiguous()
    unused = [fqn for fqn in named if fqn not in used]
    if unused:
        raise ParameterError(f"the module's parameter {unused[0]} {_shape(named[unused[0]].shape)} is not in the "
                             "imported program: its forward(input_ids, labels) does not use it, so the run would not "
                             "train it (remove it, or use it in the forward)")
    return out


def _layer_name(base: str, by_layer: Mapping[str, Mapping[int, str]], fqns: list) -> str:
    """The FQN of the first layer missing from a stacked parameter."""
    missing = fqns.index(None)
    known = next((f for f in fqns if f is not None), None)
    if known is None:
        return f"{base} with a layer index"
    return _LIST_INDEX.sub(lambda m: f".{missing}", known, count=1)


def _as_declared(name: str, fqn: str, tensor, one: tuple[int, ...], piece: int | None):
    """One layer's tensor of module parameter `fqn` as the program declares `name`."""
    have = tuple(tensor.shape)
    if piece is not None:
        differ = [d for d, (a, b) in enumerate(zip(have, one)) if a != b] if len(have) == len(one) else []
        if len(differ) == 1 and have[differ[0]] % one[differ[0]] == 0 and piece < have[differ[0]] // one[differ[0]]:
            d = differ[0]
            return tensor.narrow(d, piece * one[d], one[d])
        raise ParameterError(f"the program's parameter {name} is {_shape(one)} per layer, which is no piece of the "
                             f"module's {fqn} {_shape(have)}")
    if have == one:
        return tensor
    if tensor.numel() == math.prod(one):
        return tensor.reshape(one)
    raise ParameterError(f"the module's parameter {fqn} is {_shape(have)}, but the program's parameter {name} is "
                         f"{_shape(one)} per layer")


def load_state(model, path: str) -> None:
    """The tensors of a safetensors file of `model`'s state_dict (its own names) into
    `model`: every parameter must be there in its shape; a tensor the module does not
    have is refused."""
    import torch
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        state = load_file(path)
    except FileNotFoundError:
        raise ParameterError(f"{path}: no such file (a .safetensors file of the module's state_dict)") from None
    except (OSError, SafetensorError) as error:
        raise ParameterError(f"{path}: not a safetensors file: {error}") from None
    own = model.state_dict()
    for key in state:
        if key not in own:
            raise ParameterError(f"{path}: the tensor {key} is no parameter or buffer of the module")
    for fqn, p in model.named_parameters():
        if fqn not in state:
            raise ParameterError(f"{path}: no tensor {fqn} (the module's parameter, {_shape(p.shape)})")
    for key, tensor in state.items():
        if tuple(tensor.shape) != tuple(own[key].shape):
            raise ParameterError(f"{path}: {key} is {_shape(tensor.shape)}, but the module's {key} is "
                                 f"{_shape(own[key].shape)}")
    with torch.no_grad():
        for key, tensor in state.items():
            own[key].copy_(tensor.to(own[key].dtype))
