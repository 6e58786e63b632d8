"""Shared helpers of the torch frontend tests: stacking a torch model's per-layer
parameters into the [L, ...] tensors the interpreter reads (docs/training-ir.md)."""

from __future__ import annotations

import re

_LAYER = re.compile(r"^(?P<prefix>[A-Za-z_][\w.]*?)\.(?P<index>\d+)\.")


def stacked_state(model, grad: bool = False):
    """{stg parameter name: tensor}, per-layer parameters stacked over the layer index."""
    import torch

    groups: dict[str, dict[int, torch.Tensor]] = {}
    for name, p in model.named_parameters():
        value = (p.grad if p.grad is not None else torch.zeros_like(p)) if grad else p.detach()
        m = _LAYER.match(name)
        if m:
            key = f"{m['prefix']}.{name[m.end():]}"
            groups.setdefault(key, {})[int(m["index"])] = value
        else:
            groups.setdefault(name, {})[-1] = value
    out = {}
    for key, entries in groups.items():
        out[key] = entries[-1] if -1 in entries else torch.stack([entries[i] for i in sorted(entries)])
    return out


def split_fused(state, names):
    """Adds the halves of fused expert weights the program names `W[i]` (HF's
    experts.gate_up_proj [.., E, 2*FE, H] viewed [.., E, 2, FE, H], slice i)."""
    for name in names:
        if name.endswith("]") and "[" in name:
            base, index = name[:-1].split("[")
            whole = state[base]
            state[name] = whole.unflatten(-2, (2, -1)).select(-3, int(index)).contiguous()
    return state
