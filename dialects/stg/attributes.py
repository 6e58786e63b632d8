"""Attributes and types of the stg dialect: symbolic sizes and distributed tensors.

A distributed tensor type records, per dimension, its *global* symbolic size and the
mesh axes that split it (major to minor), plus the axes over which every rank holds
only a partial sum (stage.md §IV-C: Duplicated, Partition and PartialSum, composed):

    !stg.tensor<[B/dp, S/sp, H] @tp, bf16>     batch split over dp, sequence over sp,
                                                partial sum over tp
    !stg.tensor<[B, 4*H/tp/cp], f32>            4*H split over tp (major) then cp
    !stg.tensor<[(H/heads), D] @dp*tp, f32>     partial over dp and tp

An axis name doubles as the symbol for its size, so a rank's local extent of a dim is
`size / product(axes)` (`4*H/tp`). Inside a dim, a top-level `/` names a split axis;
a size with a quotient or a sum of its own is parenthesised: `(2*D*KV + H)/tp`.
"""

from __future__ import annotations

import functools

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    IntAttr,
    IntegerType,
    StringAttr,
)
from xdsl.ir import (
    Attribute,
    Data,
    ParametrizedAttribute,
    TypeAttribute,
)
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from stagec.dialects.stg.syntax import (
    parse_dim,
    parse_expr,
    parse_partial_axes,
    print_dim,
    print_partial_axes,
)
from stagec.dialects.symbolic import Expr, product


@irdl_attr_definition
class ExprAttr(Data[Expr]):
    """A symbolic integer expression: `#stg.expr<2*B*S*H/tp>`."""

    name = "stg.expr"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> Expr:
        with parser.in_angle_brackets():
            return parse_expr(parser)

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<{self.data}>")

    @staticmethod
    def of(value: int | str | Expr) -> ExprAttr:
        return ExprAttr(Expr.of(value))


def _axis_names(axes: Iterable[str | StringAttr]) -> ArrayAttr[StringAttr]:
    names = tuple(a if isinstance(a, str) else a.data for a in axes)
    return _axis_names_of(names)


def _derived(compute):
    """A read-only property computed once per attribute: attributes are immutable and
    shared, and verifiers and analyses ask the same type for its splits millions of
    times. The value lives in the instance's __dict__, outside the parameters that
    equality, hashing and printing use."""
    key = "_derived_" + compute.__name__

    def get(self):
        values = self.__dict__
        try:
            return values[key]
        except KeyError:
            value = values[key] = compute(self)
            return value

    return property(get, doc=compute.__doc__)


@functools.lru_cache(maxsize=1024)
def _axis_names_of(names: tuple[str, ...]) -> ArrayAttr[StringAttr]:
    # one shared attribute per tuple of axes (attributes are immutable): the sharding
    # passes build tens of thousands of types from a few dozen tuples
    return ArrayAttr(StringAttr(a) for a in names)


