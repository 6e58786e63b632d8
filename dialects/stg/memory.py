"""Memory ops: free a buffer, move it to host and back, and wait for async work.

    stg.release %w : T
    %h = stg.offload %x : T -> !stg.host<...>        (async: -> !stg.token<!stg.host<...>>)
    %y = stg.reload %h : !stg.host<...> -> T         (async: -> !stg.token<T>)
    %v = stg.wait %t : !stg.token<T>                 (yields T; a bare token yields nothing)
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import StringAttr, UnitAttr
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    opt_result_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from stagec.dialects.stg.attributes import DistributedTensorType, HostTensorType, TensorType, TokenType
from stagec.dialects.stg.cost import CostInterface
from stagec.dialects.stg.mesh import MeshAxesDeclared
from stagec.dialects.stg.schedule import parse_stream, print_stream
from stagec.dialects.symbolic import Expr


@irdl_op_definition
class ReleaseOp(IRDLOperation):
    """Frees a device buffer after its last use (DeepCompile §4.1)."""

    name = "stg.release"

    input = operand_def(TensorType)

    traits = traits_def(MeshAxesDeclared())
    assembly_format = "$input attr-dict `:` type($input)"

    def __init__(self, input):
        super().__init__(operands=[input])


class _TransferOp(IRDLOperation, CostInterface):
    """Copies a tensor between device and host, keeping its layout."""

    is_async = opt_prop_def(UnitAttr, prop_name="async")
    stream = opt_prop_def(StringAttr)  # the scheduled form's copy stream (schedule.py)
    traits = traits_def(MeshAxesDeclared())
    TARGET_KIND: ClassVar[type[DistributedTensorType]]
    # A copy does no arithmetic.
    FLOP_CATEGORY: ClassVar = "other"

    def __init__(self, input, is_async: bool = False):
        src = input.type
        dst = self.TARGET_KIND(src.dims.data, src.element_type, src.partial_axes)
        super().__init__(
            operands=[input],
            result_types=[TokenType(dst) if is_async else dst],
            properties={"async": UnitAttr()} if is_async else {},
        )

    def verify_(self) -> None:
        src, out = self.operands[0].type, self.results[0].type
        dst = out.value_type if isinstance(out, TokenType) else out
        if isinstance(out, TokenType) != (self.is_async is not None):
            raise VerifyException(f"'{self.name}': an async transfer returns a !stg.token, a synchronous one a tensor")
        if not isinstance(dst, self.TARGET_KIND) or dst.parameters != src.parameters:
            want = self.TARGET_KIND(src.dims.data, src.element_type, src.partial_axes)
            raise VerifyException(f"'{self.name}': the result must be {want}, with the input's layout")

    def flops(self) -> Expr:
        return Expr.const(0)

    def bytes_moved(self) -> Expr:
        return self.operands[0].type.local_bytes()

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.operands[0])
        if self.is_async is not None:
            printer.print_string(" async")
        print_stream(printer, self)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.operands[0].type)
        printer.print_string(" -> ")
        printer.print_attribute(self.results[0].type)

    @classmethod
    def parse(cls, parser: Parser):
        operand = parser.parse_unresolved_operand()
        is_async = parser.parse_optional_keyword("async") is not None
        stream = parse_stream(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        src = parser.parse_type()
        parser.parse_punctuation("->")
        dst = parser.parse_type()
        return cls.create(
            operands=[parser.resolve_operand(operand, src)],
            result_types=[dst],
            properties=({"async": UnitAttr()} if is_async else {}) | stream,
            attributes=attrs,
        )


@irdl_op_definition
class OffloadOp(_TransferOp):
    """Device -> host copy (DeepCompile §4.4); the device buffer is freed after it."""

    name = "stg.offload"

    input = operand_def(TensorType)
    result = result_def(HostTensorType | TokenType)
    TARGET_KIND: ClassVar = HostTensorType


@irdl_op_definition
class ReloadOp(_TransferOp):
    """Host -> device copy of an offloaded tensor."""

    name = "stg.reload"

    input = operand_def(HostTensorType)
    result = result_def(TensorType | TokenType)
    TARGET_KIND: ClassVar = TensorType


@irdl_op_definition
class WaitOp(IRDLOperation):
    """Blocks until an async op completes; yields the token's payload, if it has one."""

    name = "stg.wait"

    token = operand_def(TokenType)
    result = opt_result_def(TensorType | HostTensorType)

    traits = traits_def(MeshAxesDeclared())

    def __init__(self, token):
        payload = token.type.value_type
        super().__init__(operands=[token], result_types=[[payload] if payload is not None else []])

    def verify_(self) -> None:
        payload = self.token.type.value_type
        got = self.result.type if self.result is not None else None
        if got != payload:
            raise VerifyException(f"'stg.wait' must yield the token's payload {payload}, not {got}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.token)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.token.type)

    @classmethod
    def parse(cls, parser: Parser) -> WaitOp:
        operand = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        ty = parser.parse_type()
        if not isinstance(ty, TokenType):
            parser.raise_error(f"stg.wait takes a !stg.token, not {ty}", pos, parser.pos)
        op = cls(parser.resolve_operand(operand, ty))
        op.attributes |= attrs
        return op
