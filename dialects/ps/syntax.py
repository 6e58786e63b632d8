"""The ps dialect's one custom syntax: an op name, then its properties as keyword-value
pairs in a fixed order, then an optional region.

    ps.cluster @A throughput 120000.0 delay 0.16
    ps.layer "model.layers.3" bytes 3407872 slave 2

An op lists its fields as `Field(keyword, property, kind)`; `KeywordOp` prints and
parses them, so printing and parsing are exact inverses by construction. A field with
the keyword "" is positional. Kinds (and the property each holds):

    sym     @A                       StringAttr
    str     "model.norm"             StringAttr
    int     64                       IntAttr
    float   0.7                      FloatAttr f64 (printed with Python's shortest repr)
    bool    true                     IntegerAttr i1
    word    prepare                  StringAttr, one of the field's `words`
    floats  [1.0, 2.0]               ArrayAttr of FloatAttr
    matrix  [[1.0, 2.0], [3.0, 4.0]] ArrayAttr of ArrayAttr of FloatAttr
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

from xdsl.dialects.builtin import ArrayAttr, FloatAttr, IntAttr, IntegerAttr, IntegerType, StringAttr, f64
from xdsl.ir import Attribute, Block, Region
from xdsl.irdl import IRDLOperation
from xdsl.parser import Parser
from xdsl.printer import Printer


@dataclass(frozen=True)
class Field:
    keyword: str
    prop: str
    kind: str
    words: tuple[str, ...] = ()


def format_float(value: float) -> str:
    """Python's shortest round-tripping form, with the '.' MLIR's lexer needs."""
    text = repr(float(value))
    if not math.isfinite(value):
        return text  # verifiers refuse these; printing must still not crash
    mantissa, _, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + (f"e{exponent}" if exponent else "")


def to_attr(kind: str, value: Any) -> Attribute:
    """The property attribute of a field kind for a Python value."""
    if kind in ("sym", "str", "word"):
        return StringAttr(value)
    if kind == "int":
        return IntAttr(int(value))
    if kind == "float":
        return FloatAttr(float(value), f64)
    if kind == "bool":
        return IntegerAttr(int(bool(value)), IntegerType(1))
    if kind == "floats":
        return ArrayAttr([FloatAttr(float(v), f64) for v in value])
    if kind == "matrix":
        return ArrayAttr([ArrayAttr([FloatAttr(float(v), f64) for v in row]) for row in value])
    raise ValueError(f"unknown field kind {kind}")


def from_attr(kind: str, attr: Attribute) -> Any:
    """The Python value of a field's property attribute."""
    if kind in ("sym", "str", "word"):
        return attr.data
    if kind == "int":
        return attr.data
    if kind == "float":
        return attr.value.data
    if kind == "bool":
        return bool(attr.value.data)
    if kind == "floats":
        return tuple(a.value.data for a in attr.data)
    if kind == "matrix":
        return tuple(tuple(a.value.data for a in row.data) for row in attr.data)
    raise ValueError(f"unknown field kind {kind}")


def _print_value(printer: Printer, kind: str, value: Any) -> None:
    if kind == "sym":
        printer.print_symbol_name(value)
    elif kind == "str":
        printer.print_string_literal(value)
    elif kind in ("int", "word"):
        printer.print_string(str(value))
    elif kind == "float":
        printer.print_string(format_float(value))
    elif kind == "bool":
        printer.print_string("true" if value else "false")
    elif kind == "floats":
        printer.print_string("[" + ", ".join(format_float(v) for v in value) + "]")
    elif kind == "matrix":
        rows = ("[" + ", ".join(format_float(v) for v in row) + "]" for row in value)
        printer.print_string("[" + ", ".join(rows) + "]")


def _parse_float(parser: Parser) -> float:
    return float(parser.parse_number(context_msg=" (a number)"))


def _parse_value(parser: Parser, field: Field) -> Any:
    kind = field.kind
    if kind == "sym":
        return parser.parse_symbol_name().data
    if kind == "str":
        return parser.parse_str_literal(f" ({field.keyword or field.prop})")
    if kind == "int":
        return parser.parse_integer(allow_boolean=False, context_msg=f" ({field.keyword or field.prop})")
    if kind == "word":
        return parser.parse_keyword_in(field.words, f" ({' or '.join(field.words)})")
    if kind == "float":
        return _parse_float(parser)
    if kind == "bool":
        return parser.parse_boolean(f" ({field.keyword})")
    if kind == "floats":
        return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: _parse_float(parser))
    if kind == "matrix":
        return parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE,
            lambda: parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: _parse_float(parser)),
        )
    raise ValueError(f"unknown field kind {kind}")


class KeywordOp(IRDLOperation):
    """An op printed as `name kw value kw value ... attr-dict [region]` (module doc)."""

    FIELDS: ClassVar[tuple[Field, ...]] = ()

    @classmethod
    def build_with(cls, values: dict[str, Any], region: Region | None = None, **kwargs):
        properties = {f.prop: to_attr(f.kind, values[f.prop]) for f in cls.FIELDS}
        regions = [region] if region is not None else []
        return cls.create(properties=properties, regions=regions, **kwargs)

    def value(self, prop: str) -> Any:
        field = next(f for f in self.FIELDS if f.prop == prop)
        return from_attr(field.kind, self.properties[prop])

    def print(self, printer: Printer) -> None:
        for field in self.FIELDS:
            printer.print_string(" ")
            if field.keyword:
                printer.print_string(field.keyword + " ")
            _print_value(printer, field.kind, from_attr(field.kind, self.properties[field.prop]))
        self.print_extra(printer)
        # before a region, `{` would read as an attribute dictionary: MLIR's keyword form
        printer.print_op_attributes(self.attributes, print_keyword=bool(self.regions))
        if self.regions:
            printer.print_string(" ")
            printer.print_region(self.regions[0], print_entry_block_args=False, print_empty_block=True)

    def print_extra(self, printer: Printer) -> None:
        """Syntax an op prints after its fields (e.g. a step's transfers)."""

    @classmethod
    def parse(cls, parser: Parser):
        properties: dict[str, Attribute] = {}
        for field in cls.FIELDS:
            if field.keyword:
                parser.parse_keyword(field.keyword, f" ('{cls.name}' field {field.prop})")
            properties[field.prop] = to_attr(field.kind, _parse_value(parser, field))
        properties |= cls.parse_extra(parser)
        if cls.has_region():
            attributes = parser.parse_optional_attr_dict_with_keyword()
            attributes = attributes.data if attributes is not None else {}
        else:
            attributes = parser.parse_optional_attr_dict()
        regions = []
        if cls.has_region():
            region = parser.parse_optional_region()
            if region is None:
                region = Region(Block())
            elif not region.blocks:
                region.add_block(Block())
            regions.append(region)
        return cls.create(properties=properties, attributes=attributes, regions=regions)

    @classmethod
    def parse_extra(cls, parser: Parser) -> dict[str, Attribute]:
        return {}

    @classmethod
    def has_region(cls) -> bool:
        return False
