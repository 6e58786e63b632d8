"""The generic-form subset of torch-mlir's torch dialect that stagec reads.

It holds what it takes to parse and print torch-mlir output in generic form: the types
(`!torch.vtensor<[2,?],f32>`, `!torch.int`, `!torch.list<int>`, ...) and, for every
`torch.*` op name, a catch-all op class made on first use.

torch-mlir's symbolic shapes (`import_symbolic_shape_expressions=True`) bind each
dynamic tensor to expressions over `torch.symbolic_int` values:

    %0 = "torch.symbolic_int"() <{symbol_name = "B", min_val = 0, max_val = ...}> : () -> !torch.int
    "torch.bind_symbolic_shape"(%x, %0, %1) <{shape_expressions = affine_map<()[s0, s1] -> (s0 * s1, 64)>}> : ...

A product of two symbols (`s0 * s1`, a flattened batch and sequence) makes the map
semi-affine, which xDSL's affine expressions refuse to build; `allow_semi_affine()`
(called when this module loads) lets them hold such products, floordiv, ceildiv and
mod by symbols, which is all that shape maps need: they are read, never simplified.
`shape_expressions(op)` reads a bind_symbolic_shape op as stagec symbolic sizes.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence
from functools import cache

from xdsl.dialects.builtin import AffineMapAttr, ArrayAttr, IntAttr, NoneAttr, StringAttr
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineExpr,
    AffineSymExpr,
)
from xdsl.irdl import irdl_attr_definition, traits_def
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import OpTrait

from stagec.dialects.symbolic import Expr

DYNAMIC_SIZE = -1
"""A size printed `?`: torch-mlir's kUnknownSize."""


class TorchType(ParametrizedAttribute, TypeAttribute, ABC):
    """A type of the torch dialect; inside another torch type it is written without
    the `!torch.` prefix, as torch-mlir does (`!torch.list<int>`)."""


@irdl_attr_definition
class ValueTensorType(TorchType):
    """A tensor with value semantics: `!torch.vtensor<[2,?],f32>`.

    Either part may be unknown: `*` for an unknown rank, `unk` for an unknown dtype,
    and plain `!torch.vtensor` when both are.
    """

    name = "torch.vtensor"

    shape: ArrayAttr[IntAttr] | NoneAttr
    """The sizes, DYNAMIC_SIZE for `?`; NoneAttr when the rank is unknown."""
    dtype: TypeAttribute | NoneAttr
    """The element type (f32, bf16, si64, i1, ...); NoneAttr when unknown (`unk`)."""

    def __init__(self, shape: Sequence[int] | None, dtype: TypeAttribute | None):
        super().__init__(
            NoneAttr() if shape is None else ArrayAttr(IntAttr(s) for s in shape),
            NoneAttr() if dtype is None else dtype,
        )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[Attribute, Attribute]:
        if parser.parse_optional_punctuation("<") is None:
            return NoneAttr(), NoneAttr()
        shape: Attribute = NoneAttr()
        if parser.parse_optional_punctuation("*") is None:
            shape = ArrayAttr(
                parser.parse_comma_separated_list(
                    parser.Delimiter.SQUARE, lambda: IntAttr(_parse_size(parser))
                )
            )
        parser.parse_punctuation(",")
        dtype = (
            NoneAttr() if parser.parse_optional_keyword("unk") else parser.parse_type()
        )
        parser.parse_punctuation(">")
        return shape, dtype

    def print_parameters(self, printer: Printer) -> None:
        if self.shape == NoneAttr() and self.dtype == NoneAttr():
            return
        printer.print_string("<")
        if isinstance(self.shape, ArrayAttr):
            sizes = ("?" if s.data == DYNAMIC_SIZE else str(s.data) for s in self.shape)
            printer.print_string(f"[{','.join(sizes)}],")
        else:
            printer.print_string("*,")
        if self.dtype == NoneAttr():
            printer.print_string("unk")
        else:
            printer.print_attribute(self.dtype)
        printer.print_string(">")