@irdl_attr_definition
class DimAttr(ParametrizedAttribute):
    """One dimension of a distributed tensor: global size and splitting axes.

    `#stg.dim<4*H/tp/cp>` is a dim of global size 4*H split over tp, then cp within
    each tp shard (so tp is the major axis of the split).

    A padded dim (docs/sharding.md, "Uneven shards") names its per-rank extent after a
    colon: `#stg.dim<H/fsdp:3>` with H = 8 and fsdp = 3 holds 3 = ceil(8/3) elements
    on every rank, rank i the elements [3i, 3i + 3) of H zero-padded to 9, as FSDP's
    flat parameters and Megatron's distributed optimizer pad a shard. `padded` is 0
    for an even dim (the extent is then size / product(axes)).
    """

    name = "stg.dim"

    size: ExprAttr
    axes: ArrayAttr[StringAttr]
    padded: IntAttr

    def __init__(self, size: int | str | Expr | ExprAttr, axes: Iterable[str | StringAttr] = (), padded: int | IntAttr = 0):
        if not isinstance(size, ExprAttr):
            size = ExprAttr.of(size)
        super().__init__(size, _axis_names(axes), padded if isinstance(padded, IntAttr) else IntAttr(padded))

    @property
    def expr(self) -> Expr:
        return self.size.data

    @_derived
    def axis_names(self) -> tuple[str, ...]:
        return tuple(a.data for a in self.axes.data)

    @property
    def padded_extent(self) -> int | None:
        """A padded dim's per-rank extent (ceil(size / product(axes))), else None."""
        return self.padded.data or None

    def local_size(self) -> Expr:
        """The extent a single rank holds: the global size over the split axes, or a
        padded dim's extent."""
        if self.padded.data:
            return Expr.const(self.padded.data)
        return self.expr / product(Expr.sym(a) for a in self.axis_names)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            size, axes, padded = parse_dim(parser)
        return (ExprAttr(size), _axis_names(axes), IntAttr(padded))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{print_dim(self.expr, self.axis_names, self.padded.data)}>")

    def verify(self) -> None:
        padded = self.padded.data
        if not padded:
            return
        if padded < 0 or not self.axes.data:
            raise VerifyException(
                f"a padded dim {print_dim(self.expr, self.axis_names, padded)} needs split axes and a positive per-rank extent"
            )


_ELEMENT_BYTES = {16: 2, 32: 4, 64: 8, 8: 1}


def element_bytes(element_type: Attribute) -> int:
    """Bytes per element; i1 is stored as a byte, as torch stores bool."""
    if isinstance(element_type, IntegerType):
        return max(1, (element_type.width.data + 7) // 8)
    if isinstance(element_type, AnyFloat):
        return element_type.bitwidth // 8
    raise VerifyException(f"{element_type} is not a tensor element type")


@dataclass(frozen=True, init=False)
class DistributedTensorType(ParametrizedAttribute, TypeAttribute):
    """Shared parameters, syntax and helpers of device and host tensor types."""

    dims: ArrayAttr[DimAttr]
    partial: ArrayAttr[StringAttr]
    element_type: Attribute

    def __init__(
        self,
        dims: Iterable[DimAttr | int | str | Expr | tuple[int | str | Expr, Iterable[str]]],
        element_type: Attribute,
        partial: Iterable[str] = (),
    ):
        dim_attrs: list[DimAttr] = []
        for d in dims:
            if isinstance(d, DimAttr):
                dim_attrs.append(d)
            elif isinstance(d, tuple):
                dim_attrs.append(DimAttr(*d))
            else:
                dim_attrs.append(DimAttr(d))
        # Partial-sum axes form a set: order them canonically so equal types compare equal.
        super().__init__(
            ArrayAttr(dim_attrs), _axis_names(sorted(set(partial))), element_type
        )

    # -- views -------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        return len(self.dims.data)

    @_derived
    def shape(self) -> tuple[Expr, ...]:
        """Global symbolic sizes."""
        return tuple(d.expr for d in self.dims.data)

    @_derived
    def splits(self) -> tuple[tuple[str, ...], ...]:
        """Per dim, the axes splitting it, major to minor."""
        return tuple(d.axis_names for d in self.dims.data)

    @_derived
    def partial_axes(self) -> frozenset[str]:
        return frozenset(a.data for a in self.partial.data)

    @_derived
    def mesh_axes(self) -> frozenset[str]:
        """Every mesh axis the type mentions (splits and partial sums)."""
        return frozenset(a for s in self.splits for a in s) | self.partial_axes

    def local_shape(self) -> tuple[Expr, ...]:
        return tuple(d.local_size() for d in self.dims.data)

    def global_numel(self) -> Expr:
        return product(self.shape)

    def local_numel(self) -> Expr:
        return product(self.local_shape())

    def local_bytes(self) -> Expr:
        return self.local_numel() * element_bytes(self.element_type)

    def with_layout(
        self,
        splits: Sequence[Sequence[str]] | None = None,
        partial: Iterable[str] | None = None,
    ):
        """The same global tensor with another distribution; a padded dim stays padded
        where its axes stay the same."""
        splits = self.splits if splits is None else splits
        dims = [d if tuple(axes) == d.axis_names else DimAttr(d.size, axes)
                for d, axes in zip(self.dims.data, splits, strict=True)]
        partial = self.partial_axes if partial is None else frozenset(partial)
        if all(new is old for new, old in zip(dims, self.dims.data)) and partial == self.partial_axes:
            return self  # the same layout: the same (immutable) type
        return type(self)(dims, self.element_type, partial)

    # -- syntax ------------------------------------------------------------------------
    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            dims = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: parse_dim(parser)
            )
            partial = parse_partial_axes(parser)
            parser.parse_punctuation(",")
            element_type = parser.parse_type()
        return (
            ArrayAttr(DimAttr(size, axes, padded) for size, axes, padded in dims),
            _axis_names(sorted(set(partial))),
            element_type,
        )

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<" + self.layout_str())
        printer.print_string(", ")
        printer.print_attribute(self.element_type)
        printer.print_string(">")

    def layout_str(self) -> str:
        """`[B/dp, H] @tp`: the shape and distribution in STAGE's notation."""
        dims = ", ".join(print_dim(d.expr, d.axis_names, d.padded.data) for d in self.dims.data)
        return f"[{dims}]" + print_partial_axes(sorted(self.partial_axes))

    # -- verification --------------------------------------------------------------------
    def verify(self) -> None:
        element_bytes(self.element_type)
        seen: set[str] = set()
        for axis in [a for s in self.splits for a in s] + sorted(self.partial_axes):
            if axis in seen:
                raise VerifyException(
                    f"mesh axis '{axis}' distributes {self.layout_str()} twice; "
                    "an axis may split one dim or mark a partial sum, not both"
                )
            seen.add(axis)
        for d in self.dims.data:
            size = d.expr
            # A symbolic size must be positive for some binding: a lone negative term never is.
            if (size.is_constant and (size.as_int() or 0) <= 0) or (
                size.is_monomial and str(size).startswith("-")
            ):
                raise VerifyException(f"dim size {size} of {self.layout_str()} must be positive")


