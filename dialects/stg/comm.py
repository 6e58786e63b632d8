"""Communication ops of the stg dialect.

Collectives run within the groups of ranks that differ only along their mesh axes
(mesh.py fixes the order) and are verified against the layouts they transform:

    %z = stg.all_reduce %y on @m [tp] : !stg.tensor<[B, H] @tp, bf16> -> !stg.tensor<[B, H], bf16>

With `async`, a collective returns a !stg.token carrying its result; stg.wait yields it.
"""

from __future__ import annotations

import functools

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, FlatSymbolRefAttr, I64, IntegerAttr, StringAttr, SymbolRefAttr, UnitAttr, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    opt_result_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from stagec.dialects.stg import distribution as rules
from stagec.dialects.stg.attributes import DistributedTensorType, TensorType, TokenType
from stagec.dialects.stg.cost import CostInterface
from stagec.dialects.stg.mesh import MeshAxesDeclared, MeshOp, lookup_mesh
from stagec.dialects.stg.schedule import parse_stream, print_stream
from stagec.dialects.symbolic import Expr, product

TensorOrToken = TensorType | TokenType


def _payload(ty: Attribute) -> DistributedTensorType:
    return ty.value_type if isinstance(ty, TokenType) else ty


def _axes_attr(axes: Iterable[str]) -> ArrayAttr[StringAttr]:
    return _axes_attr_of(tuple(axes))


# One shared attribute per mesh name and per tuple of axes (attributes are immutable):
# the passes that bucket, prefetch or unroll collectives build thousands of them.
@functools.lru_cache(maxsize=1024)
def _axes_attr_of(axes: tuple[str, ...]) -> ArrayAttr[StringAttr]:
    return ArrayAttr(StringAttr(a) for a in axes)


@functools.lru_cache(maxsize=64)
def _mesh_ref(mesh: str) -> SymbolRefAttr:
    return SymbolRefAttr(mesh)


class CommOp(IRDLOperation, CostInterface, ABC):
    """Shared mesh reference, optional async token, and mesh-axis checks."""

    mesh = prop_def(FlatSymbolRefAttr)

    traits = traits_def(MeshAxesDeclared())

    # Communication does no arithmetic.
    FLOP_CATEGORY: ClassVar = "other"
    # What the op moves, as the cost model's collective formulas (runtime/cost) and
    # Chakra name it: a collective's CommType in lower case ("all_reduce"), or "send" /
    # "recv"; None for an op that is costed otherwise (a reshard by the collectives it
    # will become, a local slice moves nothing).
    COLLECTIVE_KIND: ClassVar[str | None]

    def mesh_op(self) -> MeshOp:
        return lookup_mesh(self, self.mesh.root_reference.data)

    def mesh_axes(self) -> tuple[str, ...]:
        return ()

    def verify_(self) -> None:
        mesh = self.mesh_op()
        for axis in self.mesh_axes():
            if axis not in mesh.axis_names:
                raise VerifyException(
                    f"'{self.name}': axis '{axis}' is not an axis of mesh @{mesh.sym_name.data} "
                    f"({', '.join(mesh.axis_names)})"
                )
        self._verify_token()
        self.verify_layouts()

    def _verify_token(self) -> None:
        if not self.results:
            return
        result = self.results[0].type
        is_token = isinstance(result, TokenType)
        if is_token != (self.properties.get("async") is not None):
            raise VerifyException(
                f"'{self.name}': an async op returns a !stg.token, a synchronous one a tensor"
            )
        if is_token and result.value_type is None:
            raise VerifyException(
                f"'{self.name}': its token must carry the result, e.g. !stg.token<!stg.tensor<...>>"
            )

    @abstractmethod
    def verify_layouts(self) -> None: ...

    def flops(self) -> Expr:
        return Expr.const(0)