def _parse_size(parser: AttrParser) -> int:
    if parser.parse_optional_punctuation("?") is not None:
        return DYNAMIC_SIZE
    return parser.parse_integer(allow_boolean=False, allow_negative=False)


@irdl_attr_definition
class IntType(TorchType):
    """A Python int (64-bit): `!torch.int`."""

    name = "torch.int"


@irdl_attr_definition
class FloatType(TorchType):
    """A Python float (64-bit): `!torch.float`."""

    name = "torch.float"


@irdl_attr_definition
class BoolType(TorchType):
    """A Python bool: `!torch.bool`."""

    name = "torch.bool"


@irdl_attr_definition
class NoneType(TorchType):
    """Python's None: `!torch.none`."""

    name = "torch.none"


@irdl_attr_definition
class StringType(TorchType):
    """A Python str: `!torch.str`."""

    name = "torch.str"


@irdl_attr_definition
class DeviceType(TorchType):
    """A torch.device: `!torch.Device`."""

    name = "torch.Device"


class _ContainerType(TorchType, ABC):
    """A torch type over one torch type, written `<element>` without its prefix."""

    element: TorchType

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[TorchType]:
        with parser.in_angle_brackets():
            return (_parse_unprefixed_type(parser),)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(self.element.name.removeprefix("torch."))
            self.element.print_parameters(printer)


@irdl_attr_definition
class ListType(_ContainerType):
    """A Python list: `!torch.list<int>`."""

    name = "torch.list"


@irdl_attr_definition
class OptionalType(_ContainerType):
    """A value or None: `!torch.optional<list<int>>`."""

    name = "torch.optional"


TORCH_TYPES: tuple[type[TorchType], ...] = (
    ValueTensorType,
    IntType,
    FloatType,
    BoolType,
    NoneType,
    StringType,
    DeviceType,
    ListType,
    OptionalType,
)


_TYPES_BY_KEYWORD = {t.name.removeprefix("torch."): t for t in TORCH_TYPES}


def _parse_unprefixed_type(parser: AttrParser) -> TorchType:
    """Parse `int`, `list<int>`, `vtensor<[2],f32>`, ...: a torch type whose `!torch.`
    prefix is implied by the enclosing torch type."""
    keyword_span = parser.pos
    keyword = parser.parse_identifier(" (a torch type such as int or vtensor)")
    if (type_class := _TYPES_BY_KEYWORD.get(keyword)) is None:
        parser.raise_error(f"unknown torch type '{keyword}'", keyword_span, parser.pos)
    return type_class.new(type_class.parse_parameters(parser))


class TorchOp(Operation, ABC):
    """A torch-mlir op held in generic form (`"torch.aten.mm"(%a, %b) : ...`).

    Every `torch.*` name gets its own subclass (see `torch_op`), so `op.name` and
    isinstance checks work as for declared ops. The op's traits are unknown, so
    `has_trait` answers like an unregistered op: passes stay conservative with it.
    """

    name = "torch.generic"
    traits = traits_def()

    @classmethod
    def has_trait(
        cls, trait: type[OpTrait] | OpTrait, *, value_if_unregistered: bool = True
    ) -> bool:
        return value_if_unregistered


@cache
def torch_op(name: str) -> type[TorchOp]:
    """The catch-all op class of one `torch.*` op name, made once per name."""
    if not name.startswith("torch."):
        raise ValueError(f"'{name}' is not a torch op name")
    return type(f"TorchOp[{name}]", (TorchOp,), {"name": name})


class TorchDialect(Dialect):
    """A dialect that also answers for op names it does not declare.

    A Context cannot be told that a dialect owns every name under its prefix, so the
    context stagec-opt builds asks each dialect's `generic_op(name)` when a
    `dialect.op` name is not among the loaded ops.
    """

    def generic_op(self, name: str) -> type[Operation]:
        return torch_op(name)


Torch = TorchDialect("torch", [], list(TORCH_TYPES))