@irdl_attr_definition
class TensorType(DistributedTensorType):
    """A tensor in device memory, distributed over a mesh."""

    name = "stg.tensor"


@irdl_attr_definition
class HostTensorType(DistributedTensorType):
    """A tensor offloaded to host memory (what stg.offload produces, stg.reload takes)."""

    name = "stg.host"


@irdl_attr_definition
class TokenType(ParametrizedAttribute, TypeAttribute):
    """Completion of an asynchronous op; stg.wait on it yields the payload, if any.

    `!stg.token<!stg.tensor<[B, H], bf16>>` carries a value; bare `!stg.token` only
    orders (an asynchronous send or release).
    """

    name = "stg.token"

    payload: ArrayAttr[Attribute]

    def __init__(self, payload: Attribute | None = None):
        super().__init__(ArrayAttr([] if payload is None else [payload]))

    @property
    def value_type(self) -> Attribute | None:
        return self.payload.data[0] if self.payload.data else None

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        if parser.parse_optional_punctuation("<") is None:
            return (ArrayAttr([]),)
        payload = parser.parse_type()
        parser.parse_punctuation(">")
        return (ArrayAttr([payload]),)

    def print_parameters(self, printer: Printer) -> None:
        if self.value_type is not None:
            printer.print_string("<")
            printer.print_attribute(self.value_type)
            printer.print_string(">")

    def verify(self) -> None:
        if self.value_type is not None and not isinstance(
            self.value_type, DistributedTensorType
        ):
            raise VerifyException(
                f"a token carries a !stg.tensor or !stg.host, not {self.value_type}"
            )
