"""The ps dialect's one custom syntax: an op name, then its properties as keyword-value
pairs in a fixed order, then an optional region.

    ps.cluster @A throughput 120000.0 delay 0.16
    ps.layer "model.layers.3" bytes 3407872 slave 2
    ps.program @dips ... model "llama3.2-1b" overrides {num_hidden_layers = 4} { ... }

An op lists its fields as `Field(keyword, property, kind)`; `KeywordOp` prints and
parses them, so printing and parsing are exact inverses by construction. A field with
the keyword "" is positional. A field with a `default` is optional: it has a keyword,
its property may be absent (the default), and it is printed only when its value is not
the default. Kinds (and the property each holds):

    sym     @A                       StringAttr
    str     "model.norm"             StringAttr
    int     64                       IntAttr
    float   0.7                      FloatAttr f64 (printed with Python's shortest repr)
    bool    true                     IntegerAttr i1
    word    prepare                  StringAttr, one of the field's `words`
    floats  [1.0, 2.0]               ArrayAttr of FloatAttr
    matrix  [[1.0, 2.0], [3.0, 4.0]] ArrayAttr of ArrayAttr of FloatAttr
    config  {num_hidden_layers = 4, rope_scaling = {factor = 32.0, rope_type = "llama3"}}
            DictionaryAttr: keys of a Hugging Face config.json and their JSON values,
            as MLIR's attribute syntax writes them without the default types: an
            integer is i64, a number with a '.' f64, true/false i1, a string, `unit`
            JSON's null, [...] a list and {...} an object (`config_attr` /
            `config_value` convert; the Python values are JSON's)
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    BytesAttr,
    DictionaryAttr,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    UnitAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute, Block, Region
from xdsl.irdl import IRDLOperation
from xdsl.parser import Parser
from xdsl.printer import Printer


_REQUIRED = object()


@dataclass(frozen=True)
class Field:
    keyword: str
    prop: str
    kind: str
    words: tuple[str, ...] = ()
    default: Any = _REQUIRED  # an optional field's value when its property is absent

    @property
    def optional(self) -> bool:
        return self.default is not _REQUIRED


def format_float(value: float) -> str:
    """Python's shortest round-tripping form, with the '.' MLIR's lexer needs."""
    text = repr(float(value))
    if not math.isfinite(value):
        return text  # verifiers refuse these; printing must still not crash
    mantissa, _, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + (f"e{exponent}" if exponent else "")


_I1 = IntegerType(1)


def config_attr(value: Any) -> Attribute:
    """The attribute of a JSON value (module docstring, kind `config`), objects' keys
    sorted; ValueError for a value JSON has no word for, an integer outside i64, a
    float that is not finite or a key that is not an ASCII name."""
    if value is None:
        return UnitAttr()
    if isinstance(value, bool):
        return IntegerAttr(int(value), _I1)
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            raise ValueError(f"{value} does not fit in 64 bits")
        return IntegerAttr(value, i64)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value} is not a finite number")
        return FloatAttr(value, f64)
    if isinstance(value, str):
        return StringAttr(value)
    if isinstance(value, Mapping):
        for key in value:
            # ASCII: MLIR's text escapes other characters as bytes, which xDSL does
            # not read back in a dictionary's key (config keys are ASCII names)
            if not isinstance(key, str) or not key or not key.isascii():
                raise ValueError(f"key {key!r} is not a name; give an ASCII config key")
        # keys sorted, as MLIR keeps an attribute dictionary: one text for one config
        return DictionaryAttr({key: config_attr(value[key]) for key in sorted(value)})
    if isinstance(value, (list, tuple)):
        return ArrayAttr([config_attr(v) for v in value])
    raise ValueError(f"{value!r} ({type(value).__name__}) is not a JSON value")


def config_value(attr: Attribute) -> Any:
    """The JSON value of an attribute `config_attr` makes; ValueError, naming the
    attribute, for any other."""
    if isinstance(attr, UnitAttr):
        return None
    if isinstance(attr, IntegerAttr) and attr.type == _I1:
        return bool(attr.value.data)
    if isinstance(attr, IntegerAttr) and attr.type == i64:
        return attr.value.data
    if isinstance(attr, FloatAttr) and attr.type == f64:
        return attr.value.data
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, BytesAttr):
        # how xDSL reads back a string literal with escaped non-ASCII characters
        try:
            return attr.data.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{attr} is not UTF-8 text") from None
    if isinstance(attr, DictionaryAttr):
        return {key: config_value(v) for key, v in attr.data.items()}
    if isinstance(attr, ArrayAttr):
        return [config_value(v) for v in attr.data]
    raise ValueError(f"{attr} is not a JSON value; give an integer, a number with a '.', true or false, "
                     f"a string, unit (null), a list [...] or a dictionary {{...}}")


def _print_config(printer: Printer, attr: Attribute) -> None:
    """`attr` in the `config` kind's syntax: JSON values without MLIR's default types;
    anything else as MLIR prints it, so that printing never fails and the text parses
    back to the same attribute (the verifier names what is wrong with it)."""
    if isinstance(attr, IntegerAttr) and attr.type == _I1:
        printer.print_string("true" if attr.value.data else "false")
    elif isinstance(attr, IntegerAttr) and attr.type == i64:
        printer.print_string(str(attr.value.data))
    elif isinstance(attr, FloatAttr) and attr.type == f64 and math.isfinite(attr.value.data):
        printer.print_string(format_float(attr.value.data))
    elif isinstance(attr, StringAttr):
        printer.print_string_literal(attr.data)
    elif isinstance(attr, UnitAttr):
        printer.print_string("unit")
    elif isinstance(attr, DictionaryAttr):
        printer.print_string("{")
        for i, (key, value) in enumerate(attr.data.items()):
            printer.print_string(", " if i else "")
            printer.print_identifier_or_string_literal(key)
            printer.print_string(" = ")
            _print_config(printer, value)
        printer.print_string("}")
    elif isinstance(attr, ArrayAttr):
        printer.print_string("[")
        for i, value in enumerate(attr.data):
            printer.print_string(", " if i else "")
            _print_config(printer, value)
        printer.print_string("]")
    else:
        printer.print_attribute(attr)


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
    if kind == "config":
        if not isinstance(value, Mapping):
            raise ValueError(f"{value!r} is not a mapping of config keys")
        return config_attr(value)
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
    if kind == "config":
        return config_value(attr)
    raise ValueError(f"unknown field kind {kind}")


def _print_value(printer: Printer, kind: str, value: Any) -> None:
    if kind == "config":
        _print_config(printer, value)  # the attribute itself: it may not be a JSON value yet
    elif kind == "sym":
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
    if kind == "config":
        at = parser.pos
        attr = parser.parse_attribute()
        if not isinstance(attr, DictionaryAttr):
            parser.raise_error(f"expected a dictionary {{key = value, ...}} ({field.keyword})", at, parser.pos)
        return attr
    raise ValueError(f"unknown field kind {kind}")


class KeywordOp(IRDLOperation):
    """An op printed as `name kw value kw value ... attr-dict [region]` (module doc)."""

    FIELDS: ClassVar[tuple[Field, ...]] = ()

    @classmethod
    def build_with(cls, values: dict[str, Any], region: Region | None = None, **kwargs):
        properties = {f.prop: to_attr(f.kind, values[f.prop]) for f in cls.FIELDS
                      if not f.optional or (f.prop in values and values[f.prop] != f.default)}
        regions = [region] if region is not None else []
        return cls.create(properties=properties, regions=regions, **kwargs)

    def value(self, prop: str) -> Any:
        field = next(f for f in self.FIELDS if f.prop == prop)
        if prop not in self.properties:
            return copy.deepcopy(field.default)
        return from_attr(field.kind, self.properties[prop])

    def print(self, printer: Printer) -> None:
        for field in self.FIELDS:
            attr = self.properties.get(field.prop)
            if field.optional and (attr is None or attr == to_attr(field.kind, field.default)):
                continue
            printer.print_string(" ")
            if field.keyword:
                printer.print_string(field.keyword + " ")
            _print_value(printer, field.kind, attr if field.kind == "config" else from_attr(field.kind, attr))
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
            if field.optional:
                if parser.parse_optional_keyword(field.keyword) is None:
                    continue
                value = _parse_value(parser, field)
                attr = value if field.kind == "config" else to_attr(field.kind, value)
                if attr != to_attr(field.kind, field.default):  # the default is the absent property
                    properties[field.prop] = attr
                continue
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
