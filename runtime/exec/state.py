"""One rank's named state: its shards of the parameters and optimizer states, and its
checkpoint.

The interpreter's store holds global tensors and cuts a rank's shard at every read;
a real rank holds only its shard. A parameter's shard is cut once, at its first read,
from the global initial weight (weights.py: the same on every rank) by the layout the
read's type gives (stage.md §IV-C: split dims are blocks, a partial-sum axis puts the
value on coordinate 0 and zeros elsewhere); a state the program has not written starts
at zero, as in the interpreter. Inside stg.repeats a state is held stacked per layer
([L, ...local]) and a read or stg.assign addresses its layer.

A read returns a copy, because a later stg.assign writes the layer in place.

Checkpoint: `save(path)` / `load(path)` write and read one rank's tensors (torch.save
to a temporary name, then rename), keyed by the tables' keys.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import torch

from stagec.dialects.stg.attributes import DistributedTensorType
from stagec.runtime.interpreter.errors import InterpreterError
from stagec.runtime.interpreter.tensor_types import Sizes, torch_dtype
from stagec.runtime.interpreter.values import Layout, SimulatedMesh, local_part

InitialWeight = Callable[[str, tuple[int, ...], torch.dtype], torch.Tensor]


def shard_stacked(tensor: torch.Tensor, layout: Layout, mesh: SimulatedMesh, rank: int, depth: int) -> torch.Tensor:
    """This rank's local of every layer of a tensor stacked `depth` dims deep."""
    for dim, axes in enumerate(layout.splits):
        if axes:
            tensor = local_part(tensor, depth + dim, axes, mesh, rank)
    if any(mesh.coord(rank, a) for a in layout.partial):
        tensor = torch.zeros_like(tensor)
    return tensor.contiguous()


class LocalState:
    """This rank's parameters and optimizer states (module doc)."""

    def __init__(self, mesh: SimulatedMesh, rank: int, initial: InitialWeight):
        self.mesh, self.rank, self.initial = mesh, rank, initial
        self.tables: dict[str, dict] = {"params": {}, "states": {}}

    def read(self, table: str, key, ty: DistributedTensorType, sizes: Sizes,
             layers: Sequence[tuple[int, int]]) -> torch.Tensor:
        local_shape, dtype = sizes.local_shape(ty), torch_dtype(ty.element_type)
        stacked = tuple(n for _, n in layers)
        held = self.tables[table].get(key)
        if held is None:
            if table == "params":
                whole = self.initial(key, stacked + sizes.global_shape(ty), dtype)
                held = shard_stacked(whole, Layout.of(ty), self.mesh, self.rank, len(stacked))
            else:
                held = torch.zeros(stacked + local_shape, dtype=dtype)
            self.tables[table][key] = held
        if tuple(held.shape) != stacked + local_shape or held.dtype != dtype:
            raise InterpreterError(
                f"{_describe(table, key)} is held as {list(held.shape)} {held.dtype} on rank {self.rank}, but the "
                f"program reads it as {list(stacked + local_shape)} {dtype}"
            )
        index = tuple(i for i, _ in layers)
        return held[index].clone() if index else held.clone()

    def write(self, table: str, key, local: torch.Tensor, layers: Sequence[tuple[int, int]]) -> None:
        if not layers:
            self.tables[table][key] = local
            return
        stacked = tuple(n for _, n in layers)
        held = self.tables[table].get(key)
        if held is None:
            held = self.tables[table][key] = torch.zeros(stacked + tuple(local.shape), dtype=local.dtype)
        held[tuple(i for i, _ in layers)] = local

    # -- checkpoint ----------------------------------------------------------------------
    def save(self, path: str, meta: dict) -> None:
        tmp = f"{path}.tmp{os.getpid()}"
        torch.save({"meta": meta, "params": self.tables["params"],
                    "states": {"\x00".join(k): v for k, v in self.tables["states"].items()}}, tmp)
        os.replace(tmp, path)

    def load(self, path: str) -> dict:
        saved = torch.load(path, weights_only=True)
        self.tables["params"] = dict(saved["params"])
        self.tables["states"] = {tuple(k.split("\x00")): v for k, v in saved["states"].items()}
        return saved["meta"]


def _describe(table: str, key) -> str:
    return f'optimizer state "{key[0]}" of "{key[1]}"' if table == "states" else f'parameter "{key}"'
