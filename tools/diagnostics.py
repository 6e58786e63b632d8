"""Errors in input IR, located as mlir-opt locates them: `file:line:col: error: ...`.

A parser that gives each op the place of its name in the input, the formatting of
parse errors with the source line marked, and finding which op a failed
verification was about (xDSL's verifier raises the message but does not say).
"""

from __future__ import annotations

import bisect
import dataclasses
import re

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr, UnknownLoc
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import (
    DiagnosticException,
    MultipleSpansParseError,
    ParseError,
    VerifyException,
)
from xdsl.utils.lexer import Span

from stagec.tools.errors import UsageError


class IRError(UsageError):
    """An error in the input IR: it does not parse, verify, or get through a pass.
    Its message is located already (`file:line:col: error: ...`).

    --parsing-diagnostics / --verify-diagnostics print these and go on (exit code 0),
    so that a lit test can pin their text.
    """

    def __init__(self, message: str, *, when_parsing: bool):
        super().__init__(message)
        self.when_parsing = when_parsing


class BuiltInvalidIR(ParseError):
    """An attribute or op that the parser built but that does not verify.

    It has a place in the text like a parse error, and is reported like one, but it
    is a verification error: --verify-diagnostics prints it, as xdsl-opt does.
    """


# `%0 = `, `%a, %b:2 = `: the results before an op's name.
_OP_RESULTS = re.compile(r"(?:%[\w$.-]+(?::\d+)?\s*,\s*)*%[\w$.-]+(?::\d+)?\s*=\s*")


class LocatingParser(Parser):
    """A Parser that gives each op the file:line:col of its name, as mlir-opt does.

    xDSL ops carry no location unless the text writes `loc(...)`; with this one a
    verifier error can point into the input file. `line_offset` is where the text
    starts in its file (a --split-input-file chunk).
    """

    def __init__(self, ctx: Context, text: str, file_name: str, line_offset: int = 0):
        super().__init__(ctx, text, file_name)
        self.file_name = StringAttr(file_name)
        self.line_offset = line_offset
        self._op_name_start = 0
        # Where lines end, to find an op's line by bisection: Span.get_location counts
        # the newlines from the top of the file, once per op, which is quadratic.
        self._newlines = [match.start() for match in re.finditer("\n", text)]

    def parse_operation(self) -> Operation:
        start = self.pos
        if results := _OP_RESULTS.match(self.lexer.input.content, start):
            start = results.end()
        self._op_name_start = start
        try:
            op = super().parse_operation()
        except VerifyException as error:
            span = Span(start, self.pos, self.lexer.input)
            raise BuiltInvalidIR(span, str(error)) from None
        if isinstance(op.location, UnknownLoc):  # else the text gave a loc(...)
            op.location = self._file_line_col(start)
        return op

    def _file_line_col(self, position: int) -> FileLineColLoc:
        lines_before = bisect.bisect_left(self._newlines, position)
        line_start = self._newlines[lines_before - 1] + 1 if lines_before else 0
        return FileLineColLoc(
            self.file_name,
            IntAttr(self.line_offset + lines_before + 1),
            IntAttr(position - line_start + 1),
        )

    def _get_op_by_name(self, name: str) -> type[Operation]:
        # Overridden to mark an unknown op's name, not the token after it.
        if op_type := self.ctx.get_optional_op(
            name, dialect_stack=self._parser_state.dialect_stack
        ):
            return op_type
        start = self._op_name_start
        quotes = 2 if self.lexer.input.content[start] == '"' else 0
        dialects = ", ".join(self.ctx.registered_dialect_names)
        self.raise_error(
            f"unregistered operation '{name}' (known dialects: {dialects};"
            " --allow-unregistered-dialect accepts other ops in generic form)",
            start,
            start + len(name) + quotes,
        )


def format_parse_error(error: ParseError, line_offset: int = 0) -> str:
    """`file:line:col: error: message`, then the source line with the place marked."""
    span = dataclasses.replace(error.span, line_offset=line_offset)
    lines = [_located("error", error.msg, span)]
    if isinstance(error, MultipleSpansParseError):
        for note_span, note in error.refs:
            note_span = dataclasses.replace(note_span, line_offset=line_offset)
            lines.append(_located("note", note or "", note_span))
    return "\n".join(lines)


def _located(severity: str, message: str, span: Span[str] | Span[bytes]) -> str:
    excerpt = span.print_with_context(None).split("\n", 1)[1].rstrip("\n")
    return f"{span.get_location()}: {severity}: {message}\n{excerpt}"


def verify_error_message(
    module: Operation, error: DiagnosticException, input_name: str, context: str = ""
) -> str:
    """`file:line:col: error: 'op' op message` for the op of `module` that fails to
    verify, or `input_name: error: message` when no single op does; `context` (such
    as which pass the IR came from) goes at the end."""
    if (failing := find_failing_op(module)) is None:
        return f"{input_name}: error: {error}{context}"
    op, op_error = failing
    return f"{op_location(op, input_name)}: error: '{_op_name(op)}' op {op_error}{context}"


def find_failing_op(
    module: Operation,
) -> tuple[Operation, DiagnosticException] | None:
    """The first op (in pre-order) that does not verify on its own: xDSL's verifier
    raises the message but does not say which op it was about."""
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except DiagnosticException as error:
            return op, error
    return None


def _op_name(op: Operation) -> str:
    op_name = op.attributes.get("op_name__")  # an UnregisteredOp keeps its name here
    return op_name.data if isinstance(op_name, StringAttr) else op.name


def op_location(op: Operation, input_name: str) -> str:
    location = op.location
    if isinstance(location, FileLineColLoc):
        return f"{location.filename.data}:{location.line.data}:{location.column.data}"
    return input_name
