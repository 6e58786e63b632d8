"""Structure ops: repeated blocks, micro-batch loops and training phases.

80 identical layers are one body and a count, not 80 copies:

    %out, %acts = stg.repeat L carry(%h = %x : T) {
      ...                                        // one layer
      stg.yield %h2, %saved : T, S               // next carry, then per-iteration outputs
    }

Values threaded from one iteration to the next are *carried*; values that differ per
iteration are *scanned*: `scan(%s = %xs : [L, ...])` feeds slice i to iteration i (or
count-1-i with `reverse`, as the backward pass walks the layers), and each yielded
value after the carried ones is stacked into a result with a leading [count] dim.

A pipeline stage runs a slice of a layer stack: `stg.repeat L/4 offset L/2 of L`
runs layers [L/2, L/2 + L/4) of the L layers, so iteration i reads and writes the
per-layer state of layer L/2 + i (docs/pipeline.md). Without `offset ... of ...` the
repeat is the whole stack (offset 0 of count).
"""

from __future__ import annotations


from xdsl.dialects.builtin import UnitAttr
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Region, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    opt_prop_def,
    prop_def,
    region_def,
    var_operand_def,
    var_result_def,
    AttrSizedOperandSegments,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsTerminator
from xdsl.utils.exceptions import VerifyException

from stagec.dialects.stg.attributes import DimAttr, DistributedTensorType, ExprAttr, HostTensorType, TensorType
from stagec.dialects.stg.names import PhaseKind
from stagec.dialects.stg.syntax import parse_expr
from stagec.dialects.symbolic import Expr


def stacked(ty: DistributedTensorType, count: Expr) -> TensorType:
    """The per-iteration type with a leading, unsplit [count] dim."""
    return TensorType([DimAttr(count), *ty.dims.data], ty.element_type, ty.partial_axes)


def terminator(region: Region) -> YieldOp | None:
    """The stg.yield ending a body, if it has one (an empty region has no block)."""
    last = region.blocks[-1].last_op if region.blocks else None
    return last if isinstance(last, YieldOp) else None


def unstacked(ty: DistributedTensorType) -> TensorType:
    return TensorType(ty.dims.data[1:], ty.element_type, ty.partial_axes)


def _group_op():
    from stagec.dialects.stg.schedule import GroupOp

    return GroupOp


