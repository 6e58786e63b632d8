"""Per-rank values and the layouts that relate them to global tensors.

Every SSA value is held as a `PerRank` list: the local tensor of each simulated rank,
in rank order. A value's stg type says how those locals make up one global tensor
(stage.md §IV-C): a dim split over axes is cut into equal blocks, the block of a rank
chosen row-major by its coordinates on those axes (major to minor, as the split lists
them); over a partial-sum axis the global tensor is the sum of the ranks' locals; over
any other axis every rank holds a duplicate.

`shard` cuts a global tensor into a rank's local, `assemble` puts a group of locals
back together, and `regroup` does both within each communicator group - which is
what every collective and reshard is, seen from the global tensor.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from math import prod

import torch

from stagec.dialects.stg.attributes import DistributedTensorType
from stagec.runtime.interpreter.errors import InterpreterError

PerRank = list[torch.Tensor | None]
"""One SSA value: the local tensor of every simulated rank, indexed by rank (None on
ranks outside the program that computes it)."""


@dataclass
class Token:
    """An async op's completion; `payload` is the value stg.wait yields, if any."""

    payload: PerRank | None


class SimulatedMesh:
    """The ranks the interpreter simulates: mesh axes with numeric sizes, numbered
    row-major in declaration order with the last axis fastest (stg.mesh's order).
    No mesh, or every axis of size 1, is the one-rank global view."""

    def __init__(self, axes: Sequence[str] = (), sizes: Sequence[int] = ()):
        self.axes = tuple(axes)
        self.sizes = dict(zip(self.axes, sizes, strict=True))
        self.num_ranks = prod(sizes)
        self.coords: list[dict[str, int]] = []
        for rank in range(self.num_ranks):
            coords, rest = {}, rank
            for axis in reversed(self.axes):
                rest, coords[axis] = divmod(rest, self.sizes[axis])
            self.coords.append(coords)
        self.groups = cache(self._groups)

    @property
    def is_global_view(self) -> bool:
        return self.num_ranks == 1

    def size(self, axis: str) -> int:
        if axis not in self.sizes:
            raise InterpreterError(
                f"mesh axis '{axis}' is not declared by the module's stg.mesh "
                f"({', '.join(self.axes) or 'no mesh'})"
            )
        return self.sizes[axis]

    def coord(self, rank: int, axis: str) -> int:
        self.size(axis)
        return self.coords[rank][axis]

    def rank_of(self, coords: Mapping[str, int]) -> int:
        index = 0
        for axis in self.axes:
            index = index * self.sizes[axis] + coords[axis]
        return index

    def parts(self, axes: Iterable[str]) -> int:
        """How many blocks the axes cut a dim into."""
        return prod(self.size(a) for a in axes)

    def index_over(self, rank: int, axes: Sequence[str]) -> int:
        """The rank's position among the blocks the axes cut (row-major, first axis major)."""
        index = 0
        for axis in axes:
            coord = self.coord(rank, axis)
            index = index * self.sizes[axis] + coord
        return index

    def _groups(self, axes: tuple[str, ...]) -> tuple[tuple[int, ...], ...]:
        """The communicator groups along `axes`: ranks equal on every other axis."""
        others = [a for a in self.axes if a not in axes]
        by_key: dict[tuple[int, ...], list[int]] = {}
        for rank, coords in enumerate(self.coords):
            by_key.setdefault(tuple(coords[a] for a in others), []).append(rank)
        return tuple(tuple(g) for g in by_key.values())

    def __repr__(self) -> str:
        axes = ", ".join(f"{a} = {s}" for a, s in self.sizes.items())
        return f"SimulatedMesh([{axes}])"


