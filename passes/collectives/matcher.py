"""Matching a layout change to collectives: pull/push as a shortest-path search.

stage.md §IV-D2 splits every producer -> consumer layout change into a *pull* (each
mesh axis of the producer: Duplicated needs nothing, Partition a gather, PartialSum a
reduce) and a *push* (Duplicated a broadcast, Partition a scatter, PartialSum
unsupported), joined by a virtual node holding the whole tensor. Real collectives
fuse a pull with a push: reduce + scatter is a reduce_scatter, gather + scatter along
another dim an all_to_all, and a scatter of what every rank already holds is the free
local slice (Fig. 6's "Slice*").

Here that is a search. A state is a layout - per dim the axes splitting it (major to
minor), plus the partial-sum axes - and a move is one legal collective of
distribution.py's rules, over one or more axes at once:

    all_gather      drop axes from the minor end of a dim's split
    reduce_scatter  reduce partial axes and append them to the minor end of a dim's split
    all_reduce      reduce partial axes
    all_to_all      move axes from the minor end of one dim's split to another's
    local_slice     append axes the layout does not use to the minor end of a dim's split

Dijkstra's algorithm finds the cheapest sequence from the producer's layout to the
consumer's under the ring model of cost.py, breaking ties by fewer ops and then by a
fixed order of moves (all_reduce, reduce_scatter, all_to_all, all_gather, local_slice;
then by dims; then by the axes' order in the mesh), so the answer is deterministic.

Which intermediate layouts are allowed. Only the consumer's split axes are ever
sliced in, and only partial axes the consumer does not keep are reduced. A dim may be
split by a set of axes the producer or the consumer splits it by (or a part of it): it
divides evenly whenever they do. Any other split is allowed only where the known sizes
prove it divides (numeric dim and axis sizes); with symbolic sizes it is not tried, so
that matching never makes a program that cannot be instantiated. Pulling everything
to the virtual whole tensor and pushing it out again stays within these rules, so a
sequence always exists unless the consumer wants a partial sum the producer lacks.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations, count, permutations
from math import prod

from stagec.dialects.stg.attributes import DistributedTensorType
from stagec.dialects.stg.comm import (
    AllGatherOp,
    AllReduceOp,
    AllToAllOp,
    CollectiveOp,
    LocalSliceOp,
    ReduceScatterOp,
)
from stagec.passes.collectives.cost import Sizes, global_bytes, ring_factor

__all__ = ["MatchError", "Step", "match_reshard", "reshard_cost"]

Splits = tuple[tuple[str, ...], ...]

# The tie-break order of move kinds (see the module doc).
_KIND_ORDER: dict[type[CollectiveOp], int] = {
    AllReduceOp: 0,
    ReduceScatterOp: 1,
    AllToAllOp: 2,
    AllGatherOp: 3,
    LocalSliceOp: 4,
}


class MatchError(ValueError):
    """No sequence of collectives turns the producer's layout into the consumer's."""


@dataclass(frozen=True)
class Step:
    """One collective of a matched sequence: `op` over `axes` (in the op's order: the
    order they take in, or leave, a dim's split), from `input` to `result`, costing
    `cost` bytes per rank on the ring model (cost.py)."""

    op: type[CollectiveOp]
    axes: tuple[str, ...]
    input: DistributedTensorType
    result: DistributedTensorType
    cost: float

    def __str__(self) -> str:
        return (
            f"{self.op.name.removeprefix('stg.')} [{', '.join(self.axes)}]: "
            f"{self.input.layout_str()} -> {self.result.layout_str()}"
        )


def match_reshard(
    src: DistributedTensorType,
    dst: DistributedTensorType,
    mesh_sizes: Mapping[str, int | None],
    bindings: Mapping[str, int] | None = None,
) -> list[Step]:
    """The cheapest sequence of collectives turning `src`'s layout into `dst`'s (the
    same global tensor); empty when the layouts are equal.

    `mesh_sizes` gives the mesh axes in the mesh's order (which orders the axes of an
    all_reduce and breaks ties) with their numeric sizes; an axis mapped to None, or
    missing, counts as cost.UNSIZED_AXIS. `bindings` gives known dim symbols (a module's stg.config).
    Raises MatchError when no sequence exists: the consumer is a partial sum over an
    axis the producer is not."""
    search = _Search(src, dst, Sizes(dict(mesh_sizes), dict(bindings or {})))
    steps, ty = [], src
    for move in search.run():
        result = _padded_as(src.with_layout(move.result.splits, move.result.partial), dst)
        steps.append(Step(move.op, move.axes, ty, result, float(search.bytes(move.cost))))
        ty = result
    return steps


def _padded_as(ty: DistributedTensorType, dst: DistributedTensorType) -> DistributedTensorType:
    """`ty` with `dst`'s padded dims where it splits them as `dst` does: a padded dim
    (docs/sharding.md, "Uneven shards") is reached by one collective over all its axes."""
    if not any(d.padded_extent for d in dst.dims.data):
        return ty
    dims = [b if a.axis_names == b.axis_names and b.padded_extent else a for a, b in zip(ty.dims.data, dst.dims.data)]
    return type(ty)(dims, ty.element_type, ty.partial_axes)


def reshard_cost(
    src: DistributedTensorType,
    dst: DistributedTensorType,
    mesh_sizes: Mapping[str, int | None],
    bindings: Mapping[str, int] | None = None,
) -> float:
    """Ring-model bytes one rank sends for the cheapest match of src -> dst (the sum
    of match_reshard's step costs, computed exactly)."""
    search = _Search(src, dst, Sizes(dict(mesh_sizes), dict(bindings or {})))
    return float(search.bytes(sum(m.cost for m in search.run())))


# ------------------------------------------------------------------------ the search


@dataclass(frozen=True)
class _Layout:
    splits: Splits
    partial: frozenset[str]

    @property
    def used(self) -> frozenset[str]:
        return frozenset(a for s in self.splits for a in s) | self.partial


@dataclass(frozen=True)
class _Move:
    op: type[CollectiveOp]
    axes: tuple[str, ...]
    result: _Layout
    cost: int  # in _Search units
    key: tuple[int, ...]


def _arrangements(axes: Sequence[str]) -> Iterator[tuple[str, ...]]:
    """Every non-empty ordered selection of distinct axes, shortest first."""
    for k in range(1, len(axes) + 1):
        yield from permutations(axes, k)


class _Search:
    def __init__(self, src: DistributedTensorType, dst: DistributedTensorType, sizes: Sizes):
        if src.shape != dst.shape or src.element_type != dst.element_type:
            raise MatchError(
                f"{src.layout_str()} ({src.element_type}) and {dst.layout_str()} "
                f"({dst.element_type}) are not the same global tensor"
            )
        if pushed := dst.partial_axes - src.partial_axes:
            raise MatchError(
                f"the consumer is a partial sum over [{', '.join(sorted(pushed))}], which "
                "the producer is not; no collective makes a partial sum (stage.md "
                "§IV-D2: a PartialSum push is not supported)"
            )
        self.start = _Layout(src.splits, src.partial_axes)
        self.goal = _Layout(dst.splits, dst.partial_axes)
        involved = src.mesh_axes | dst.mesh_axes
        order = [a for a in sizes.mesh_sizes if a in involved] + sorted(involved - set(sizes.mesh_sizes))
        self.axis_rank = {a: i for i, a in enumerate(order)}
        # Costs are exact integers in units of whole / unit**2: every group size and
        # every layout's split product divides `unit`, the product of all axis sizes.
        self.axis_size = {a: sizes.axis(a) for a in order}
        self.unit = prod(self.axis_size.values())
        self.whole = global_bytes(src, sizes)
        self.sizes = sizes
        self.dim_sizes = [sizes.known_value(d) for d in src.shape]
        self._local_units: dict[Splits, int] = {}
        self._ring_units: dict[tuple[type[CollectiveOp], tuple[str, ...]], int] = {}
        self._allowed_splits: dict[tuple[int, frozenset[str]], bool] = {}
        self.src_sets = [frozenset(s) for s in src.splits]
        self.dst_sets = [frozenset(s) for s in dst.splits]
        # Only the consumer's split axes are sliced in; only partial axes the consumer
        # does not keep are reduced (a reduced axis never becomes partial again).
        self.sliceable = self._ordered(a for s in dst.splits for a in s)
        self.reducible = self._ordered(src.partial_axes - dst.partial_axes)

    def _ordered(self, axes) -> tuple[str, ...]:
        return tuple(sorted(set(axes), key=self.axis_rank.__getitem__))

    def run(self) -> list[_Move]:
        """Dijkstra over layouts, ordered by (cost, op count, move keys); that order is
        kept by appending a move, so the first time the goal is popped its path is
        the least in it."""
        tie = count()
        best: dict[_Layout, tuple] = {self.start: (0, 0, ())}
        heap: list = [(best[self.start], next(tie), self.start, ())]
        done: set[_Layout] = set()
        while heap:
            priority, _, state, path = heapq.heappop(heap)
            if state in done:
                continue
            if state == self.goal:
                return list(path)
            done.add(state)
            cost, ops, keys = priority
            for move in self._moves(state):
                if move.result in done:
                    continue
                reached = (cost + move.cost, ops + 1, (*keys, move.key))
                if move.result not in best or reached < best[move.result]:
                    best[move.result] = reached
                    heapq.heappush(heap, (reached, next(tie), move.result, (*path, move)))
        raise MatchError("no sequence of collectives reaches the consumer's layout")

    def bytes(self, units: int) -> Fraction:
        """Ring-model bytes per rank of a cost in this search's units."""
        return units * self.whole / self.unit**2

    # -- moves -------------------------------------------------------------------------
    def _allowed(self, dim: int, split: tuple[str, ...]) -> bool:
        """May `dim` be split over `split` on the way (see the module doc)?"""
        axes = frozenset(split)
        if (dim, axes) not in self._allowed_splits:
            if axes <= self.src_sets[dim] or axes <= self.dst_sets[dim]:
                allowed = True
            else:
                size, parts = self.dim_sizes[dim], self.sizes.known_group(axes)
                allowed = size is not None and parts is not None and size % parts == 0
            self._allowed_splits[dim, axes] = allowed
        return self._allowed_splits[dim, axes]

    def _cost(self, op: type[CollectiveOp], axes: tuple[str, ...], splits: Splits) -> int:
        """step_cost (cost.py) of the op on a layout split as `splits`, in units."""
        if (local := self._local_units.get(splits)) is None:
            local = self.unit // prod(self.axis_size[a] for s in splits for a in s)
            self._local_units[splits] = local
        if (ring := self._ring_units.get((op, axes))) is None:
            ring = ring_factor(op, prod(self.axis_size[a] for a in axes)) * self.unit
            ring = self._ring_units[op, axes] = int(ring)
        return ring * local

    def _move(self, op, axes, state: _Layout, result: _Layout, dims: tuple[int, int]) -> _Move:
        axes = tuple(axes)
        key = (_KIND_ORDER[op], *dims, *(self.axis_rank[a] for a in axes))
        return _Move(op, axes, result, self._cost(op, axes, state.splits), key)

    def _moves(self, state: _Layout) -> Iterator[_Move]:
        splits, partial = state.splits, state.partial
        rank = len(splits)

        def with_split(changes: dict[int, tuple[str, ...]]) -> Splits:
            new = list(splits)
            for d, split in changes.items():
                new[d] = split
            return tuple(new)

        reducible = [a for a in self.reducible if a in partial]
        for k in range(1, len(reducible) + 1):
            for axes in combinations(reducible, k):
                yield self._move(AllReduceOp, axes, state, _Layout(splits, partial - set(axes)), (-1, -1))
        for axes in _arrangements(reducible):
            for d in range(rank):
                if self._allowed(d, new := splits[d] + axes):
                    result = _Layout(with_split({d: new}), partial - set(axes))
                    yield self._move(ReduceScatterOp, axes, state, result, (d, -1))
        for d, split in enumerate(splits):
            for k in range(1, len(split) + 1):
                axes, rest = split[-k:], split[:-k]
                for e in range(rank):
                    if e != d and self._allowed(e, new := splits[e] + axes) and self._allowed(d, rest):
                        result = _Layout(with_split({d: rest, e: new}), partial)
                        yield self._move(AllToAllOp, axes, state, result, (d, e))
        for d, split in enumerate(splits):
            for k in range(1, len(split) + 1):
                if self._allowed(d, rest := split[:-k]):
                    result = _Layout(with_split({d: rest}), partial)
                    yield self._move(AllGatherOp, split[-k:], state, result, (d, -1))
        free = [a for a in self.sliceable if a not in state.used]
        for axes in _arrangements(free):
            for d in range(rank):
                if self._allowed(d, new := splits[d] + axes):
                    result = _Layout(with_split({d: new}), partial)
                    yield self._move(LocalSliceOp, axes, state, result, (d, -1))
