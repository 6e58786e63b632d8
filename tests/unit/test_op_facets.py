"""Every op of the stg dialect declares the facets the compiler needs of it
(docs/adding-an-op.md): an op added without one fails here, naming the op and the
facet, instead of deep inside a pass or a backend.

The matrix (which kind of op needs which facet, and why) is RULES below; the few ops
exempt from a rule are listed with the reason.
"""

from __future__ import annotations

import pytest
import stagec.runtime.interpreter.interpreter  # noqa: F401  (registers the kernels)
from stagec.dialects.stg import STG, ElementwiseKind, ElementwiseOp, TensorType
from stagec.dialects.stg.comm import CollectiveOp, CommOp, P2POp
from stagec.dialects.stg.compute import ARITY, ELEMENTWISE_FLOPS, ComputeOp
from stagec.dialects.stg.cost import FLOP_CATEGORIES, CostInterface
from stagec.dialects.stg.memory import OffloadOp, ReloadOp
from stagec.dialects.stg.mesh import MeshOp
from stagec.dialects.stg.model_ops import OpaqueOp, VocabCrossEntropyOp, VocabStatOp
from stagec.dialects.stg.shape_ops import (
    ConcatOp,
    FillOp,
    ReshapeOp,
    SplitOp,
    TransposeOp,
)
from stagec.dialects.stg.sharding import ShardingInterface
from stagec.dialects.stg.structure import YieldOp
from stagec.dialects.stg.training import AdamOp, SgdOp, VjpOp
from stagec.dialects.stg.vjp import AutodiffError, VjpInterface
from stagec.dialects.symbolic import Expr
from stagec.runtime.chakra.schema import CommType
from stagec.runtime.interpreter.compute import BINARY, DERIVATIVE, UNARY
from stagec.runtime.interpreter.registry import implementation_for
from xdsl.dialects.builtin import f64
from xdsl.ir import Block

OPS = list(STG.operations)

# Ops whose layout is not an index space: stg-shard lays each out by its own rule
# (passes/shard/propagate.py), so they declare no signature.
LAID_OUT_BY_STG_SHARD = {ReshapeOp, TransposeOp, ConcatOp, SplitOp, FillOp, OpaqueOp}
# Ops a pass after stg-shard makes from ops already laid out (the vocab-parallel
# cross-entropy's statistics and combine, stg-vocab-parallel-cross-entropy): never sharded.
MADE_AFTER_STG_SHARD = {VocabStatOp, VocabCrossEntropyOp}
# Ops the interpreter reads rather than runs: the mesh when it starts, a yield as the
# end of its block.
NOT_RUN_BY_THE_INTERPRETER = {MeshOp, YieldOp}


def is_compute(op) -> bool:
    return issubclass(op, ComputeOp)


def costs(op) -> bool:
    return issubclass(op, (ComputeOp, CommOp, VjpOp, AdamOp, SgdOp, OffloadOp, ReloadOp))


def declares_category(op) -> bool:
    # a VjpOp computes its category from its body (the kernel it fuses)
    return getattr(op, "FLOP_CATEGORY", None) in FLOP_CATEGORIES or (
        op.flop_category is not CostInterface.flop_category
    )


def comm_kind_known(op) -> bool:
    kind = op.COLLECTIVE_KIND
    if issubclass(op, P2POp):
        return kind == {"SendOp": "send", "RecvOp": "recv"}[op.__name__]
    if kind is None:
        return True  # costed by what it becomes (reshard) or moves nothing (local slice)
    return kind.upper() in CommType.__members__


