"""The tensors of a Di-PS layer on the wire, and the checks before anything is applied.

A layer is the set of parameters whose names start with a `Layer.prefix` of the plan
(the longest matching prefix wins, so `model.layers.1` does not capture
`model.layers.10`). `LayerSpec` is what a layer must look like: names, dtypes, shapes,
in a fixed order. A data message's header lists the tensors it carries; `check_tensors`
compares that list and every payload frame's size with the spec before a byte of the
payload is read (issue 19, item 5). The header also carries the payload's seal
(`payload_alg`, `payload_nonce`, `payload_mac`: `auth.Authenticator.seal_payload`),
checked after these checks, in the pass that copies the payload into a pool buffer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from stagec.runtime.ps.plan import Layer

__all__ = ["LayerSpec", "WireError", "check_tensors", "encode_header", "group_by_layer", "layer_of"]


class WireError(Exception):
    """A message whose sizes, shapes, dtypes or version do not match what is expected."""


@dataclass(frozen=True)
class LayerSpec:
    names: tuple[str, ...]
    dtypes: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]

    @property
    def nbytes(self) -> tuple[int, ...]:
        return tuple(int(np.prod(s, dtype=np.int64)) * np.dtype(d).itemsize for s, d in zip(self.shapes, self.dtypes))

    @staticmethod
    def of(tensors: Mapping[str, np.ndarray]) -> LayerSpec:
        names = tuple(sorted(tensors))
        return LayerSpec(names, tuple(str(tensors[n].dtype) for n in names),
                         tuple(tuple(tensors[n].shape) for n in names))


def layer_of(name: str, layers: Sequence[Layer]) -> int:
    """The index of the layer that owns parameter `name` (longest prefix match)."""
    best, length = -1, -1
    for index, layer in enumerate(layers):
        p = layer.prefix
        if (name == p or name.startswith(p + ".") or p == "") and len(p) > length:
            best, length = index, len(p)
    if best < 0:
        raise WireError(f"parameter '{name}' belongs to no layer of the plan (prefixes: "
                        f"{', '.join(l.prefix for l in layers)})")
    return best


def group_by_layer(params: Mapping[str, np.ndarray], layers: Sequence[Layer]) -> list[dict[str, np.ndarray]]:
    """The parameters of each plan layer, as {name: array}."""
    groups: list[dict[str, np.ndarray]] = [{} for _ in layers]
    for name, value in params.items():
        groups[layer_of(name, layers)][name] = value
    for layer, group in zip(layers, groups):
        if not group:
            raise WireError(f"layer '{layer.prefix}' of the plan matches no parameter of the model")
    return groups


def encode_header(spec: LayerSpec) -> list[dict]:
    return [{"name": n, "dtype": d, "shape": list(s)} for n, d, s in zip(spec.names, spec.dtypes, spec.shapes)]


def check_tensors(header: Mapping, payload: Sequence, spec: LayerSpec) -> None:
    """Raise WireError unless the header's tensors and the payload frames are exactly
    the spec's names, dtypes, shapes and byte sizes."""
    tensors = header.get("tensors")
    if not isinstance(tensors, list) or len(tensors) != len(spec.names) or len(payload) != len(spec.names):
        raise WireError(f"expected {len(spec.names)} tensors, got {len(tensors) if isinstance(tensors, list) else 0} "
                        f"described and {len(payload)} sent")
    for t, name, dtype, shape, nbytes, frame in zip(tensors, spec.names, spec.dtypes, spec.shapes, spec.nbytes,
                                                    payload):
        if not isinstance(t, dict) or t.get("name") != name:
            raise WireError(f"expected tensor '{name}', got {t.get('name') if isinstance(t, dict) else t!r}")
        if t.get("dtype") != dtype:
            raise WireError(f"tensor '{name}': dtype {t.get('dtype')}, expected {dtype}")
        if tuple(t.get("shape", ())) != shape:
            raise WireError(f"tensor '{name}': shape {t.get('shape')}, expected {list(shape)}")
        if len(memoryview(frame).cast("B")) != nbytes:
            raise WireError(f"tensor '{name}': {len(memoryview(frame).cast('B'))} bytes, expected {nbytes}")