def _vjp_op():
    from stagec.dialects.stg.training import VjpOp

    return VjpOp


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a stg.repeat, stg.microbatch, stg.phase, stg.vjp or stg.group body with its values."""

    name = "stg.yield"

    values = var_operand_def()

    assembly_format = "($values^ `:` type($values))? attr-dict"
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(RepeatOp, MicroBatchOp, PhaseOp, _vjp_op(), _group_op())))

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[values])


class LoopOp(IRDLOperation):
    """A body run `count` times with carried and scanned values (see module doc)."""

    count = prop_def(ExprAttr)
    reverse = opt_prop_def(UnitAttr)
    carried = var_operand_def(TensorType)
    scanned = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    body = region_def("single_block")

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, count, carried, scanned, body: Region, reverse: bool = False):
        count = Expr.of(count)
        yielded = terminator(body)
        n = len(carried)
        result_types = [v.type for v in carried]
        if yielded is not None:
            result_types += [stacked(v.type, count) for v in yielded.values[n:]]
        super().__init__(
            operands=[carried, scanned],
            result_types=[result_types],
            regions=[body],
            properties={"count": ExprAttr(count), **({"reverse": UnitAttr()} if reverse else {})},
        )

    @property
    def count_expr(self) -> Expr:
        return self.count.data

    def verify_(self) -> None:
        what = f"'{self.name}'"
        count = self.count_expr
        if count.is_constant and (count.as_int() or 0) < 1:
            raise VerifyException(f"{what}: count must be a positive integer, not {count}")
        if not self.body.blocks:
            raise VerifyException(f"{what}: the body must end with stg.yield")
        args = self.body.block.args
        expected = [v.type for v in self.carried] + [unstacked(v.type) for v in self.scanned]
        for v in self.scanned:
            if v.type.rank == 0 or v.type.shape[0] != count or v.type.splits[0]:
                raise VerifyException(
                    f"{what}: a scanned value needs a leading, unsplit [{count}] dim, not {v.type.layout_str()}"
                )
        if [a.type for a in args] != expected:
            raise VerifyException(f"{what}: the body's arguments must be the carried values then the scanned slices")
        yielded = terminator(self.body)
        if yielded is None:
            raise VerifyException(f"{what}: the body must end with stg.yield")
        n = len(self.carried)
        if [v.type for v in yielded.values[:n]] != [v.type for v in self.carried]:
            raise VerifyException(f"{what}: the body must yield the carried values' types first")
        want = [v.type for v in self.carried] + [stacked(v.type, count) for v in yielded.values[n:]]
        if [r.type for r in self.outputs] != want:
            raise VerifyException(f"{what}: results must be the carried values then the stacked per-iteration outputs")

    def _print_slice(self, printer: Printer) -> None: ...

    @classmethod
    def _parse_slice(cls, parser: Parser) -> dict[str, ExprAttr]:
        return {}

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.count_expr}")
        self._print_slice(printer)
        args = self.body.block.args
        n = len(self.carried)
        for word, values, block_args in (
            ("carry", self.carried, args[:n]),
            ("scan", self.scanned, args[n:]),
        ):
            if not values:
                continue
            printer.print_string(f" {word}(")
            for i, (arg, value) in enumerate(zip(block_args, values)):
                if i:
                    printer.print_string(", ")
                printer.print_block_argument(arg, print_type=False)
                printer.print_string(" = ")
                printer.print_operand(value)
                printer.print_string(" : ")
                printer.print_attribute(value.type)
            printer.print_string(")")
        if self.reverse is not None:
            printer.print_string(" reverse")
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_block_terminators=True)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser):
        count = parse_expr(parser)
        layer_slice = cls._parse_slice(parser)
        groups: dict[str, list[tuple[Parser.Argument, SSAValue]]] = {"carry": [], "scan": []}
        for word in ("carry", "scan"):
            if parser.parse_optional_keyword(word) is None:
                continue

            def parse_binding():
                arg = parser.parse_argument(expect_type=False)
                parser.parse_punctuation("=")
                operand = parser.parse_unresolved_operand()
                parser.parse_punctuation(":")
                ty = parser.parse_type()
                return arg, parser.resolve_operand(operand, ty)

            groups[word] = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parse_binding)
        reverse = parser.parse_optional_keyword("reverse") is not None
        block_args = [arg.resolve(value.type) for arg, value in groups["carry"]]
        block_args += [arg.resolve(unstacked(value.type)) for arg, value in groups["scan"]]
        body = parser.parse_region(block_args)
        attrs = parser.parse_optional_attr_dict()
        op = cls(
            count,
            [v for _, v in groups["carry"]],
            [v for _, v in groups["scan"]],
            body,
            reverse,
        )
        op.properties |= layer_slice
        op.attributes |= attrs
        return op


@irdl_op_definition
class RepeatOp(LoopOp):
    """A repeated block (a layer stack): `stg.repeat 80 carry(...) { ... }`.

    `stg.repeat 20 offset 40 of 80 ...` is a slice of a longer stack (a pipeline
    stage's layers): iteration i is layer 40 + i of 80 (40 + 19 - i under `reverse`)
    when it reads or writes per-layer state. Stacked results and scanned values stay
    per iteration ([20, ...]).
    """

    name = "stg.repeat"

    offset = opt_prop_def(ExprAttr)
    stack = opt_prop_def(ExprAttr)

    def __init__(self, count, carried, scanned, body: Region, reverse: bool = False,
                 offset=None, stack=None):
        super().__init__(count, carried, scanned, body, reverse)
        if (offset is None) != (stack is None):
            raise ValueError("a slice of a layer stack needs both its offset and the stack's size")
        if offset is not None:
            self.offset = ExprAttr(Expr.of(offset))
            self.stack = ExprAttr(Expr.of(stack))

    @property
    def offset_expr(self) -> Expr:
        """The first layer this repeat runs (0 for a whole stack)."""
        return self.offset.data if self.offset is not None else Expr.const(0)

    @property
    def stack_expr(self) -> Expr:
        """The number of layers of the stack its per-layer state holds."""
        return self.stack.data if self.stack is not None else self.count_expr

    def verify_(self) -> None:
        super().verify_()
        if (self.offset is None) != (self.stack is None):
            raise VerifyException("'stg.repeat': 'offset' and 'of' (the stack's size) go together")
        if self.offset is None:
            return
        offset, stack = self.offset_expr, self.stack_expr
        if offset.is_constant and (offset.as_int() is None or offset.as_int() < 0):
            raise VerifyException(f"'stg.repeat': offset must be a non-negative integer, not {offset}")
        room = stack - offset - self.count_expr
        if room.is_constant and room.evaluate({}) < 0:
            raise VerifyException(
                f"'stg.repeat': layers [{offset}, {offset + self.count_expr}) do not fit in a stack of {stack}"
            )

    def _print_slice(self, printer: Printer) -> None:
        if self.offset is not None:
            printer.print_string(f" offset {self.offset_expr} of {self.stack_expr}")

    @classmethod
    def _parse_slice(cls, parser: Parser) -> dict[str, ExprAttr]:
        if parser.parse_optional_keyword("offset") is None:
            return {}
        offset = parse_expr(parser)
        parser.parse_keyword("of", " (the size of the layer stack the offset is in)")
        return {"offset": ExprAttr(offset), "stack": ExprAttr(parse_expr(parser))}


@irdl_op_definition
class MicroBatchOp(LoopOp):
    """The micro-batch loop of gradient accumulation: `stg.microbatch M carry(...) {...}`."""

    name = "stg.microbatch"


@irdl_attr_definition
class PhaseKindAttr(EnumAttribute[PhaseKind], SpacedOpaqueSyntaxAttribute):
    name = "stg.phase_kind"


@irdl_op_definition
class PhaseOp(IRDLOperation):
    """A phase of the step; what later phases need of it (saved activations, gradients)
    leaves through its stg.yield, which makes saved tensors explicit."""

    name = "stg.phase"

    kind = prop_def(PhaseKindAttr)
    # an optimizer state offloaded in the forward leaves it on the host for its reload
    # in the backward (stg-offload, deepcompile.md §4.4)
    outputs = var_result_def(TensorType | HostTensorType)
    body = region_def("single_block")

    def __init__(self, kind: PhaseKind, body: Region):
        yielded = terminator(body)
        types = [v.type for v in yielded.values] if yielded is not None else []
        super().__init__(result_types=[types], regions=[body], properties={"kind": PhaseKindAttr(kind)})

    def verify_(self) -> None:
        yielded = terminator(self.body)
        if yielded is None:
            raise VerifyException("'stg.phase': the body must end with stg.yield")
        if [v.type for v in yielded.values] != [r.type for r in self.outputs]:
            raise VerifyException("'stg.phase': results must be the yielded values")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.kind.data} ")
        printer.print_region(self.body, print_entry_block_args=False, print_block_terminators=True)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> PhaseOp:
        kind = parser.parse_str_enum(PhaseKind)
        op = cls(kind, parser.parse_region())
        attrs = parser.parse_optional_attr_dict()
        op.attributes |= attrs
        return op

