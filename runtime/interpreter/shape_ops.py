"""Rank-local shape ops: reshape, transpose, concat, split and fill.

The reshape verifier keeps every rank's shard one contiguous block (only a run's
leading dim may be split), so reshaping the local to the result's local shape is exact.
Concat and split work on dims no axis splits, so local sizes are global sizes there.
"""

from __future__ import annotations

import torch

from stagec.dialects.stg.shape_ops import (
    ConcatOp,
    FillOp,
    ReshapeOp,
    SplitOp,
    TransposeOp,
)
from stagec.runtime.interpreter.registry import Rank, per_rank
from stagec.runtime.interpreter.tensor_types import torch_dtype


@per_rank(ReshapeOp)
def reshape(op: ReshapeOp, rank: Rank, x: torch.Tensor) -> torch.Tensor:
    return x.reshape(rank.sizes.local_shape(op.result.type))


@per_rank(TransposeOp)
def transpose(op: TransposeOp, rank: Rank, x: torch.Tensor) -> torch.Tensor:
    return x.permute([p.value.data for p in op.perm.data])


@per_rank(ConcatOp)
def concat(op: ConcatOp, rank: Rank, *pieces: torch.Tensor) -> torch.Tensor:
    return torch.cat(pieces, dim=op.dim.value.data)


@per_rank(SplitOp)
def split(op: SplitOp, rank: Rank, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    dim = op.dim.value.data
    sizes = [rank.sizes.local_shape(r.type)[dim] for r in op.outputs]
    return tuple(torch.split(x, sizes, dim=dim))


@per_rank(FillOp)
def fill(op: FillOp, rank: Rank) -> torch.Tensor:
    ty = op.result.type
    return torch.full(rank.sizes.local_shape(ty), op.value.value.data, dtype=torch_dtype(ty.element_type),
                      device=rank.device)
