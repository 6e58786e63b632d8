"""stg-vocab-parallel-cross-entropy: a cross-entropy over a split vocab becomes
Megatron's vocab-parallel cross-entropy, its three all-reduces explicit
(Megatron-LM `_VocabParallelCrossEntropy.forward`; stage.md Table VII counts them):

    %loss = stg.cross_entropy %logits, %labels : !stg.tensor<[B, S, V/tp], bf16>, ... -> !stg.tensor<[], f32>
  becomes
    %max_p = stg.vocab_stat max %logits, %labels : ... -> !stg.tensor<[B, S] @tp, f32>
    %max = stg.all_reduce %max_p on @m [tp] max : ... -> !stg.tensor<[B, S], f32>
    %target_p = stg.vocab_stat target %logits, %labels : ... -> !stg.tensor<[B, S] @tp, f32>
    %target = stg.all_reduce %target_p on @m [tp] : ...
    %sum_exp_p = stg.vocab_stat sum_exp %logits, %labels, %max : ... -> !stg.tensor<[B, S] @tp, f32>
    %sum_exp = stg.all_reduce %sum_exp_p on @m [tp] : ...
    %loss = stg.vocab_cross_entropy %max, %target, %sum_exp : ... -> !stg.tensor<[], f32>

Each rank takes the max of its vocab shard's logits per token, the group their max;
the label's logit from the rank whose shard holds it (0 elsewhere), summed; the sum of
exp(logit - max) over each shard, summed; the loss is log(sum_exp) + max - target,
averaged over the global batch's tokens. The four compute ops cost what the fused
cross-entropy did (4 FLOPs a logit, 2 a token).

Only the forward's cross-entropy changes: the one a stg.vjp recomputes for its
gradient stays (its backward needs no communication).

Requires: stg IR after stg-shard and stg-match-collectives, with a stg.mesh. Guarantees:
no cross-entropy over a split vocab is left outside stg.vjp bodies; the loss is what it
was.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, f32, f64
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from stagec.dialects.stg.attributes import TensorType
from stagec.dialects.stg.comm import AllReduceOp
from stagec.dialects.stg.mesh import MeshOp
from stagec.dialects.stg.model_ops import CrossEntropyOp, VocabCrossEntropyOp, VocabStatKind, VocabStatOp
from stagec.dialects.stg.training import VjpOp
from stagec.passes.diagnostics import PassError

__all__ = ["StgVocabParallelCrossEntropy", "vocab_parallel_cross_entropy"]


@dataclass(frozen=True)
class StgVocabParallelCrossEntropy(ModulePass):
    """Make a split-vocab cross-entropy Megatron's vocab-parallel one: its max, target and sum-exp all-reduces explicit."""

    name = "stg-vocab-parallel-cross-entropy"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        vocab_parallel_cross_entropy(op)


def vocab_parallel_cross_entropy(module: ModuleOp) -> int:
    """Rewrite every forward cross-entropy over a split vocab; returns how many."""
    found = [op for op in module.walk() if isinstance(op, CrossEntropyOp) and op.logits.type.splits[-1]
             and not _inside_vjp(op)]
    if not found:
        return 0
    mesh = next((m for m in module.ops if isinstance(m, MeshOp)), None)
    if mesh is None:
        raise PassError("a cross-entropy over a split vocab needs the module's stg.mesh", found[0])
    for op in found:
        _rewrite(op, mesh.sym_name.data)
    return len(found)


def _inside_vjp(op: Operation) -> bool:
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, VjpOp):
            return True
        parent = parent.parent_op()
    return False


def _rewrite(op: CrossEntropyOp, mesh: str) -> None:
    block = op.parent_block()
    axes = op.logits.type.splits[-1]
    labels = op.labels.type
    # Megatron keeps the statistics in fp32 (fp64 stays fp64)
    dtype = f64 if op.logits.type.element_type == f64 else f32
    partial = TensorType(labels.dims.data, dtype, frozenset(axes) | labels.partial_axes)
    whole = TensorType(labels.dims.data, dtype, labels.partial_axes)
    hint = op.result.name_hint or "loss"

    def stat(kind: VocabStatKind, *extra) -> Operation:
        local = VocabStatOp(kind, op.logits, op.labels, *extra, result_type=partial)
        local.result.name_hint = f"{hint}_{kind.value}_local"
        reduced = AllReduceOp(local.result, mesh, axes, whole, extra=_max() if kind == VocabStatKind.MAX else None)
        reduced.result.name_hint = f"{hint}_{kind.value}"
        block.insert_ops_before([local, reduced], op)
        return reduced

    maximum = stat(VocabStatKind.MAX)
    target = stat(VocabStatKind.TARGET)
    sum_exp = stat(VocabStatKind.SUM_EXP, maximum.result)
    loss = VocabCrossEntropyOp(maximum.result, target.result, sum_exp.result, op.result.type)
    block.insert_op_before(loss, op)
    loss.result.name_hint = op.result.name_hint
    op.result.replace_all_uses_with(loss.result)
    op.detach()
    op.erase()


def _max() -> dict:
    from xdsl.dialects.builtin import UnitAttr

    return {"max": UnitAttr()}
