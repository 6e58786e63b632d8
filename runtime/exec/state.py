"""One rank's named state: its shards of the parameters and optimizer states, and its
checkpoint.

The interpreter's store holds global tensors and cuts a rank's shard at every read;
a real rank holds only its shard. A parameter's shard is cut once, at its first read,
from the global initial weight (weights.py: the same on every rank) by the layout the
read's type gives (stage.md §IV-C: split dims are blocks, a partial-sum axis puts the
value on coordinate 0 and zeros elsewhere); a state the program has not written starts
at zero, as in the interpreter. Inside stg.repeats each layer's state is an entry of
its own (the layer index of the read or stg.assign), since one program may hold
layers of a state in different layouts at once (ZeRO's optimizer phase writes each
layer's gradient shard, then each layer's gathered parameter).

Each entry keeps the layout it was written in. A read in another layout is served
when it only cuts the held local further (a whole dim that the read splits); any
other change would need communication, which the program's own collectives do
before their stg.assign, so meeting one is an error naming the state. A read returns
the held tensor itself: stg.assign replaces an entry, it never writes in place.

Every entry lives on the rank's device (`device`, the CPU by default); the initial
weights are cut on the host and the shard moved there.

Checkpoint: `save(path)` / `load(path)` write and read one rank's entries with their
layouts (torch.save to a temporary name, then rename); a load puts them on the
rank's device, whichever device saved them.
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

    def __init__(self, mesh: SimulatedMesh, rank: int, initial: InitialWeight,
                 device: torch.device = torch.device("cpu")):
        self.mesh, self.rank, self.initial, self.device = mesh, rank, initial, device
        # (table, key, layer indices) -> (this rank's local, its layout)
        self.entries: dict[tuple, tuple[torch.Tensor, Layout]] = {}
        self._whole: dict[tuple, torch.Tensor] = {}  # a stacked initial weight, while its layers are cut

    def read(self, table: str, key, ty: DistributedTensorType, sizes: Sizes,
             layers: Sequence[tuple[int, int]]) -> torch.Tensor:
        index = tuple(i for i, _ in layers)
        layout, local_shape, dtype = Layout.of(ty), sizes.local_shape(ty), torch_dtype(ty.element_type)
        entry = self.entries.get((table, key, index))
        if entry is None:
            if table == "params":
                stacked = tuple(n for _, n in layers)
                whole = self._whole.get((key, stacked))
                if whole is None:
                    whole = self._whole[(key, stacked)] = self.initial(key, stacked + sizes.global_shape(ty), dtype)
                # the initial weights are made on the host (the same values on every
                # device); only this rank's shard moves to its device
                local = shard_stacked(whole[index] if index else whole, layout, self.mesh, self.rank, 0)
                local = local.to(self.device)
                self._cut(key, stacked)
            else:
                local = torch.zeros(local_shape, dtype=dtype, device=self.device)
            entry = self.entries[(table, key, index)] = (local, layout)
        local, held = entry
        if held != layout:
            local = self._refine(local, held, layout, table, key, index)
        if tuple(local.shape) != local_shape or local.dtype != dtype:
            raise InterpreterError(
                f"{_describe(table, key, index)} is held as {list(local.shape)} {local.dtype} on rank {self.rank}, "
                f"but the program reads it as {list(local_shape)} {dtype}"
            )
        return local

    def _cut(self, key, stacked: tuple[int, ...]) -> None:
        """Forget a stacked initial weight once every layer has its entry."""
        count = 1
        for n in stacked:
            count *= n
        if sum(1 for t, k, _ in self.entries if t == "params" and k == key) + 1 >= count:
            self._whole.pop((key, stacked), None)

    def _refine(self, local: torch.Tensor, held: Layout, wanted: Layout, table, key, index) -> torch.Tensor:
        """A read in another layout than the one written: only a local slice (the held
        tensor whole where the read splits) needs no communication."""
        if held.partial == wanted.partial and all(
            h == w[: len(h)] for h, w in zip(held.splits, wanted.splits, strict=True)
        ):
            for dim, (h, w) in enumerate(zip(held.splits, wanted.splits)):
                if w[len(h):]:
                    local = local_part(local, dim, w[len(h):], self.mesh, self.rank)
            return local.contiguous()
        raise InterpreterError(
            f"{_describe(table, key, index)} was written as {_layout(held)} and is read as {_layout(wanted)}: "
            "a layout change of a state needs communication, which the program must do before its stg.assign"
        )

    def write(self, table: str, key, local: torch.Tensor, layout: Layout, layers: Sequence[tuple[int, int]]) -> None:
        self.entries[(table, key, tuple(i for i, _ in layers))] = (local, layout)

    # -- checkpoint ----------------------------------------------------------------------
    def save(self, path: str, meta: dict) -> None:
        tmp = f"{path}.tmp{os.getpid()}"
        entries = [(table, [key] if isinstance(key, str) else list(key), list(index), tensor,
                    [list(s) for s in layout.splits], sorted(layout.partial))
                   for (table, key, index), (tensor, layout) in self.entries.items()]
        torch.save({"meta": meta, "entries": entries}, tmp)
        os.replace(tmp, path)

    def load(self, path: str) -> dict:
        saved = torch.load(path, weights_only=True, map_location=self.device)
        self.entries = {}
        for table, key, index, tensor, splits, partial in saved["entries"]:
            key = key[0] if table == "params" else tuple(key)
            self.entries[(table, key, tuple(index))] = (tensor, Layout(tuple(tuple(s) for s in splits), frozenset(partial)))
        return saved["meta"]


def _layout(layout: Layout) -> str:
    dims = ", ".join("/".join(s) if s else "whole" for s in layout.splits)
    return f"[{dims}]" + (f" partial over {', '.join(sorted(layout.partial))}" if layout.partial else "")


def _describe(table: str, key, index: tuple[int, ...]) -> str:
    what = f'optimizer state "{key[0]}" of "{key[1]}"' if table == "states" else f'parameter "{key}"'
    return what + (f" (layer {', '.join(map(str, index))})" if index else "")