@dataclass(frozen=True)
class Layout:
    """How a type distributes a tensor: per dim its split axes, and the partial axes."""

    splits: tuple[tuple[str, ...], ...]
    partial: frozenset[str]
    # per dim: None, or a padded dim's (per-rank extent, global size) - the size None
    # inside a group that does not span all of the dim's axes (nothing to trim there)
    padded: tuple[tuple[int, int | None] | None, ...] | None = None

    @staticmethod
    def of(ty: DistributedTensorType, sizes=None) -> Layout:
        """`sizes` (a tensor_types.Sizes) evaluates a padded dim's global size."""
        padded = tuple(
            None if not d.padded_extent else (d.padded_extent, sizes.eval(d.expr, f"the size of {ty.layout_str()}:") if sizes else None)
            for d in ty.dims.data
        )
        return Layout(ty.splits, ty.partial_axes, padded if any(padded) else None)

    def pad(self, dim: int) -> tuple[int, int | None] | None:
        return self.padded[dim] if self.padded else None

    @property
    def axes(self) -> frozenset[str]:
        return frozenset(a for s in self.splits for a in s) | self.partial

    def within(self, axes: Iterable[str]) -> Layout:
        """The layout as seen inside a communicator group along `axes`: a rank's local
        is then a block of the group's tensor (the axes are the minor end of each
        split, which the collectives' verifiers guarantee)."""
        keep = set(axes)
        splits = tuple(tuple(a for a in s if a in keep) for s in self.splits)
        padded = None
        if self.padded:
            # a group spanning a padded dim's axes holds it padded (trimmed when put
            # together); one along some of them holds a block of the padded whole
            padded = tuple(
                None if p is None or not inner else (p[0], p[1] if inner == full else None)
                for p, inner, full in zip(self.padded, splits, self.splits)
            )
        return Layout(splits, self.partial & keep, padded)


def local_part(
    tensor: torch.Tensor, dim: int, axes: Sequence[str], mesh: SimulatedMesh, rank: int, padded: int | None = None
) -> torch.Tensor:
    """The rank's block of a dim that `axes` split (stage.md Fig. 6's free local slice);
    of a padded dim, the block of `padded` elements of the dim zero-padded to
    parts * padded (docs/sharding.md, "Uneven shards")."""
    parts = mesh.parts(axes)
    if padded is not None:
        short = padded * parts - tensor.shape[dim]
        if short < 0 or short >= padded and tensor.shape[dim]:
            raise InterpreterError(
                f"dim {dim} of size {tensor.shape[dim]} is not padded to {padded} per rank over "
                f"[{', '.join(axes)}] ({parts} parts): {padded} is not its ceiling"
            )
        if short:
            pad = list(tensor.shape)
            pad[dim] = short
            tensor = torch.cat([tensor, tensor.new_zeros(pad)], dim)
        return tensor.narrow(dim, mesh.index_over(rank, axes) * padded, padded)
    if parts == 1:
        return tensor
    size, rest = divmod(tensor.shape[dim], parts)
    if rest:
        raise InterpreterError(
            f"dim {dim} of size {tensor.shape[dim]} cannot be split evenly over "
            f"[{', '.join(axes)}] ({parts} parts)"
        )
    return tensor.narrow(dim, mesh.index_over(rank, axes) * size, size)


def shard(tensor: torch.Tensor, layout: Layout, mesh: SimulatedMesh, rank: int) -> torch.Tensor:
    """The local a rank holds of a global (or group) tensor. Over a partial-sum axis the
    rank at coordinate 0 holds the value and the others zeros, so the sum is exact."""
    for dim, axes in enumerate(layout.splits):
        if axes:
            pad = layout.pad(dim)
            tensor = local_part(tensor, dim, axes, mesh, rank, pad[0] if pad else None)
    if any(mesh.coord(rank, a) for a in layout.partial):
        tensor = torch.zeros_like(tensor)
    return tensor


