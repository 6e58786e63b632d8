"""stg communication on one real rank: each collective becomes calls of csrc's MPI
communicator (docs/runtime.md) over the group its mesh axes select.

The interpreter computes a collective as `values.regroup`: within a group along the
op's axes, assemble the tensor the group holds in the input's layout and cut it again
in the result's. On a real rank only this rank's local exists, so each kind of
regrouping becomes the one MPI call that does it (stage.md Table IV):

| input layout in the group | result layout in the group | call |
|---|---|---|
| partial over the axes | whole | all_reduce (sum; `max` for stg.all_reduce max) |
| dim d split over the axes | whole | all_gather, blocks concatenated along d |
| partial over the axes | dim d split over the axes | reduce_scatter of the d-blocks |
| dim a split over the axes | dim b split over the axes | all_to_all of the b-blocks |
| anything else (a reshard) | anything | all_gather of the locals, then the interpreter's assemble and shard |

A group's members are ordered by world rank in its communicator; a block's place in
a split dim is `mesh.index_over(rank, split axes)` (the interpreter's convention), so
each call maps members to blocks through that index rather than assuming the two
orders agree.

Every call is issued asynchronously and returns a `Pending`, whose `result()` waits
for the handle once and finishes the value (a concatenation, a reordering). A sync op
waits at once; an async op's Token carries the Pending until its stg.wait.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import time
from dataclasses import dataclass

import torch

from stagec.runtime.exec.device import RankDevice
from stagec.runtime.interpreter.errors import InterpreterError
from stagec.runtime.interpreter.values import Layout, SimulatedMesh, assemble, shard


def wait(work) -> None:
    """Wait for a csrc handle without spinning: MPI's own wait polls at full speed,
    which on ranks that outnumber the cores takes the cores from the ranks still
    computing (the ones it waits for). Poll, sleeping up to 1 ms between polls."""
    delay = 1e-5
    while not work.test():
        time.sleep(delay)
        delay = min(2 * delay, 1e-3)
    work.wait()


class Pending:
    """A value that an issued operation produces: `result()` waits for the handle
    (once, however many tokens carry it) and returns the finished value. `waits` is
    how: the host polls (`wait`, the default: MPI and host copies), or a GPU's compute
    stream waits (device.py `CudaDevice.wait`)."""

    def __init__(self, work, finish: Callable[[], object], waits: Callable[[object], None] | None = None):
        self._work, self._finish = work, finish
        self._waits = waits if waits is not None else wait
        self._done = False
        self._value: object = None

    def result(self):
        if not self._done:
            if self._work is not None:
                self._waits(self._work)
            self._value = self._finish()
            self._done, self._work, self._finish = True, None, None
        return self._value


def done(value) -> Pending:
    """A Pending that needs no communication (one-rank groups, local slices)."""
    return Pending(None, lambda: value)


@dataclass(frozen=True)
class Group:
    """This rank's communicator group along some mesh axes: the members' world ranks
    in communicator order, and the communicator."""

    axes: tuple[str, ...]
    members: tuple[int, ...]
    comm: object
    position: int  # this rank's position among the members

    @property
    def size(self) -> int:
        return len(self.members)


class Communicators:
    """One csrc communicator per set of mesh axes a program communicates over: split
    from the world on every rank in the same order (MPI requires every rank to take
    part in each split), or one NCCL communicator per group on a GPU rank
    (device.py)."""

    def __init__(self, world, mesh: SimulatedMesh, rank: int, axis_sets: Sequence[frozenset[str]],
                 device: RankDevice | None = None):
        self.world, self.mesh, self.rank = world, mesh, rank
        self.device = device if device is not None else RankDevice()
        self._groups: dict[frozenset[str], Group] = {}
        keys = sorted({frozenset(a) for a in axis_sets}, key=lambda s: sorted(s))
        ordered_sets = [tuple(a for a in mesh.axes if a in axes) for axes in keys]
        plan = [mesh.groups(ordered) for ordered in ordered_sets]
        comms = self.device.communicators(world, rank, plan)
        for axes, ordered, groups, comm in zip(keys, ordered_sets, plan, comms, strict=True):
            group = next(g for g in groups if rank in g)
            self._groups[axes] = Group(ordered, tuple(group), comm, group.index(rank))

    def group(self, axes: Sequence[str]) -> Group:
        key = frozenset(axes)
        if key not in self._groups:
            raise InterpreterError(f"no communicator over [{', '.join(axes)}] was set up (a bug of the lowering)")
        return self._groups[key]


def _single_split(layout: Layout) -> tuple[int, tuple[str, ...]] | None:
    """(dim, axes) if exactly one dim is split (over the group's axes), else None."""
    split = [(d, axes) for d, axes in enumerate(layout.splits) if axes]
    return split[0] if len(split) == 1 else None


def _empty(layout: Layout) -> bool:
    return not layout.partial and not any(layout.splits)


def _flat(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.contiguous().view(-1)


class Lowering:
    """Issues one rank's collectives on the groups of `comms`."""

    def __init__(self, comms: Communicators):
        self.comms = comms
        self.mesh = comms.mesh
        self.rank = comms.rank
        self.device = comms.device

    def regroup(self, local: torch.Tensor, src: Layout, dst: Layout, axes: Sequence[str], *,
                maximum: bool = False, calls: list | None = None) -> Pending:
        """The local of `dst` from the local of `src`, within the group along `axes`.
        With `calls` the call is appended there (an stg.group's members, issued as one
        csrc group) and the Pending's handle is set by the caller."""
        group = self.comms.group(axes)
        src_in, dst_in = src.within(group.axes), dst.within(group.axes)
        if group.size == 1:
            return done(shard(local, dst_in, self.mesh, self.rank) if not _empty(dst_in) else local)
        axes_set = set(group.axes)
        s_split, d_split = _single_split(src_in), _single_split(dst_in)
        if maximum:
            return self._all_reduce(local, group, "max", calls)
        if src_in.partial == axes_set and not any(src_in.splits):
            if _empty(dst_in):
                return self._all_reduce(local, group, "sum", calls)
            if d_split and set(d_split[1]) == axes_set and not dst_in.partial:
                return self._reduce_scatter(local, group, *d_split, calls)
        if not src_in.partial and not dst_in.partial and s_split and set(s_split[1]) == axes_set:
            if _empty(dst_in):
                return self._all_gather(local, group, *s_split, calls)
            if d_split and set(d_split[1]) == axes_set and d_split[0] != s_split[0]:
                return self._all_to_all(local, group, s_split, d_split, calls)
        return self._generic(local, group, src_in, dst_in, calls)

    # -- the calls -----------------------------------------------------------------------
    def _issue(self, group: Group, call: str, args: tuple, calls: list | None):
        if calls is not None:
            calls.append((call, args))
            return None
        return getattr(group.comm, call)(*args)

    def _all_reduce(self, local, group, op, calls):
        out = local.clone(memory_format=torch.contiguous_format)
        work = self._issue(group, "all_reduce", (_flat(out), op), calls)
        return Pending(work, lambda: out, self.device.wait)

    def _blocks(self, group: Group, axes: Sequence[str]) -> list[int]:
        """Block index, in a dim split over `axes`, of each member in communicator order."""
        return [self.mesh.index_over(m, tuple(axes)) for m in group.members]

    def _all_gather(self, local, group, dim, axes, calls):
        n = group.size
        out = torch.empty((n, *local.shape), dtype=local.dtype, device=local.device)
        work = self._issue(group, "all_gather", (_flat(local), out.view(-1)), calls)
        blocks = self._blocks(group, axes)

        def finish():
            if blocks == list(range(n)) and dim == 0:
                return out.view(n * local.shape[0], *local.shape[1:])
            ordered = [None] * n
            for p, b in enumerate(blocks):
                ordered[b] = out[p]
            return torch.cat(ordered, dim)

        return Pending(work, finish, self.device.wait)

    def _reduce_scatter(self, local, group, dim, axes, calls):
        n = group.size
        size = local.shape[dim] // n
        blocks = self._blocks(group, axes)
        send = torch.stack([local.narrow(dim, b * size, size) for b in blocks]) \
            if not (blocks == list(range(n)) and dim == 0) else local.contiguous()
        shape = list(local.shape)
        shape[dim] = size
        out = torch.empty(shape, dtype=local.dtype, device=local.device)
        work = self._issue(group, "reduce_scatter", (_flat(send), out.view(-1), "sum"), calls)
        return Pending(work, lambda: out, self.device.wait)

    def _all_to_all(self, local, group, src_split, dst_split, calls):
        n = group.size
        (a, a_axes), (b, b_axes) = src_split, dst_split
        size = local.shape[b] // n
        send = torch.stack([local.narrow(b, i * size, size) for i in self._blocks(group, b_axes)])
        out = torch.empty_like(send)
        work = self._issue(group, "all_to_all", (_flat(send), out.view(-1)), calls)
        sources = self._blocks(group, a_axes)

        def finish():
            ordered = [None] * n
            for p, i in enumerate(sources):
                ordered[i] = out[p]
            return torch.cat(ordered, a)

        return Pending(work, finish, self.device.wait)

    def _generic(self, local, group, src_in, dst_in, calls):
        """Any regrouping: every member's local, then the interpreter's assemble/shard."""
        n = group.size
        out = torch.empty((n, *local.shape), dtype=local.dtype, device=local.device)
        work = self._issue(group, "all_gather", (_flat(local), out.view(-1)), calls)

        def finish():
            whole = assemble({m: out[p] for p, m in enumerate(group.members)}, src_in, self.mesh, group.axes)
            return shard(whole, dst_in, self.mesh, self.rank).contiguous()

        return Pending(work, finish, self.device.wait)

    def broadcast(self, local, axes: Sequence[str], root: int, calls: list | None = None) -> Pending:
        group = self.comms.group(axes)
        roots = [p for p, m in enumerate(group.members) if self.mesh.index_over(m, group.axes) == root]
        if not roots:
            raise InterpreterError(f"root {root} is not a member of the {group.size}-rank group over [{', '.join(axes)}]")
        out = local.clone(memory_format=torch.contiguous_format)
        if group.size == 1:
            return done(out)
        work = self._issue(group, "broadcast", (_flat(out), roots[0]), calls)
        return Pending(work, lambda: out, self.device.wait)
