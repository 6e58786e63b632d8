"""Dispatch from op classes to their implementations.

An implementation takes the op, its operands' values (each a `PerRank` list, or a
`Token`) and the running `Execution`, and returns one value per result. Most compute
ops are rank-local: `@per_rank` registers a function of one rank's locals, which the
registry runs once per simulated rank.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from xdsl.ir import Operation

from stagec.runtime.interpreter.tensor_types import Sizes
from stagec.runtime.interpreter.values import PerRank, SimulatedMesh, local_part

if TYPE_CHECKING:
    from stagec.runtime.interpreter.interpreter import Execution

OpImpl = Callable[[Operation, list[Any], "Execution"], Sequence[Any]]

_IMPLEMENTATIONS: dict[type[Operation], OpImpl] = {}


def implements(*op_classes: type[Operation]) -> Callable[[OpImpl], OpImpl]:
    """Registers an implementation working on whole per-rank values."""

    def register(impl: OpImpl) -> OpImpl:
        for cls in op_classes:
            _IMPLEMENTATIONS[cls] = impl
        return impl

    return register


def per_op(derive: Callable[[Operation], Any]) -> Callable[[Operation], Any]:
    """Caches what `derive` works out from an op's types alone (e.g. which operands a
    rank slices), so loops and ranks do not work it out again."""
    cache: weakref.WeakKeyDictionary[Operation, Any] = weakref.WeakKeyDictionary()

    def cached(op: Operation) -> Any:
        if op not in cache:
            cache[op] = derive(op)
        return cache[op]

    return cached


def implementation_for(op_class: type[Operation]) -> OpImpl | None:
    """The implementation registered for the class or its nearest base."""
    for cls in op_class.__mro__:
        if cls in _IMPLEMENTATIONS:
            return _IMPLEMENTATIONS[cls]
    return None


def implementation_of(op: Operation) -> OpImpl | None:
    return implementation_for(type(op))


@dataclass(frozen=True)
class Rank:
    """One simulated rank, as a rank-local implementation sees it."""

    index: int
    mesh: SimulatedMesh
    sizes: Sizes
    # where the rank's tensors live: an op that makes a tensor from nothing (a fill,
    # an attention mask) makes it here (runtime/exec/device.py on a GPU rank)
    device: torch.device = torch.device("cpu")

    def part(self, tensor: torch.Tensor, dim: int, axes: Sequence[str]) -> torch.Tensor:
        """This rank's block of a whole dim that `axes` split elsewhere."""
        return local_part(tensor, dim, axes, self.mesh, self.index)

    def block_start(self, axes: Sequence[str], block_size: int) -> int:
        """Where this rank's block of a dim split over `axes` starts in the global dim."""
        return self.mesh.index_over(self.index, axes) * block_size


LocalImpl = Callable[..., torch.Tensor | tuple[torch.Tensor, ...]]


def per_rank(*op_classes: type[Operation]) -> Callable[[LocalImpl], LocalImpl]:
    """Registers `impl(op, rank, *locals) -> local result(s)`, run on every rank."""

    def register(impl: LocalImpl) -> LocalImpl:
        def run(op: Operation, operands: list[Any], ex: Execution) -> list[PerRank]:
            outs: list[PerRank] = [[None] * ex.mesh.num_ranks for _ in op.results]
            for rank in ex.ranks:
                results = impl(op, rank, *(value[rank.index] for value in operands))
                if isinstance(results, torch.Tensor):
                    results = (results,)
                for out, local in zip(outs, results, strict=True):
                    out[rank.index] = local
            return outs

        implements(*op_classes)(run)
        return impl

    return register