def assemble(
    locals_: Mapping[int, torch.Tensor], layout: Layout, mesh: SimulatedMesh, group_axes: Iterable[str]
) -> torch.Tensor:
    """The tensor a group of ranks (varying along `group_axes`) holds together: split
    dims concatenated, partial sums summed, duplicates taken once (from coordinate 0).
    Differentiable: built with torch.cat and +."""
    duplicated = [a for a in group_axes if a not in layout.axes]
    blocks: dict[tuple[int, ...], torch.Tensor] = {}
    for rank, local in locals_.items():
        if any(mesh.coord(rank, a) for a in duplicated):
            continue
        key = tuple(mesh.index_over(rank, axes) for axes in layout.splits)
        blocks[key] = local if key not in blocks else blocks[key] + local
    counts = [mesh.parts(axes) for axes in layout.splits]

    def concat(prefix: tuple[int, ...]) -> torch.Tensor:
        dim = len(prefix)
        if dim == len(counts):
            return blocks[prefix]
        pieces = [concat((*prefix, i)) for i in range(counts[dim])]
        whole = pieces[0] if len(pieces) == 1 else torch.cat(pieces, dim)
        pad = layout.pad(dim)
        if pad and pad[1] is not None:  # a padded dim put back together: drop the padding
            whole = whole.narrow(dim, 0, pad[1])
        return whole

    return concat(())


class Placement:
    """The ranks a program runs on: those whose coordinates match `fixed` (every rank
    when it is empty), e.g. {"pp": 1} for a pipeline stage. Its values spread over the
    other axes."""

    def __init__(self, mesh: SimulatedMesh, fixed: Mapping[str, int] | None = None):
        self.mesh, self.fixed = mesh, dict(fixed or {})
        for axis, coord in self.fixed.items():
            if not 0 <= coord < mesh.size(axis):
                raise InterpreterError(f"coordinate {axis} = {coord} is outside {mesh}")
        self.ranks = [r for r, c in enumerate(mesh.coords) if all(c[a] == v for a, v in self.fixed.items())]
        self.axes = tuple(a for a in mesh.axes if a not in self.fixed)

    def __repr__(self) -> str:
        return f"ranks with {', '.join(f'{a} = {v}' for a, v in self.fixed.items()) or 'any coordinates'}"


def assemble_global(value: PerRank, layout: Layout, placement: Placement) -> torch.Tensor:
    """The global tensor the program's ranks hold together."""
    return assemble({r: value[r] for r in placement.ranks}, layout, placement.mesh, placement.axes)


def shard_global(tensor: torch.Tensor, layout: Layout, placement: Placement) -> PerRank:
    out: PerRank = [None] * placement.mesh.num_ranks
    for rank in placement.ranks:
        out[rank] = shard(tensor, layout, placement.mesh, rank)
    return out


def groups_within(placement: Placement, axes: Sequence[str]) -> list[tuple[int, ...]]:
    """The communicator groups along `axes` among the program's ranks."""
    ranks = set(placement.ranks)
    groups = []
    for group in placement.mesh.groups(tuple(axes)):
        inside = [r for r in group if r in ranks]
        if inside and len(inside) != len(group):
            raise InterpreterError(
                f"a collective over [{', '.join(axes)}] would join ranks of this program with "
                f"ranks outside it ({', '.join(f'{a} = {v}' for a, v in placement.fixed.items())})"
            )
        if inside:
            groups.append(group)
    return groups


def regroup(value: PerRank, src: Layout, dst: Layout, axes: Sequence[str], placement: Placement) -> PerRank:
    """Within each group along `axes`, assemble the group's tensor from the `src`
    layout and re-cut it into the `dst` layout: all_gather, reduce_scatter,
    all_reduce, all_to_all and reshard are all this, with different layouts."""
    axes, mesh = tuple(axes), placement.mesh
    src_in, dst_in = src.within(axes), dst.within(axes)
    out: PerRank = [None] * mesh.num_ranks
    for group in groups_within(placement, axes):
        whole = assemble({r: value[r] for r in group}, src_in, mesh, axes)
        for rank in group:
            out[rank] = shard(whole, dst_in, mesh, rank)
    return out
