"""Ranks, mesh coordinates and communicator groups for Chakra emission.

A rank's coordinates follow `stg.mesh` (dialects/stg/mesh.py): row-major over the
axes in declaration order, the last axis varying fastest. A collective over axes A in
rank r's program runs in the group of ranks that share r's coordinates on every other
axis; a `stg.all_reduce_stages ... among [..]` runs among the listed coordinates of
its axis only. Groups are numbered 1, 2, ... in the order the emitter first asks for
them (axes sets in program order, groups of one set by their smallest rank), which is
what `comm_group.json` lists.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from math import prod


@dataclass
class RankSpace:
    """The ranks of one mesh: sizes per axis and strides (mesh.py's order)."""

    axes: tuple[str, ...]
    sizes: tuple[int, ...]
    _groups: dict = field(default_factory=dict, repr=False)
    _ids: list = field(default_factory=list, repr=False)  # group id -> ranks

    @classmethod
    def of(cls, axes: Sequence[str], sizes: Sequence[int]) -> RankSpace:
        return cls(tuple(axes), tuple(int(s) for s in sizes))

    @property
    def world(self) -> int:
        return prod(self.sizes)

    def stride(self, axis: str) -> int:
        i = self.axes.index(axis)
        return prod(self.sizes[i + 1:])

    def coord(self, rank: int, axis: str) -> int:
        i = self.axes.index(axis)
        return rank // prod(self.sizes[i + 1:]) % self.sizes[i]

    def coords(self, rank: int) -> tuple[int, ...]:
        out = []
        for size in reversed(self.sizes):
            rank, c = divmod(rank, size)
            out.append(c)
        return tuple(reversed(out))

    def ranks_where(self, fixed: Mapping[str, int]) -> list[int]:
        """Every rank whose coordinate on each axis of `fixed` is the given one."""
        return [r for r in range(self.world) if all(self.coord(r, a) == c for a, c in fixed.items())]

    def peer(self, rank: int, axis: str, coordinate: int) -> int:
        """`rank` with its coordinate on `axis` replaced."""
        return rank + (coordinate - self.coord(rank, axis)) * self.stride(axis)

    # -- communicator groups ------------------------------------------------------------

    def group_size(self, axes: Sequence[str], among: Sequence[int] | None = None) -> int:
        if among is not None:
            return len(among)
        return prod(self.sizes[self.axes.index(a)] for a in axes)

    def group_id(self, rank: int, axes: Sequence[str], among: Sequence[int] | None = None) -> int:
        """The comm_group.json key (>= 1) of the group `rank` uses for a collective over
        `axes` (or among the listed coordinates of the one axis in `axes`)."""
        key = (frozenset(axes), tuple(among) if among is not None else None)
        table = self._groups.get(key)
        if table is None:
            table = self._groups[key] = self._number(axes, among)
        return table[rank]

    def _number(self, axes: Sequence[str], among: Sequence[int] | None) -> dict[int, int]:
        """rank -> group id for every rank taking part, numbering new groups in order of
        their smallest rank."""
        varying = set(axes)
        strides = {a: self.stride(a) for a in self.axes}
        table: dict[int, int] = {}
        for base in range(self.world):
            if base in table:
                continue
            if among is not None:
                (axis,) = axes
                if self.coord(base, axis) not in among:
                    continue
                members = [self.peer(base, axis, c) for c in among]
            else:
                members = [base]
                for a in self.axes:
                    if a in varying:
                        low = [m - self.coord(m, a) * strides[a] for m in members]
                        size = self.sizes[self.axes.index(a)]
                        members = [m + c * strides[a] for m in low for c in range(size)]
                members.sort()
            gid = len(self._ids) + 1
            self._ids.append(members)
            for m in members:
                table[m] = gid
        return table

    def members(self, group_id: int) -> list[int]:
        """The ranks of a group group_id has numbered, in increasing order."""
        return self._ids[group_id - 1]

    def groups(self) -> dict[int, list[int]]:
        """Every group asked for so far: {id: ranks}."""
        return {i + 1: list(members) for i, members in enumerate(self._ids)}