# -- symbolic shapes ---------------------------------------------------------------------

_SEMI_AFFINE = {
    "__mul__": AffineBinaryOpKind.Mul,
    "__floordiv__": AffineBinaryOpKind.FloorDiv,
    "ceil_div": AffineBinaryOpKind.CeilDiv,
    "__mod__": AffineBinaryOpKind.Mod,
}


def allow_semi_affine() -> None:
    """Let xDSL's affine expressions (and so its affine_map parser) build `s0 * s1`,
    `s0 floordiv s1`, `s0 ceildiv s1` and `s0 mod s1`, as MLIR does; affine operands
    keep xDSL's own simplifications. Idempotent."""
    for method, kind in _SEMI_AFFINE.items():
        original = getattr(AffineExpr, method)
        if getattr(original, "_stagec_semi_affine", False):
            continue

        def semi_affine(self, other, _original=original, _kind=kind):
            try:
                return _original(self, other)
            except NotImplementedError:
                # a non-constant right-hand side: MLIR's semi-affine form
                return AffineBinaryOpExpr(_kind, self, other)

        semi_affine._stagec_semi_affine = True
        setattr(AffineExpr, method, semi_affine)


allow_semi_affine()


class SymbolicShapeError(ValueError):
    """A shape expression stagec cannot read as a symbolic size."""


def affine_to_expr(expr: AffineExpr, symbols: Sequence[Expr]) -> Expr:
    """An affine (or semi-affine) expression over symbols s0, s1, ... as a stagec
    size; `symbols[i]` is what s<i> stands for. floordiv and ceildiv read as exact
    division (stg sizes are exact; instantiation checks divisibility)."""
    if isinstance(expr, AffineConstantExpr):
        return Expr.const(expr.value)
    if isinstance(expr, AffineSymExpr):
        return symbols[expr.position]
    if isinstance(expr, AffineBinaryOpExpr):
        lhs, rhs = affine_to_expr(expr.lhs, symbols), affine_to_expr(expr.rhs, symbols)
        if expr.kind == AffineBinaryOpKind.Add:
            return lhs + rhs
        if expr.kind == AffineBinaryOpKind.Mul:
            return lhs * rhs
        if expr.kind in (AffineBinaryOpKind.FloorDiv, AffineBinaryOpKind.CeilDiv):
            # stg sizes are exact: `5*B*S floordiv 16` (an MoE capacity) is 5*B*S/16, and
            # stg-instantiate reports the B and S for which it is not an integer
            return lhs / rhs
    raise SymbolicShapeError(f"shape expression '{expr}' is not a product of sizes")


def shape_expressions(op: Operation) -> tuple[SSAValue, tuple[Expr, ...]]:
    """A `torch.bind_symbolic_shape` op's tensor and its sizes as stagec expressions,
    each `torch.symbolic_int` operand standing for the symbol it names."""
    if op.name != "torch.bind_symbolic_shape":
        raise ValueError(f"'{op.name}' binds no symbolic shape")
    attr = op.properties.get("shape_expressions") or op.attributes.get("shape_expressions")
    if not isinstance(attr, AffineMapAttr):
        raise SymbolicShapeError("torch.bind_symbolic_shape without an affine_map shape_expressions")
    symbols = [Expr.sym(symbol_name(v)) for v in op.operands[1:]]
    return op.operands[0], tuple(affine_to_expr(e, symbols) for e in attr.data.results)


def symbol_name(value: SSAValue) -> str:
    """The name of the symbol a `torch.symbolic_int` result stands for."""
    owner = value.owner
    if not isinstance(owner, Operation) or owner.name != "torch.symbolic_int":
        raise SymbolicShapeError("a symbolic shape operand is not a torch.symbolic_int result")
    name = owner.properties.get("symbol_name") or owner.attributes.get("symbol_name")
    if not isinstance(name, StringAttr):
        raise SymbolicShapeError("torch.symbolic_int without a symbol_name")
    return name.data
