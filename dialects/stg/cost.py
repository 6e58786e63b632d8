"""The cost interface: per-rank FLOPs and bytes of every compute and communication op.

Costs are symbolic expressions over the model's dims and the mesh axis sizes, per
rank (a rank's local shards), so they can be summed over a rank class's program and
evaluated once at instantiation. They feed the cost model, Chakra's `num_ops`,
`tensor_size` and `comm_size`, and the DeepCompile passes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import ClassVar

from xdsl.ir import Attribute, Operation

from stagec.dialects.stg.attributes import DistributedTensorType, TokenType
from stagec.dialects.symbolic import Expr, sum_exprs


# stage.md §V-C's GeMM / Attention / ElementWise / Other: the roofline an op's FLOPs
# run at (runtime/cost) and the Chakra node category they are emitted and counted under.
FLOP_CATEGORIES = ("gemm", "attention", "elementwise", "other")


class CostInterface(ABC):
    """Implemented by every stg op that computes or communicates."""

    # One of FLOP_CATEGORIES; ops that do no arithmetic (communication, data movement)
    # declare "other".
    FLOP_CATEGORY: ClassVar[str]

    def flop_category(self) -> str:
        return self.FLOP_CATEGORY

    @abstractmethod
    def flops(self) -> Expr:
        """Floating-point operations one rank performs (a multiply-add counts 2)."""

    @abstractmethod
    def bytes_moved(self) -> Expr:
        """Bytes one rank moves: memory read + written for compute ops; for
        communication ops Chakra's `comm_size` (the local input buffer)."""

    def backward_flops(self) -> Expr:
        """FLOPs of this op's gradient (a stg.vjp of it): twice the forward, as for a
        matmul's two gradient products, unless the op knows better."""
        return 2 * self.flops()


def flop_category(op: Operation) -> str:
    """The category an op's FLOPs count under; an op without a cost does none."""
    return op.flop_category() if isinstance(op, CostInterface) else "other"


def tensor_of(ty: Attribute) -> DistributedTensorType | None:
    if isinstance(ty, TokenType):
        ty = ty.value_type
    return ty if isinstance(ty, DistributedTensorType) else None


def local_bytes(values: Iterable) -> Expr:
    """Sum of the local bytes of the tensors among `values` (SSA values)."""
    return sum_exprs(t.local_bytes() for v in values if (t := tensor_of(v.type)) is not None)


def io_bytes(op: Operation) -> Expr:
    """Read every operand once, write every result once."""
    return local_bytes(op.operands) + local_bytes(op.results)


def region_cost(ops: Iterable[Operation]) -> tuple[Expr, Expr]:
    """Total per-rank (FLOPs, bytes) of a sequence of ops, loop bodies times their count."""
    from stagec.dialects.stg.structure import LoopOp

    flops, moved = Expr.const(0), Expr.const(0)
    for op in ops:
        if isinstance(op, CostInterface):
            # An op that costs itself accounts for its regions too (a stg.vjp's body is
            # the computation it differentiates, not work it does again).
            flops, moved = flops + op.flops(), moved + op.bytes_moved()
            continue
        for region in op.regions:
            for block in region.blocks:
                f, b = region_cost(block.ops)
                if isinstance(op, LoopOp):
                    f, b = f * op.count_expr, b * op.count_expr
                flops, moved = flops + f, moved + b
    return flops, moved