class CollectiveOp(CommOp, ABC):
    """`%out = stg.<collective> %in on @mesh [axes] (async)? : T -> T'`."""

    input = operand_def(TensorType)
    result = result_def(TensorOrToken)
    axes = prop_def(ArrayAttr[StringAttr])
    is_async = opt_prop_def(UnitAttr, prop_name="async")
    stream = opt_prop_def(StringAttr)  # the scheduled form's stream (schedule.py)

    def __init__(
        self,
        input: SSAValue,
        mesh: str,
        axes: Sequence[str],
        result_type: TensorType,
        is_async: bool = False,
        extra: dict[str, Attribute] | None = None,
    ):
        super().__init__(
            operands=[input],
            result_types=[TokenType(result_type) if is_async else result_type],
            properties={
                "mesh": _mesh_ref(mesh),
                "axes": _axes_attr(axes),
                **({"async": UnitAttr()} if is_async else {}),
                **(extra or {}),
            },
        )

    @property
    def axis_names(self) -> tuple[str, ...]:
        return tuple(a.data for a in self.axes.data)

    def mesh_axes(self) -> tuple[str, ...]:
        return self.axis_names

    @property
    def src(self) -> DistributedTensorType:
        return self.input.type

    @property
    def dst(self) -> DistributedTensorType:
        return _payload(self.result.type)

    def bytes_moved(self) -> Expr:
        # Chakra's comm_size: the all-gather shard, the full buffer otherwise - both are
        # the local input. A reduce-scatter into a padded dim (docs/sharding.md, "Uneven
        # shards") reduces the padded buffer, its shards' size times the group's, as
        # NCCL's ncclReduceScatter takes recvcount * nranks elements.
        src, dst = self.src, self.dst
        if any(b.padded_extent and not a.padded_extent for a, b in zip(src.dims.data, dst.dims.data)):
            return dst.local_bytes() * product(Expr.sym(a) for a in self.axis_names)
        return src.local_bytes()

    def verify_layouts(self) -> None:
        names = self.axis_names
        if not names:
            raise VerifyException(f"'{self.name}' needs at least one mesh axis")
        if len(set(names)) != len(names):
            raise VerifyException(f"'{self.name}' names an axis twice: {list(names)}")
        self.check(f"'{self.name}'", self.src, self.dst, names)

    # (what, src, dst, axes) -> None, raising VerifyException: the collective's layout
    # rule from distribution.py.
    LAYOUT_RULE: ClassVar[Callable[[str, DistributedTensorType, DistributedTensorType, tuple[str, ...]], None]]

    def check(self, what: str, src, dst, axes: tuple[str, ...]) -> None:
        type(self).LAYOUT_RULE(what, src, dst, axes)

    # -- syntax ------------------------------------------------------------------------
    def _print_extra(self, printer: Printer) -> None: ...

    @classmethod
    def _parse_extra(cls, parser: Parser) -> dict[str, Attribute]:
        return {}

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(f" on @{self.mesh.root_reference.data} [{', '.join(self.axis_names)}]")
        self._print_extra(printer)
        if self.is_async is not None:
            printer.print_string(" async")
        print_stream(printer, self)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.input.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser):
        operand = parser.parse_unresolved_operand()
        parser.parse_keyword("on")
        mesh = parser.parse_symbol_name().data
        axes = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, lambda: parser.parse_identifier(" (a mesh axis)")
        )
        extra = cls._parse_extra(parser)
        is_async = parser.parse_optional_keyword("async") is not None
        extra |= parse_stream(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        in_type = parser.parse_type()
        parser.parse_punctuation("->")
        out_type = parser.parse_type()
        op = cls.create(
            operands=[parser.resolve_operand(operand, in_type)],
            result_types=[out_type],
            properties={
                "mesh": _mesh_ref(mesh),
                "axes": _axes_attr(axes),
                **({"async": UnitAttr()} if is_async else {}),
                **extra,
            },
            attributes=attrs,
        )
        return op


@irdl_op_definition
class AllGatherOp(CollectiveOp):
    """Gathers the shards of one dim: removes the axes from the minor end of its split."""

    name = "stg.all_gather"

    COLLECTIVE_KIND: ClassVar = "all_gather"

    LAYOUT_RULE: ClassVar = staticmethod(rules.check_all_gather)


@irdl_op_definition
class ReduceScatterOp(CollectiveOp):
    """Sums a partial sum over the axes and leaves each rank a shard of one dim."""

    name = "stg.reduce_scatter"

    COLLECTIVE_KIND: ClassVar = "reduce_scatter"

    LAYOUT_RULE: ClassVar = staticmethod(rules.check_reduce_scatter)


@irdl_op_definition
class AllReduceOp(CollectiveOp):
    """Sums a partial sum over the axes; every rank gets the whole result. With `max`,
    each rank's value is combined by max instead (the vocab-parallel cross-entropy's
    max logit, stg.vocab_stat)."""

    name = "stg.all_reduce"

    COLLECTIVE_KIND: ClassVar = "all_reduce"

    maximum = opt_prop_def(UnitAttr, prop_name="max")

    LAYOUT_RULE: ClassVar = staticmethod(rules.check_all_reduce)

    def _print_extra(self, printer: Printer) -> None:
        if self.maximum is not None:
            printer.print_string(" max")

    @classmethod
    def _parse_extra(cls, parser: Parser) -> dict[str, Attribute]:
        return {"max": UnitAttr()} if parser.parse_optional_keyword("max") is not None else {}


@irdl_op_definition
class AllToAllOp(CollectiveOp):
    """Moves the axes from one dim's split to another's (e.g. [B/dp, S] -> [B, S/dp])."""

    name = "stg.all_to_all"

    COLLECTIVE_KIND: ClassVar = "all_to_all"

    LAYOUT_RULE: ClassVar = staticmethod(rules.check_all_to_all)


@irdl_op_definition
class BroadcastOp(CollectiveOp):
    """Replicates the value of the group member at coordinate `root` to the group."""

    name = "stg.broadcast"

    COLLECTIVE_KIND: ClassVar = "broadcast"

    root = prop_def(IntegerAttr[I64])

    def check(self, what, src, dst, axes):
        rules.check_same_layout(what, src, dst)
        sizes = self.mesh_op().axis_sizes
        group = product(sizes[a] for a in axes).as_int()
        root = self.root.value.data
        if root < 0 or (group is not None and root >= group):
            bound = f" and < {group}, the group size" if group is not None else ""
            raise VerifyException(f"{what}: root {root} must be a group member: >= 0{bound}")

    def _print_extra(self, printer: Printer) -> None:
        printer.print_string(f" root {self.root.value.data}")

    @classmethod
    def _parse_extra(cls, parser: Parser) -> dict[str, Attribute]:
        parser.parse_keyword("root")
        return {"root": IntegerAttr(parser.parse_integer(allow_boolean=False), i64)}


@irdl_op_definition
class ReshardOp(CommOp):
    """Abstract producer-layout -> consumer-layout change, before it is matched to
    collectives (stage.md §IV-D2): `stg.reshard %x on @m : T -> T'`."""

    name = "stg.reshard"

    COLLECTIVE_KIND: ClassVar = None

    input = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = "$input `on` $mesh attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, mesh: str, result_type: TensorType):
        super().__init__(operands=[input], result_types=[result_type], properties={"mesh": _mesh_ref(mesh)})

    def mesh_axes(self) -> tuple[str, ...]:
        return tuple(sorted(self.input.type.mesh_axes | self.result.type.mesh_axes))

    def verify_layouts(self) -> None:
        rules.check_same_tensor("'stg.reshard'", self.input.type, self.result.type)

    def bytes_moved(self) -> Expr:
        return self.input.type.local_bytes()


class P2POp(CommOp, ABC):
    """Point-to-point along one mesh axis: the peer differs from this rank only in its
    coordinate on `axis`, which is `peer` (a pipeline stage index, for pp)."""

    axis = prop_def(StringAttr)
    peer = prop_def(IntegerAttr[I64])
    tag = prop_def(IntegerAttr[I64])
    is_async = opt_prop_def(UnitAttr, prop_name="async")
    stream = opt_prop_def(StringAttr)  # the scheduled form's stream (schedule.py)

    def mesh_axes(self) -> tuple[str, ...]:
        return (self.axis.data,)

    def _check_peer(self) -> None:
        size = self.mesh_op().axis_sizes[self.axis.data].as_int()
        peer = self.peer.value.data
        if peer < 0 or (size is not None and peer >= size):
            raise VerifyException(
                f"'{self.name}': peer {peer} is outside mesh axis '{self.axis.data}'"
                + (f" of size {size}" if size is not None else "")
            )
        if self.tag.value.data < 0:
            raise VerifyException(f"'{self.name}': tag must be >= 0 (ASTRA-sim pairs on it)")

    @staticmethod
    def _print_route(printer: Printer, op: "P2POp", word: str) -> None:
        printer.print_string(
            f" {word} @{op.mesh.root_reference.data}[{op.axis.data} = {op.peer.value.data}]"
            f" tag {op.tag.value.data}"
        )
        if op.is_async is not None:
            printer.print_string(" async")
        print_stream(printer, op)
        printer.print_op_attributes(op.attributes)

    @staticmethod
    def _parse_route(parser: Parser, word: str) -> dict[str, Attribute]:
        parser.parse_keyword(word)
        mesh = parser.parse_symbol_name().data
        parser.parse_punctuation("[")
        axis = parser.parse_identifier(" (the mesh axis to the peer)")
        parser.parse_punctuation("=")
        peer = parser.parse_integer(allow_boolean=False)
        parser.parse_punctuation("]")
        parser.parse_keyword("tag")
        tag = parser.parse_integer(allow_boolean=False)
        props: dict[str, Attribute] = {
            "mesh": _mesh_ref(mesh),
            "axis": StringAttr(axis),
            "peer": IntegerAttr(peer, i64),
            "tag": IntegerAttr(tag, i64),
        }
        if parser.parse_optional_keyword("async"):
            props["async"] = UnitAttr()
        return props | parse_stream(parser)


def _p2p_props(mesh: str, axis: str, peer: int, tag: int, is_async: bool) -> dict[str, Attribute]:
    return {
        "mesh": _mesh_ref(mesh),
        "axis": StringAttr(axis),
        "peer": IntegerAttr(peer, i64),
        "tag": IntegerAttr(tag, i64),
        **({"async": UnitAttr()} if is_async else {}),
    }


@irdl_op_definition
class SendOp(P2POp):
    """`stg.send %x to @m[pp = 1] tag 3 : T` (async: returns a bare !stg.token)."""

    name = "stg.send"

    COLLECTIVE_KIND: ClassVar = "send"

    input = operand_def(TensorType)
    token = opt_result_def(TokenType)

    def __init__(self, input: SSAValue, mesh: str, axis: str, peer: int, tag: int, is_async: bool = False):
        super().__init__(
            operands=[input],
            result_types=[[TokenType()] if is_async else []],
            properties=_p2p_props(mesh, axis, peer, tag, is_async),
        )

    def verify_layouts(self) -> None:
        self._check_peer()
        if (self.token is None) != (self.is_async is None):
            raise VerifyException("'stg.send': an async send returns a !stg.token, a synchronous one nothing")
        if self.token is not None and self.token.type != TokenType():
            raise VerifyException("'stg.send': its token carries no value")

    def _verify_token(self) -> None:
        pass

    def bytes_moved(self) -> Expr:
        return self.input.type.local_bytes()

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        self._print_route(printer, self, "to")
        printer.print_string(" : ")
        printer.print_attribute(self.input.type)

    @classmethod
    def parse(cls, parser: Parser) -> SendOp:
        operand = parser.parse_unresolved_operand()
        props = cls._parse_route(parser, "to")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ty = parser.parse_type()
        return cls.create(
            operands=[parser.resolve_operand(operand, ty)],
            result_types=[TokenType()] if "async" in props else [],
            properties=props,
            attributes=attrs,
        )


@irdl_op_definition
class RecvOp(P2POp):
    """`%x = stg.recv from @m[pp = 0] tag 3 : T` (async: a !stg.token carrying T)."""

    name = "stg.recv"

    COLLECTIVE_KIND: ClassVar = "recv"

    result = result_def(TensorOrToken)

    def __init__(self, mesh: str, axis: str, peer: int, tag: int, result_type: TensorType, is_async: bool = False):
        super().__init__(
            result_types=[TokenType(result_type) if is_async else result_type],
            properties=_p2p_props(mesh, axis, peer, tag, is_async),
        )

    def verify_layouts(self) -> None:
        self._check_peer()

    def bytes_moved(self) -> Expr:
        return _payload(self.result.type).local_bytes()

    def print(self, printer: Printer) -> None:
        self._print_route(printer, self, "from")
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> RecvOp:
        props = cls._parse_route(parser, "from")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        return cls.create(result_types=[parser.parse_type()], properties=props, attributes=attrs)


@irdl_op_definition
class LocalSliceOp(CollectiveOp):
    """Each rank keeps its own block of a tensor it holds whole: Duplicated over the
    axes becomes a Partition of one dim, with no communication (stage.md Fig. 6,
    "Slice*"). The axes go to the minor end of the dim's split:

        %s = stg.local_slice %x on @m [tp] : !stg.tensor<[B, S, H], bf16> -> !stg.tensor<[B, S/tp, H], bf16>
    """

    name = "stg.local_slice"

    COLLECTIVE_KIND: ClassVar = None

    LAYOUT_RULE: ClassVar = staticmethod(rules.check_local_slice)

    def verify_layouts(self) -> None:
        if self.is_async is not None:
            raise VerifyException("'stg.local_slice' moves nothing, so it has no async form")
        super().verify_layouts()

    def bytes_moved(self) -> Expr:
        return Expr.const(0)


@irdl_op_definition
class AllReduceStagesOp(CollectiveOp):
    """Sums a tensor over a few coordinates of one mesh axis, among the programs placed
    there - the pipeline stages that each hold a copy of a tied weight (GPT's token
    embedding, used by the first stage's embedding and the last stage's head) add up
    their partial gradients, as Megatron-LM's embedding-group all-reduce does:

        %g2 = stg.all_reduce_stages %g on @m [pp] among [0, 3] : !stg.tensor<[V, H], f32> -> !stg.tensor<[V, H], f32>

    Every participant gets the same sum, added up in the listed order. The types say
    nothing about the stages (each stage's value is whole), so in and out are equal.
    """

    name = "stg.all_reduce_stages"

    COLLECTIVE_KIND: ClassVar = "all_reduce"

    among = prop_def(ArrayAttr[IntegerAttr[I64]])

    def __init__(self, input: SSAValue, mesh: str, axis: str, among: Sequence[int]):
        super().__init__(
            input, mesh, [axis], input.type,
            extra={"among": ArrayAttr(IntegerAttr(c, i64) for c in among)},
        )

    @property
    def coordinates(self) -> tuple[int, ...]:
        return tuple(c.value.data for c in self.among.data)

    def check(self, what, src, dst, axes):
        rules.check_same_layout(what, src, dst)
        if len(axes) != 1:
            raise VerifyException(f"{what} sums over the coordinates of one mesh axis, not [{', '.join(axes)}]")
        coords = self.coordinates
        if len(coords) < 2 or len(set(coords)) != len(coords):
            raise VerifyException(f"{what}: 'among' must list at least two distinct coordinates, not {list(coords)}")
        size = self.mesh_op().axis_sizes[axes[0]].as_int()
        for c in coords:
            if c < 0 or (size is not None and c >= size):
                bound = f" and < {size}, the size of '{axes[0]}'" if size is not None else ""
                raise VerifyException(f"{what}: coordinate {c} must be >= 0{bound}")

    def _print_extra(self, printer: Printer) -> None:
        printer.print_string(f" among [{', '.join(map(str, self.coordinates))}]")

    @classmethod
    def _parse_extra(cls, parser: Parser) -> dict[str, Attribute]:
        parser.parse_keyword("among")
        coords = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False)
        )
        return {"among": ArrayAttr(IntegerAttr(c, i64) for c in coords)}
