"""Textual syntax of symbolic sizes, dims and partial-sum axes inside stg attributes.

Sizes are parsed from xDSL's token stream (the lexer already has + - * / ( ) and
identifiers), so they can sit inside any attribute or op syntax:

    expr   := term (('+' | '-') term)*
    term   := unary (('*' | '/') unary)*
    unary  := '-' unary | atom
    atom   := integer | identifier | '(' expr ')'

In a dim, a top-level '/' introduces a split axis instead of a quotient:

    dim    := factor ('*' factor)* ('/' axis)*
    factor := integer | identifier | '(' expr ')'

and partial-sum axes follow the shape as `@tp` or `@dp*tp`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.parser import AttrParser

from stagec.dialects.symbolic import Expr, SymbolicError


def _symbol(parser: AttrParser, name: str, pos) -> Expr:
    try:
        return Expr.sym(name)
    except SymbolicError as e:
        parser.raise_error(f"invalid symbol '{name}': {e}", pos, parser.pos)


def _apply(parser: AttrParser, pos, op: Callable[[Expr, Expr], Expr], a: Expr, b: Expr) -> Expr:
    try:
        return op(a, b)
    except SymbolicError as e:
        parser.raise_error(str(e), pos, parser.pos)


def _parse_atom(parser: AttrParser) -> Expr:
    pos = parser.pos
    if (value := parser.parse_optional_integer(allow_boolean=False, allow_negative=False)) is not None:
        return Expr.const(value)
    if (name := parser.parse_optional_identifier()) is not None:
        return _symbol(parser, name, pos)
    if parser.parse_optional_punctuation("(") is not None:
        inner = parse_expr(parser)
        parser.parse_punctuation(")", " to close a parenthesised size")
        return inner
    parser.raise_error("expected a size: an integer, a symbol or '(' expression ')'")


def _parse_unary(parser: AttrParser) -> Expr:
    if parser.parse_optional_punctuation("-") is not None:
        return -_parse_unary(parser)
    return _parse_atom(parser)


def _parse_term(parser: AttrParser) -> Expr:
    value = _parse_unary(parser)
    while True:
        pos = parser.pos
        if parser.parse_optional_punctuation("*") is not None:
            value = _apply(parser, pos, Expr.__mul__, value, _parse_unary(parser))
        elif parser.parse_optional_punctuation("/") is not None:
            value = _apply(parser, pos, Expr.__truediv__, value, _parse_unary(parser))
        else:
            return value


def parse_expr(parser: AttrParser) -> Expr:
    """Parse a symbolic expression such as `(H + 2*KV*D)/tp`."""
    value = _parse_term(parser)
    while True:
        if parser.parse_optional_punctuation("+") is not None:
            value = value + _parse_term(parser)
        elif parser.parse_optional_punctuation("-") is not None:
            value = value - _parse_term(parser)
        else:
            return value


def parse_dim(parser: AttrParser) -> tuple[Expr, tuple[str, ...], int]:
    """Parse `4*H/tp/cp` into its global size (4*H), split axes (tp, cp) and padded
    per-rank extent: 0, or the n of a padded dim `H/fsdp:n` (docs/sharding.md)."""
    size = _parse_atom(parser)
    while parser.parse_optional_punctuation("*") is not None:
        size = size * _parse_atom(parser)
    axes: list[str] = []
    while parser.parse_optional_punctuation("/") is not None:
        pos = parser.pos
        axis = parser.parse_optional_identifier()
        if axis is None:
            parser.raise_error(
                "expected a mesh axis name after '/' in a dim; a quotient that is part "
                "of the size goes in parentheses, e.g. [(H/heads)/tp]",
                pos,
            )
        axes.append(axis)
    padded = 0
    if axes and parser.parse_optional_punctuation(":") is not None:
        pos = parser.pos
        padded = parser.parse_integer(allow_boolean=False, allow_negative=False)
        if padded < 1:
            parser.raise_error("a padded dim's per-rank extent must be positive", pos, parser.pos)
    return size, tuple(axes), padded


def parse_partial_axes(parser: AttrParser) -> tuple[str, ...]:
    """Parse the optional partial-sum suffix `@tp` or `@dp*tp`."""
    first = parser.parse_optional_symbol_name()
    if first is None:
        return ()
    axes = [first.data]
    while parser.parse_optional_punctuation("*") is not None:
        pos = parser.pos
        axis = parser.parse_identifier(" (a mesh axis of the partial sum)")
        if axis in axes:
            parser.raise_error(f"partial-sum axis '{axis}' is listed twice", pos, parser.pos)
        axes.append(axis)
    return tuple(axes)


def _is_bare_product(size: Expr) -> bool:
    """A size that prints without parentheses in a dim: `B`, `4*H`, `H*N`."""
    text = str(size)
    return size.is_integral and size.is_monomial and not text.startswith("-") and " " not in text


def print_dim(size: Expr, axes: Sequence[str], padded: int = 0) -> str:
    text = str(size) if _is_bare_product(size) else f"({size})"
    return text + "".join(f"/{a}" for a in axes) + (f":{padded}" if padded else "")


def print_partial_axes(axes: Sequence[str]) -> str:
    return f" @{'*'.join(axes)}" if axes else ""
