"""Model-specific compute ops: attention, embedding, cross-entropy loss, the SSM scan,
MoE dispatch/combine, and opaque ops."""

from __future__ import annotations

from typing import ClassVar

from enum import auto

from xdsl.dialects.builtin import I64, IntegerAttr, IntegerType, StringAttr, UnitAttr, i64
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import SpacedOpaqueSyntaxAttribute
from xdsl.irdl import (
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from stagec.dialects.stg.attributes import DistributedTensorType, ExprAttr, TensorType
from stagec.dialects.stg.compute import ComputeOp, DataMovementOp, check_dims, tensor_type
from stagec.dialects.stg.cost import local_bytes
from stagec.dialects.stg.distribution import check_result, require_no_partial, require_unsplit
from stagec.dialects.stg.sharding import Linearity, ShardingInterface, Signature, letters
from stagec.dialects.stg.syntax import parse_expr
from stagec.dialects.stg.vjp import FusedVjp
from stagec.dialects.symbolic import Expr


# -- attention ---------------------------------------------------------------------------


@irdl_op_definition
class AttentionOp(ComputeOp, ShardingInterface, FusedVjp):
    """Fused scaled-dot-product attention over [batch, seq, heads, head_dim] tensors.

    q: [b, s, heads, d], k: [b, t, kv_heads, d], v: [b, t, kv_heads, e] -> [b, s, heads, e].
    heads = kv_heads is MHA, kv_heads = 1 MQA, anything between GQA; MLA is d != e.
    Heads may be split (TP) and queries' sequence (SP/CP); kv heads split over the
    query heads' axes or a leading part of them (a kv head held whole by the ranks of
    the rest, each of which holds some of its query heads); every rank needs the whole
    key/value sequence.
    """

    name = "stg.attention"

    FLOP_CATEGORY: ClassVar = "attention"

    query = operand_def(TensorType)
    key = operand_def(TensorType)
    value = operand_def(TensorType)
    result = result_def(TensorType)
    heads = prop_def(ExprAttr)
    kv_heads = prop_def(ExprAttr)
    causal = opt_prop_def(UnitAttr)

    def __init__(self, q, k, v, result_type: TensorType, heads, kv_heads, causal: bool = True):
        super().__init__(
            operands=[q, k, v],
            result_types=[result_type],
            properties={
                "heads": ExprAttr.of(heads),
                "kv_heads": ExprAttr.of(kv_heads),
                **({"causal": UnitAttr()} if causal else {}),
            },
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        printer.print_string(f" heads {self.heads.data} kv_heads {self.kv_heads.data}")
        if self.causal is not None:
            printer.print_string(" causal")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_list([o.type for o in self.operands], printer.print_attribute)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> AttentionOp:
        operands = [parser.parse_unresolved_operand()]
        for _ in range(2):
            parser.parse_punctuation(",")
            operands.append(parser.parse_unresolved_operand())
        parser.parse_keyword("heads")
        heads = parse_expr(parser)
        parser.parse_keyword("kv_heads")
        kv_heads = parse_expr(parser)
        causal = parser.parse_optional_keyword("causal") is not None
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        types = [parser.parse_type()]
        for _ in range(2):
            parser.parse_punctuation(",")
            types.append(parser.parse_type())
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        q, k, v = (parser.resolve_operand(o, t) for o, t in zip(operands, types))
        op = cls(q, k, v, result_type, heads, kv_heads, causal)
        op.attributes |= attrs
        return op

    def verify_(self) -> None:
        what = "attention"
        q, k, v = (tensor_type(x) for x in (self.query, self.key, self.value))
        for role, t in (("query", q), ("key", k), ("value", v)):
            if t.rank != 4:
                raise VerifyException(f"{what}: {role} must be [batch, seq, heads, head_dim], not {t.layout_str()}")
            require_no_partial(what, t, role)
        heads, kv_heads = self.heads.data, self.kv_heads.data
        if q.shape[2] != heads or k.shape[2] != kv_heads or v.shape[2] != kv_heads:
            raise VerifyException(
                f"{what}: heads {heads} / kv_heads {kv_heads} do not match the query's "
                f"{q.shape[2]} and the key/value's {k.shape[2]}/{v.shape[2]} heads"
            )
        h, kv = heads.as_int(), kv_heads.as_int()
        if h is not None and kv is not None and h % kv:
            raise VerifyException(f"{what}: {h} heads cannot be grouped over {kv} kv heads")
        if not (q.shape[0] == k.shape[0] == v.shape[0]) or k.shape[1] != v.shape[1] or q.shape[3] != k.shape[3]:
            raise VerifyException(
                f"{what}: q {q.layout_str()}, k {k.layout_str()} and v {v.layout_str()} disagree "
                "on batch, key/value sequence or query/key head_dim"
            )
        if not (q.splits[0] == k.splits[0] == v.splits[0]) or k.splits[2] != v.splits[2]:
            raise VerifyException(f"{what}: q, k and v must split batch, and k and v heads, over the same axes")
        if q.splits[2][: len(k.splits[2])] != k.splits[2]:
            raise VerifyException(
                f"{what}: the key/value heads must split over the query heads' axes "
                f"{', '.join(q.splits[2]) or '(none)'} or a leading part of them, "
                f"not {', '.join(k.splits[2])}"
            )
        for role, t in (("key", k), ("value", v)):
            require_unsplit(what, t, 1, f"every query attends to the whole {role} sequence")
        for role, t in (("query", q), ("key", k), ("value", v)):
            require_unsplit(what, t, 3, f"the {role} head_dim is contracted or kept whole")
        check_result(
            what, tensor_type(self.result), (q.shape[0], q.shape[1], q.shape[2], v.shape[3]), (*q.splits[:3], ()), ()
        )

    def flops(self) -> Expr:
        # Q K^T and P V: 2*s*t*(d + e) per (batch, head); causal masking skips half.
        q, v = tensor_type(self.query), tensor_type(self.value)
        b, s, n, d = q.local_shape()
        t, e = tensor_type(self.key).local_shape()[1], v.local_shape()[3]
        full = 2 * b * n * s * t * (d + e)
        if self.causal is None:
            return full
        if tensor_type(self.query).shape[1] == tensor_type(self.key).shape[1]:
            return full / 2
        # queries over a longer key sequence (a KV cache, docs/inference.md): the s
        # queries are its last s positions, so they see the t - s keys before them in
        # full and the last s x s block causally, half of it as above
        return 2 * b * n * (d + e) * (s * (t - s) + s * s / 2)

    def bytes_moved(self) -> Expr:
        # one buffer read once when key and value are the same (MLA's latent cache)
        return local_bytes(dict.fromkeys(self.operands)) + local_bytes(self.results)

    def backward_flops(self) -> Expr:
        # Flash-attention's backward: dV, dP, dQ, dK plus recomputing Q K^T, five
        # products to the forward's two.
        return self.flops() * 5 / 2

    def sharding_signature(self) -> Signature:
        return Signature(["bsnd", "btmd", "btme"], ["bsne"], unsplit={"t", "d", "e"}, tied=[{"n", "m"}])



# -- embedding and loss ------------------------------------------------------------------


def _require_integer(what: str, ty: DistributedTensorType, role: str) -> None:
    if not isinstance(ty.element_type, IntegerType):
        raise VerifyException(f"{what}: {role} must have an integer element type, not {ty.element_type}")


@irdl_op_definition
class EmbeddingOp(DataMovementOp, ShardingInterface, FusedVjp):
    """Looks up rows of a [vocab, hidden] table. A vocab split over axes leaves a partial
    sum over them (Megatron's vocab-parallel embedding: each rank fills its own rows)."""

    name = "stg.embedding"

    table = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = "$table `,` $indices attr-dict `:` type($table) `,` type($indices) `->` type($result)"

    def __init__(self, table, indices, result_type: TensorType):
        super().__init__(operands=[table, indices], result_types=[result_type])

    def verify_(self) -> None:
        what = "embedding"
        table, ids = tensor_type(self.table), tensor_type(self.indices)
        if table.rank != 2:
            raise VerifyException(f"{what}: the table must be [vocab, hidden], not {table.layout_str()}")
        _require_integer(what, ids, "indices")
        require_no_partial(what, table, "table")
        require_no_partial(what, ids, "indices")
        if clash := set(table.splits[0] + table.splits[1]) & {a for s in ids.splits for a in s}:
            raise VerifyException(
                f"{what}: the indices {ids.layout_str()} may not be split over the table's "
                f"axes [{', '.join(sorted(clash))}]"
            )
        check_result(
            what,
            tensor_type(self.result),
            (*ids.shape, table.shape[1]),
            (*ids.splits, table.splits[1]),
            table.splits[0],
        )

    def backward_flops(self) -> Expr:
        # the table gradient scatter-adds one hidden row per token
        return tensor_type(self.result).local_numel()

    def sharding_signature(self) -> Signature:
        ids = letters(tensor_type(self.indices).rank, start="abcdefg")
        return Signature(["vh", ids], [ids + "h"], Linearity.FIRST)



@irdl_op_definition
class CrossEntropyOp(ComputeOp, ShardingInterface, FusedVjp):
    """Mean token cross-entropy of logits [..., vocab] against integer labels [...].

    The mean is over all tokens of the global batch, so ranks holding a slice of the
    tokens hold a partial sum of the loss. The vocab dim may be split (Megatron's
    vocab-parallel cross-entropy): the ranks of a vocab group then combine their
    shards' max, sum of exponentials and label logit - three all-reduces of one value
    per token (`vocab_collectives`) - and each holds the loss, not a partial sum."""

    name = "stg.cross_entropy"

    FLOP_CATEGORY: ClassVar = "elementwise"

    logits = operand_def(TensorType)
    labels = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = "$logits `,` $labels attr-dict `:` type($logits) `,` type($labels) `->` type($result)"

    def __init__(self, logits, labels, result_type: TensorType):
        super().__init__(operands=[logits, labels], result_types=[result_type])

    def verify_(self) -> None:
        what = "cross_entropy"
        logits, labels = tensor_type(self.logits), tensor_type(self.labels)
        _require_integer(what, labels, "labels")
        require_no_partial(what, logits, "logits")
        if logits.rank < 1:
            raise VerifyException(f"{what}: logits need a vocab dim")
        if logits.shape[:-1] != labels.shape or logits.splits[:-1] != labels.splits:
            raise VerifyException(
                f"{what}: labels {labels.layout_str()} must match the logits' token dims "
                f"{logits.layout_str()}"
            )
        partial = {a for s in labels.splits for a in s}
        check_result(what, tensor_type(self.result), (), (), partial)

    def flops(self) -> Expr:
        # max, subtract, exp, sum per logit; log and gather per token
        return 4 * tensor_type(self.logits).local_numel() + 2 * tensor_type(self.labels).local_numel()

    def vocab_collectives(self) -> list[tuple[str, tuple[str, ...], Expr]]:
        """The all-reduces a split vocab implies: (kind, axes, bytes per rank) for the
        max, the sum of exponentials and the label logit of every local token (f32)."""
        axes = tensor_type(self.logits).splits[-1]
        if not axes:
            return []
        per_token = tensor_type(self.labels).local_numel() * 4
        return [("all_reduce", axes, per_token)] * 3

    def sharding_signature(self) -> Signature:
        tokens = letters(tensor_type(self.labels).rank)
        return Signature([tokens + "v", tokens], [""], Linearity.NONE, combined={"v"})


class VocabStatKind(StrEnum):
    MAX = auto()
    TARGET = auto()
    SUM_EXP = auto()


@irdl_attr_definition
class VocabStatKindAttr(EnumAttribute[VocabStatKind], SpacedOpaqueSyntaxAttribute):
    name = "stg.vocab_stat_kind"


class _VocabParallelLossOp(ComputeOp):
    """The vocab-parallel cross-entropy's parts, made after stg-autodiff."""

    FLOP_CATEGORY: ClassVar = "elementwise"
    NO_GRADIENT: ClassVar = "stg-vocab-parallel-cross-entropy makes it after stg-autodiff; stg.vjp recomputes the fused loss"


@irdl_op_definition
class VocabStatOp(_VocabParallelLossOp):
    """One statistic per token of this rank's vocab shard, for Megatron's vocab-parallel
    cross-entropy (stg-vocab-parallel-cross-entropy): `max` of its logits, the `target`
    (label's) logit where its shard holds the label (0 elsewhere), `sum_exp` of
    exp(logit - max) given the group's max. The result is one value per rank of the
    vocab group, combined by an all-reduce over the vocab axes (with `max` for the max):

        %m = stg.vocab_stat max %logits, %labels : !stg.tensor<[B, S, V/tp], bf16>, !stg.tensor<[B, S], i64> -> !stg.tensor<[B, S] @tp, f32>
    """

    name = "stg.vocab_stat"

    kind = prop_def(VocabStatKindAttr)
    logits = operand_def(TensorType)
    labels = operand_def(TensorType)
    maximum = opt_operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = ("$kind $logits `,` $labels (`,` $maximum^)? attr-dict `:` type($logits) `,` type($labels) "
                       "(`,` type($maximum)^)? `->` type($result)")

    def __init__(self, kind: VocabStatKind, logits, labels, maximum=None, *, result_type: TensorType):
        super().__init__(operands=[logits, labels, [maximum] if maximum is not None else []],
                         result_types=[result_type], properties={"kind": VocabStatKindAttr(kind)})

    def verify_(self) -> None:
        kind = self.kind.data
        what = f"vocab_stat {kind}"
        logits, labels = tensor_type(self.logits), tensor_type(self.labels)
        _require_integer(what, labels, "labels")
        require_no_partial(what, logits, "logits")
        axes = logits.splits[-1] if logits.rank else ()
        if not axes:
            raise VerifyException(f"{what}: the logits' vocab dim must be split (a whole vocab needs no statistics)")
        if logits.shape[:-1] != labels.shape or logits.splits[:-1] != labels.splits:
            raise VerifyException(f"{what}: labels {labels.layout_str()} must match the logits' token dims "
                                  f"{logits.layout_str()}")
        if (self.maximum is not None) != (kind == VocabStatKind.SUM_EXP):
            raise VerifyException(f"{what}: sum_exp, and only it, takes the vocab group's max")
        check_result(what, tensor_type(self.result), labels.shape, labels.splits, set(axes))
        if self.maximum is not None:
            check_result(what + " (its max)", tensor_type(self.maximum), labels.shape, labels.splits, ())

    def flops(self) -> Expr:
        # max: 1 a logit; sum_exp: subtract, exp, add a logit; target: a gather a token
        per_logit = {VocabStatKind.MAX: 1, VocabStatKind.SUM_EXP: 3, VocabStatKind.TARGET: 0}[self.kind.data]
        per_token = 1 if self.kind.data == VocabStatKind.TARGET else 0
        return per_logit * tensor_type(self.logits).local_numel() + per_token * tensor_type(self.labels).local_numel()


@irdl_op_definition
class VocabCrossEntropyOp(_VocabParallelLossOp):
    """The mean token cross-entropy from the vocab group's statistics: log(sum_exp) +
    max - target per token, over the global batch's token count (a partial sum over
    the axes that split the tokens, as stg.cross_entropy's):

        %loss = stg.vocab_cross_entropy %max, %target, %sum_exp : !stg.tensor<[B/dp, S], f32>, ... -> !stg.tensor<[] @dp, f32>
    """

    name = "stg.vocab_cross_entropy"

    maximum = operand_def(TensorType)
    target = operand_def(TensorType)
    sum_exp = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = ("$maximum `,` $target `,` $sum_exp attr-dict `:` type($maximum) `,` type($target) `,` "
                       "type($sum_exp) `->` type($result)")

    def __init__(self, maximum, target, sum_exp, result_type: TensorType):
        super().__init__(operands=[maximum, target, sum_exp], result_types=[result_type])

    def verify_(self) -> None:
        what = "vocab_cross_entropy"
        stats = [tensor_type(v) for v in (self.maximum, self.target, self.sum_exp)]
        if len(set(stats)) != 1 or stats[0].partial_axes:
            raise VerifyException(f"{what}: max, target and sum_exp are the same whole per-token statistics, not "
                                  f"{', '.join(s.layout_str() for s in stats)}")
        check_result(what, tensor_type(self.result), (), (), {a for s in stats[0].splits for a in s})

    def flops(self) -> Expr:
        return tensor_type(self.maximum).local_numel()  # log and the sum a token


@irdl_op_definition
class SsmScanOp(ComputeOp, ShardingInterface, FusedVjp):
    """The selective-scan recurrence of a state-space model (stage.md Table X, pscan):
    h[t] = decay[t] * h[t-1] + input[t] along `dim`, e.g. over [B, S, D, P] with dim 1.
    The scanned dim is whole on every rank."""

    name = "stg.ssm_scan"

    FLOP_CATEGORY: ClassVar = "elementwise"

    decay = operand_def(TensorType)
    input = operand_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)

    assembly_format = "$decay `,` $input `dim` $dim attr-dict `:` type($decay) `,` type($input) `->` type($result)"

    def __init__(self, decay, input, dim: int):
        super().__init__(operands=[decay, input], result_types=[input.type], properties={"dim": IntegerAttr(dim, i64)})

    def verify_(self) -> None:
        what = "ssm_scan"
        decay, x = tensor_type(self.decay), tensor_type(self.input)
        d = self.dim.value.data
        check_dims(what, [d], x.rank)
        if decay.shape != x.shape or decay.splits != x.splits:
            raise VerifyException(
                f"{what}: decay {decay.layout_str()} and input {x.layout_str()} must have one layout"
            )
        for role, t in (("decay", decay), ("input", x)):
            require_no_partial(what, t, role)
        require_unsplit(what, x, d, "the recurrence runs along it")
        check_result(what, tensor_type(self.result), x.shape, x.splits, ())

    def flops(self) -> Expr:
        return 2 * tensor_type(self.input).local_numel()

    def sharding_signature(self) -> Signature:
        names = letters(tensor_type(self.input).rank)
        return Signature([names, names], [names], unsplit={names[self.dim.value.data]})



def _token_dims(what: str, tokens: TensorType, scores: TensorType, experts: TensorType) -> None:
    """Tokens [T, H], router scores [T, E], per-expert buffers [E, C, H]."""
    if tokens.rank != 2 or scores.rank != 2 or experts.rank != 3:
        raise VerifyException(
            f"{what}: expects tokens [T, H], scores [T, E] and expert buffers [E, C, H]; got "
            f"{tokens.layout_str()}, {scores.layout_str()}, {experts.layout_str()}"
        )
    if tokens.shape[0] != scores.shape[0] or scores.shape[1] != experts.shape[0] or tokens.shape[1] != experts.shape[2]:
        raise VerifyException(
            f"{what}: sizes disagree: tokens {tokens.layout_str()}, scores {scores.layout_str()}, "
            f"expert buffers {experts.layout_str()}"
        )
    if tokens.splits[0] != scores.splits[0] or scores.splits[1]:
        raise VerifyException(
            f"{what}: scores must split tokens like the tokens do and keep every expert's column"
        )
    if experts.splits[0]:
        raise VerifyException(
            f"{what}: routing works on every expert's buffer locally; move experts across "
            "ranks with all_to_all"
        )
    if experts.splits[1] != tokens.splits[0] or experts.splits[2] != tokens.splits[1]:
        raise VerifyException(
            f"{what}: the capacity dim must be split like the tokens ({tokens.layout_str()}) "
            f"and hidden alike; got {experts.layout_str()}"
        )
    require_no_partial(what, scores, "scores")


class _MoeOp(ComputeOp):
    top_k = prop_def(IntegerAttr[I64])

    def _check_top_k(self, experts: Expr) -> None:
        k, e = self.top_k.value.data, experts.as_int()
        if k < 1 or (e is not None and k > e):
            raise VerifyException(
                f"'{self.name}': top_k = {k} must be in [1, {experts}] (the number of experts)"
            )


@irdl_op_definition
class MoeDispatchOp(_MoeOp, DataMovementOp, ShardingInterface, FusedVjp):
    """Routes each token to its top-k experts' capacity buffers:
    tokens [T, H], scores [T, E] -> [E, C, H] (C = the capacity per expert).

    Routing (shared with moe_combine): token t goes to the k experts of highest score
    (torch.topk order, ties to the lower index); its slot in expert e's buffer is the
    number of earlier tokens routed to e, and a token past slot C-1 is dropped there
    (GShard's capacity). Unused slots are zero."""

    name = "stg.moe_dispatch"

    # the scores only select experts; dispatch scales nothing by them
    NO_GRADIENT_OPERANDS: ClassVar = (1,)

    tokens = operand_def(TensorType)
    scores = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = (
        "$tokens `,` $scores `top_k` $top_k attr-dict `:` type($tokens) `,` type($scores) `->` type($result)"
    )

    def __init__(self, tokens, scores, top_k: int, result_type: TensorType):
        super().__init__(operands=[tokens, scores], result_types=[result_type], properties={"top_k": IntegerAttr(top_k, i64)})

    def verify_(self) -> None:
        out = tensor_type(self.result)
        _token_dims("moe_dispatch", tensor_type(self.tokens), tensor_type(self.scores), out)
        require_no_partial("moe_dispatch", tensor_type(self.tokens), "tokens")
        self._check_top_k(out.shape[0])
        require_no_partial("moe_dispatch", out, "result")

    def sharding_signature(self) -> Signature:
        return Signature(["th", "te"], ["ech"], unsplit={"e"}, tied=[{"t", "c"}])



@irdl_op_definition
class MoeCombineOp(_MoeOp, ShardingInterface, FusedVjp):
    """Sums each token's top-k expert outputs weighted by its router scores:
    buffers [E, C, H], scores [T, E] -> [T, H], routed as moe_dispatch routes. The
    weight of expert e for token t is scores[t, e], or with `normalize` scores[t, e]
    over the sum of t's top-k scores (Mixtral; HF's norm_topk_prob). Dropped tokens
    get nothing from that expert."""

    name = "stg.moe_combine"

    FLOP_CATEGORY: ClassVar = "other"

    experts = operand_def(TensorType)
    scores = operand_def(TensorType)
    normalize = opt_prop_def(UnitAttr)
    result = result_def(TensorType)

    assembly_format = (
        "$experts `,` $scores `top_k` $top_k (`normalize` $normalize^)? attr-dict"
        " `:` type($experts) `,` type($scores) `->` type($result)"
    )

    def __init__(self, experts, scores, top_k: int, result_type: TensorType, normalize: bool = False):
        super().__init__(
            operands=[experts, scores],
            result_types=[result_type],
            properties={"top_k": IntegerAttr(top_k, i64), **({"normalize": UnitAttr()} if normalize else {})},
        )

    def verify_(self) -> None:
        out, experts = tensor_type(self.result), tensor_type(self.experts)
        _token_dims("moe_combine", out, tensor_type(self.scores), experts)
        self._check_top_k(experts.shape[0])
        if out.partial_axes != experts.partial_axes:
            raise VerifyException("moe_combine: the result is a partial sum exactly where the expert outputs are")

    def flops(self) -> Expr:
        # a multiply-add per hidden element for each of a token's k experts
        return 2 * self.top_k.value.data * tensor_type(self.result).local_numel()

    def sharding_signature(self) -> Signature:
        return Signature(["ech", "te"], ["th"], Linearity.FIRST, unsplit={"e"}, tied=[{"t", "c"}])



@irdl_op_definition
class OpaqueOp(ComputeOp):
    """A computation stg does not model, with user-given per-rank FLOPs and bytes:
    `stg.opaque "fused_kernel" (%a) flops <2*B*H> bytes <4*B*H> : (T) -> (T)`."""

    name = "stg.opaque"

    FLOP_CATEGORY: ClassVar = "other"
    NO_GRADIENT: ClassVar = "it carries only a cost, no semantics to differentiate"

    callee = prop_def(StringAttr)
    flop_count = prop_def(ExprAttr)
    byte_count = prop_def(ExprAttr)
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)

    assembly_format = (
        "$callee `(` $inputs `)` `flops` $flop_count `bytes` $byte_count attr-dict"
        " `:` `(` type($inputs) `)` `->` `(` type($outputs) `)`"
    )

    def __init__(self, callee: str, inputs, result_types, flops, bytes_):
        super().__init__(
            operands=[inputs],
            result_types=[result_types],
            properties={
                "callee": StringAttr(callee),
                "flop_count": ExprAttr.of(flops),
                "byte_count": ExprAttr.of(bytes_),
            },
        )

    def verify_(self) -> None:
        for role, attr in (("flops", self.flop_count), ("bytes", self.byte_count)):
            v = attr.data.as_int()
            if v is not None and v < 0:
                raise VerifyException(f"opaque '{self.callee.data}': {role} must not be negative, not {v}")

    def flops(self) -> Expr:
        return self.flop_count.data

    def bytes_moved(self) -> Expr:
        return self.byte_count.data
