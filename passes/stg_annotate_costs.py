"""stg-annotate-costs: write each op's per-rank FLOPs and bytes into the IR.

Requires: verified stg IR (symbolic or instantiated). Guarantees: every op that
implements the cost interface carries `stg.flops` and `stg.bytes` (#stg.expr), with the mesh axis sizes the
module's stg.mesh binds to numbers substituted, and
every func.func carries `stg.total_flops` / `stg.total_bytes` - the sum over its body
with repeated blocks and micro-batch loops multiplied by their counts. The IR is
otherwise unchanged; the attributes are discardable and only meant to be read.
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.passes import ModulePass

from stagec.dialects.stg import CostInterface, ExprAttr, MeshOp
from stagec.dialects.stg.cost import region_cost
from stagec.dialects.symbolic import Expr


@dataclass(frozen=True)
class StgAnnotateCosts(ModulePass):
    """Annotate ops with per-rank FLOPs/bytes and functions with their totals."""

    name = "stg-annotate-costs"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        bound = {
            axis: size
            for mesh in op.ops
            if isinstance(mesh, MeshOp)
            for axis, size in mesh.axis_sizes.items()
            if size.is_constant
        }

        def annotate(target, name: str, value: Expr) -> None:
            target.attributes[name] = ExprAttr(value.subs(bound))

        for inner in op.walk():
            if isinstance(inner, CostInterface):
                annotate(inner, "stg.flops", inner.flops())
                annotate(inner, "stg.bytes", inner.bytes_moved())
            elif isinstance(inner, func.FuncOp):
                flops, moved = region_cost(inner.body.block.ops)
                annotate(inner, "stg.total_flops", flops)
                annotate(inner, "stg.total_bytes", moved)
