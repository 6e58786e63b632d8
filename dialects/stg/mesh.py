"""The device mesh: named axes, their sizes, and the rank <-> coordinate order.

    stg.mesh @world [dp, pp = 4, tp = 8]

Ranks are numbered row-major over the axes in declaration order, the last axis
varying fastest (as Megatron-LM places tp innermost):

    rank = ((c_dp * pp) + c_pp) * tp + c_tp

so a communicator group along an axis is the set of ranks that differ only in that
axis' coordinate. An axis without `= size` has the symbolic size named after it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from math import prod

from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr, SymbolNameConstraint
from xdsl.ir import Operation
from xdsl.irdl import IRDLOperation, irdl_op_definition, prop_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import OpTrait, SymbolOpInterface, SymbolTable
from xdsl.utils.exceptions import VerifyException

from stagec.dialects.stg.attributes import DistributedTensorType, ExprAttr, TokenType
from stagec.dialects.stg.syntax import parse_expr
from stagec.dialects.symbolic import Expr


@irdl_op_definition
class MeshOp(IRDLOperation):
    """Declares a device mesh: named axes with (symbolic) sizes."""

    name = "stg.mesh"

    sym_name = prop_def(SymbolNameConstraint())
    axes = prop_def(ArrayAttr[StringAttr])
    sizes = prop_def(ArrayAttr[ExprAttr])

    traits = traits_def(SymbolOpInterface())

    def __init__(
        self,
        name: str,
        axes: Mapping[str, int | str | Expr | None] | Sequence[str | tuple[str, int | str | Expr | None]],
    ):
        """`axes` maps names to sizes; a bare name (or size None) is symbolic."""
        pairs = list(axes.items()) if isinstance(axes, Mapping) else [
            a if isinstance(a, tuple) else (a, None) for a in axes
        ]
        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "axes": ArrayAttr(StringAttr(a) for a, _ in pairs),
                "sizes": ArrayAttr(
                    ExprAttr(Expr.sym(a) if s is None else Expr.of(s)) for a, s in pairs
                ),
            }
        )

    @property
    def axis_names(self) -> tuple[str, ...]:
        return tuple(a.data for a in self.axes.data)

    @property
    def axis_sizes(self) -> dict[str, Expr]:
        return {a: s.data for a, s in zip(self.axis_names, self.sizes.data, strict=True)}

    def numeric_sizes(self, env: Mapping[str, int] = {}) -> list[int]:
        return [s.subs(env).evaluate({}) for s in self.axis_sizes.values()]

    def rank_of(self, coords: Sequence[int], env: Mapping[str, int] = {}) -> int:
        rank = 0
        for c, size in zip(coords, self.numeric_sizes(env), strict=True):
            rank = rank * size + c
        return rank

    def coords_of(self, rank: int, env: Mapping[str, int] = {}) -> tuple[int, ...]:
        coords = []
        for size in reversed(self.numeric_sizes(env)):
            rank, c = divmod(rank, size)
            coords.append(c)
        return tuple(reversed(coords))

    def group_of(self, rank: int, axes: Iterable[str], env: Mapping[str, int] = {}) -> list[int]:
        """Ranks that share `rank`'s coordinates on every axis but `axes`, in rank order."""
        varying = set(axes)
        sizes = self.numeric_sizes(env)
        base = self.coords_of(rank, env)
        ranks = []
        for i in range(prod(sizes)):
            c = self.coords_of(i, env)
            if all(c[k] == base[k] for k, a in enumerate(self.axis_names) if a not in varying):
                ranks.append(i)
        return ranks

    def verify_(self) -> None:
        names = self.axis_names
        if len(set(names)) != len(names):
            raise VerifyException(f"mesh @{self.sym_name.data} declares an axis twice: {list(names)}")
        if len(self.sizes.data) != len(names):
            raise VerifyException("mesh: one size per axis is required")
        for axis, size in self.axis_sizes.items():
            value = size.as_int()
            if size.is_constant and (value is None or value < 1):
                raise VerifyException(f"mesh axis '{axis}' must have a positive integer size, not {size}")

    @classmethod
    def parse(cls, parser: Parser) -> MeshOp:
        name = parser.parse_symbol_name().data

        def parse_axis() -> tuple[str, Expr | None]:
            axis = parser.parse_identifier(" (a mesh axis name)")
            size = parse_expr(parser) if parser.parse_optional_punctuation("=") else None
            return axis, size

        axes = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parse_axis)
        op = cls(name, axes)
        op.attributes |= parser.parse_optional_attr_dict()
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        parts = [
            a if s == Expr.sym(a) else f"{a} = {s}" for a, s in self.axis_sizes.items()
        ]
        printer.print_string(f" [{', '.join(parts)}]")
        printer.print_op_attributes(self.attributes)


def enclosing_meshes(op: Operation) -> list[MeshOp]:
    """The meshes declared at the top of the nearest module around `op`."""
    module = op
    while module is not None and not isinstance(module, ModuleOp):
        module = module.parent_op()
    if module is None:
        return []
    return [o for o in module.ops if isinstance(o, MeshOp)]


def lookup_mesh(op: Operation, name: str) -> MeshOp:
    found = SymbolTable.lookup_symbol(op, name) if _has_symbol_table(op) else None
    if not isinstance(found, MeshOp):
        raise VerifyException(f"'{op.name}' refers to @{name}, which is not a stg.mesh in scope")
    return found


def _has_symbol_table(op: Operation) -> bool:
    parent = op.parent_op()
    while parent is not None:
        if parent.has_trait(SymbolTable):
            return True
        parent = parent.parent_op()
    return False


def _tensor_types(op: Operation) -> Iterable[DistributedTensorType]:
    for value in (*op.operands, *op.results):
        ty = value.type
        if isinstance(ty, TokenType):
            ty = ty.value_type
        if isinstance(ty, DistributedTensorType):
            yield ty


class MeshAxesDeclared(OpTrait):
    """Every mesh axis an op's tensors mention is declared by a stg.mesh of its module."""

    def verify(self, op: Operation) -> None:
        used = set()
        for ty in _tensor_types(op):
            used |= ty.mesh_axes
        if not used:
            return
        meshes = enclosing_meshes(op)
        declared = {a for m in meshes for a in m.axis_names}
        if missing := sorted(used - declared):
            where = (
                f"declared axes: {', '.join(sorted(declared))}" if meshes else "the module declares no stg.mesh"
            )
            raise VerifyException(
                f"mesh axis '{missing[0]}' is not declared by any stg.mesh ({where})"
            )