# (facet, which ops need it, whether an op has it, why)
RULES = [
    ("cost (CostInterface: flops, bytes_moved)", costs, lambda op: issubclass(op, CostInterface),
     "the cost model, Chakra's num_ops/tensor_size and the accounting read it from every op that computes or moves data"),
    ("FLOP category", costs, declares_category,
     "the roofline and the Chakra node category of its FLOPs (gemm/attention/elementwise/other)"),
    ("sharding signature (ShardingInterface)", lambda op: is_compute(op) and op not in LAID_OUT_BY_STG_SHARD | MADE_AFTER_STG_SHARD,
     lambda op: issubclass(op, ShardingInterface),
     "stg-shard distributes a compute op by its index signature"),
    ("VJP rule or NO_GRADIENT", is_compute,
     lambda op: issubclass(op, VjpInterface) or isinstance(getattr(op, "NO_GRADIENT", None), str),
     "stg-autodiff differentiates every compute op, or says why it cannot"),
    ("collective kind (Chakra CommType / send / recv)", lambda op: issubclass(op, CommOp),
     lambda op: "COLLECTIVE_KIND" in dir(op) and comm_kind_known(op),
     "the cost model's collective formula and the Chakra comm_type come from it"),
    ("interpreter kernel", lambda op: op not in NOT_RUN_BY_THE_INTERPRETER,
     lambda op: implementation_for(op) is not None,
     "the interpreter checks every transformation numerically, so every op must run"),
]


def missing_facets(ops) -> list[str]:
    return [f"{op.name}: no {facet} ({why})" for op in ops for facet, needs, has, why in RULES if needs(op) and not has(op)]


def test_every_op_declares_the_facets_it_needs():
    assert missing_facets(OPS) == []


def test_the_check_sees_a_missing_facet():
    """A compute op without a VJP, a signature and a category fails, as does a
    collective without a kind."""

    class Bare(ComputeOp):
        name = "stg.bare"

        def flops(self) -> Expr:
            return Expr.const(0)

    class BareCollective(CollectiveOp):
        name = "stg.bare_collective"

    found = missing_facets([Bare, BareCollective])
    assert any("stg.bare: no VJP rule" in m for m in found)
    assert any("stg.bare: no sharding signature" in m for m in found)
    assert any("stg.bare: no FLOP category" in m for m in found)
    assert any("stg.bare: no interpreter kernel" in m for m in found)
    assert any("stg.bare_collective: no collective kind" in m for m in found)


# -- elementwise kinds: each is an op of its own to the user --------------------------

# Kinds stg-autodiff does not differentiate: max/min select (no model needs their
# gradient yet), dropout runs as the identity in the interpreter but would need its
# mask, and *_grad are themselves backward ops.
NOT_DIFFERENTIATED = {
    ElementwiseKind.MAX, ElementwiseKind.MIN, ElementwiseKind.DROPOUT,
    *(k for k in ElementwiseKind if k.value.endswith("_grad")),
}


class _Recorder:
    """The smallest Emitter: ops are built but go nowhere; only operand 0 is active."""

    def __init__(self, active):
        self.active = active

    def emit(self, op):
        return op

    def primal(self, value):
        return value

    def is_active(self, value):
        return value is self.active


@pytest.mark.parametrize("kind", list(ElementwiseKind))
def test_every_elementwise_kind_declares_its_facets(kind):
    assert kind in ELEMENTWISE_FLOPS, f"{kind}: no FLOPs per element"
    assert kind == ElementwiseKind.SCALE or kind in UNARY or kind in BINARY or kind in DERIVATIVE, (
        f"{kind}: no interpreter kernel (runtime/interpreter/compute.py)"
    )
    ty = TensorType([Expr.sym("N")], f64)
    args = Block(arg_types=[ty] * (ARITY.get(kind, 1) + 1)).args
    op = ElementwiseOp(kind, args[:-1], ty, 0.5 if kind == ElementwiseKind.SCALE else None)
    op.verify()
    try:
        grads = op.vjp(_Recorder(args[0]), [args[-1]])
    except AutodiffError:
        assert kind in NOT_DIFFERENTIATED, f"{kind}: no VJP rule"
    else:
        assert kind not in NOT_DIFFERENTIATED, f"{kind} has a VJP rule now: drop it from NOT_DIFFERENTIATED"
        assert grads[0] is not None and grads[0].type == ty
