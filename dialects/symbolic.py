"""Exact symbolic dimension expressions.

Tensor sizes in the IR are expressions over named symbols with integer
coefficients, such as ``B``, ``S/sp``, ``4*H``, ``(H + 2*D*KV)/tp`` or
``B/(dp*sp)``. Passes compare them, substitute concrete values into them and
must reject configurations in which a size does not divide evenly, so the
arithmetic here is exact: no floats, and no sympy (IR construction for an
80-layer model performs a great many of these operations).

Canonical form
--------------
An :class:`Expr` is stored as ``numerator / denominator`` where

* the numerator is a polynomial with integer coefficients: a tuple of
  ``(monomial, coefficient)`` terms with no zero coefficient and no repeated
  monomial, in printing order (total degree descending, then the monomial's
  symbol names lexicographically, so the constant term comes last);
* a monomial is a tuple of ``(symbol, exponent)`` pairs sorted by symbol, with
  every exponent at least 1; the empty tuple is the monomial ``1``;
* the denominator is a single monomial with a positive integer coefficient;
* the gcd of all numerator coefficients and the denominator coefficient is 1;
* no symbol divides both every numerator term and the denominator.

Zero is ``0/1``. The polynomial ring is a unique factorisation domain and the
denominator is a monomial, so these rules leave exactly one representation per
value: equality and hashing compare the stored tuples, and printing the
canonical form gives canonical text that :meth:`Expr.parse` reads back.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from fractions import Fraction
from functools import lru_cache, partial
from math import gcd, lcm
from typing import NoReturn

__all__ = [
    "Expr",
    "ExprSyntaxError",
    "IndivisibleError",
    "SymbolicError",
    "UnboundSymbolError",
    "product",
    "sum_exprs",
]

Monomial = tuple[tuple[str, int], ...]
Term = tuple[Monomial, int]

_SYMBOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# --------------------------------------------------------------------------- errors


class SymbolicError(ValueError):
    """Base class of every error raised by this module."""


class ExprSyntaxError(SymbolicError):
    """Text that does not follow the expression grammar.

    ``position`` is the 0-based character offset of the offending token (the
    length of the text when the input ended too early).
    """

    def __init__(self, text: str, position: int, expected: str, found: str):
        self.text = text
        self.position = position
        self.expected = expected
        self.found = found
        super().__init__(
            f"expected {expected} but found {found} at position {position} in {text!r}"
        )

    def __reduce__(self):
        # Exceptions pickle through their constructor arguments, which here are
        # not the message (process pools pickle errors raised in workers).
        return (type(self), (self.text, self.position, self.expected, self.found))


class UnboundSymbolError(SymbolicError):
    """Evaluation was asked for while some symbols of the expression had no value."""

    def __init__(self, expr: Expr, symbols: Iterable[str]):
        self.expr = expr
        self.symbols = tuple(sorted(symbols))
        noun = "symbol" if len(self.symbols) == 1 else "symbols"
        super().__init__(f"cannot evaluate {expr}: unbound {noun} {', '.join(self.symbols)}")

    def __reduce__(self):
        return (type(self), (self.expr, self.symbols))


class IndivisibleError(SymbolicError):
    """An expression evaluated to a non-integer, i.e. a size does not divide evenly.

    ``env`` holds only the symbols the expression uses; ``numerator`` and
    ``denominator`` are the evaluated halves before reduction, so the message
    shows the division that failed (``B/dp is not an integer for B=10, dp=4 (10/4)``).
    """

    def __init__(self, expr: Expr, env: Mapping[str, int], numerator: int, denominator: int):
        self.expr = expr
        self.env = {name: env[name] for name in sorted(env)}
        self.numerator = numerator
        self.denominator = denominator
        super().__init__(
            f"{expr} is not an integer{_for_env(self.env)} ({numerator}/{denominator})"
        )

    def __reduce__(self):
        return (type(self), (self.expr, self.env, self.numerator, self.denominator))


def _for_env(env: Mapping[str, object]) -> str:
    """`` for B=10, dp=4`` (sorted), or nothing for a constant expression."""
    if not env:
        return ""
    return " for " + ", ".join(f"{name}={env[name]}" for name in sorted(env))


# ------------------------------------------------------------------ monomial helpers


def _mono_mul(a: Monomial, b: Monomial) -> Monomial:
    if not a:
        return b
    if not b:
        return a
    exponents = dict(a)
    for symbol, exponent in b:
        exponents[symbol] = exponents.get(symbol, 0) + exponent
    return tuple(sorted(exponents.items()))


def _mono_div(a: Monomial, b: Monomial) -> Monomial:
    """``a / b`` for a monomial ``b`` known to divide ``a``."""
    if not b:
        return a
    exponents = dict(a)
    for symbol, exponent in b:
        left = exponents[symbol] - exponent
        if left:
            exponents[symbol] = left
        else:
            del exponents[symbol]
    # Deleting keys keeps the (sorted) insertion order of ``a``.
    return tuple(exponents.items())


def _mono_lcm(a: Monomial, b: Monomial) -> Monomial:
    if a == b or not b:
        return a
    if not a:
        return b
    exponents = dict(a)
    for symbol, exponent in b:
        if exponent > exponents.get(symbol, 0):
            exponents[symbol] = exponent
    return tuple(sorted(exponents.items()))


def _mono_degree(mono: Monomial) -> int:
    return sum(exponent for _, exponent in mono)


def _mono_factors(mono: Monomial) -> list[str]:
    """The monomial as the list of symbols it multiplies, ``H*H*tp`` -> ``[H, H, tp]``."""
    return [symbol for symbol, exponent in mono for _ in range(exponent)]


@lru_cache(maxsize=65536)
def _term_order(mono: Monomial) -> tuple[int, tuple[str, ...]]:
    # Cached because every normalisation sorts by it and IR sizes reuse a
    # handful of monomials over and over.
    return (-_mono_degree(mono), tuple(_mono_factors(mono)))


# ------------------------------------------------------------------- canonical form


def _make(num: tuple[Term, ...], den_coef: int, den_mono: Monomial) -> Expr:
    """Wrap parts that are already canonical, bypassing normalisation."""
    expr = _new_expr(Expr)
    _set_num(expr, num)
    _set_den_coef(expr, den_coef)
    _set_den_mono(expr, den_mono)
    return expr


def _canonical(terms: Mapping[Monomial, int], den_coef: int, den_mono: Monomial) -> Expr:
    """Bring ``sum(terms) / (den_coef * den_mono)`` to canonical form (``den_coef != 0``)."""
    return _canonical_items(
        [(mono, coef) for mono, coef in terms.items() if coef], den_coef, den_mono
    )


def _canonical_items(items: list[Term], den_coef: int, den_mono: Monomial) -> Expr:
    """:func:`_canonical` for distinct monomials with nonzero coefficients."""
    if not items:
        return _ZERO
    if len(items) == 1:
        return _canonical_term(items[0][0], items[0][1], den_coef, den_mono)
    if den_coef < 0:
        den_coef = -den_coef
        items = [(mono, -coef) for mono, coef in items]
    divisor = den_coef
    for _, coef in items:
        if divisor == 1:
            break
        divisor = gcd(divisor, coef)
    if divisor != 1:
        den_coef //= divisor
        items = [(mono, coef // divisor) for mono, coef in items]
    if den_mono:
        items, den_mono = _cancel_common_symbols(items, den_mono)
    items.sort(key=lambda term: _term_order(term[0]))
    return _make(tuple(items), den_coef, den_mono)


def _canonical_term(mono: Monomial, coef: int, den_coef: int, den_mono: Monomial) -> Expr:
    """:func:`_canonical` for a single nonzero term: the path almost every size takes."""
    if den_coef < 0:
        den_coef, coef = -den_coef, -coef
    if den_coef != 1:
        divisor = gcd(coef, den_coef)
        if divisor != 1:
            coef //= divisor
            den_coef //= divisor
    if den_mono:
        exponents = dict(mono)
        remaining = []
        for symbol, exponent in den_mono:
            shared = exponents.get(symbol, 0)
            if shared >= exponent:
                if shared == exponent:
                    del exponents[symbol]
                else:
                    exponents[symbol] = shared - exponent
            else:
                if shared:
                    del exponents[symbol]
                remaining.append((symbol, exponent - shared))
        # Deleting or updating keys keeps the sorted order of ``mono``.
        mono = tuple(exponents.items())
        den_mono = tuple(remaining)
    return _make(((mono, coef),), den_coef, den_mono)


def _cancel_common_symbols(items: list[Term], den_mono: Monomial) -> tuple[list[Term], Monomial]:
    """Divide out every symbol power shared by all numerator terms and the denominator."""
    term_exponents = [dict(mono) for mono, _ in items]
    common = []
    for symbol, exponent in den_mono:
        shared = min(exponent, min(exps.get(symbol, 0) for exps in term_exponents))
        if shared:
            common.append((symbol, shared))
    if not common:
        return items, den_mono
    common_mono = tuple(common)
    return [(_mono_div(mono, common_mono), coef) for mono, coef in items], _mono_div(
        den_mono, common_mono
    )


# --------------------------------------------------------------------- arithmetic


def _add(a: Expr, b: Expr) -> Expr:
    if not b._num:
        return a
    if not a._num:
        return b
    if a._den_coef == b._den_coef and a._den_mono == b._den_mono:
        # The common case (both integral, or both over the same ``tp``) needs no rescaling.
        terms = dict(a._num)
        for mono, coef in b._num:
            terms[mono] = terms.get(mono, 0) + coef
        return _canonical(terms, a._den_coef, a._den_mono)
    den_coef = lcm(a._den_coef, b._den_coef)
    den_mono = _mono_lcm(a._den_mono, b._den_mono)
    terms: dict[Monomial, int] = {}
    for part in (a, b):
        scale = den_coef // part._den_coef
        extra = _mono_div(den_mono, part._den_mono)
        for mono, coef in part._num:
            mono = _mono_mul(mono, extra)
            terms[mono] = terms.get(mono, 0) + coef * scale
    return _canonical(terms, den_coef, den_mono)


def _mul(a: Expr, b: Expr) -> Expr:
    if not a._num or not b._num:
        return _ZERO
    if len(b._num) == 1:
        ((mono, coef),) = b._num
        return _scale(a, coef, mono, b._den_coef, b._den_mono)
    if len(a._num) == 1:
        ((mono, coef),) = a._num
        return _scale(b, coef, mono, a._den_coef, a._den_mono)
    terms: dict[Monomial, int] = {}
    for mono_a, coef_a in a._num:
        for mono_b, coef_b in b._num:
            mono = _mono_mul(mono_a, mono_b)
            terms[mono] = terms.get(mono, 0) + coef_a * coef_b
    return _canonical(terms, a._den_coef * b._den_coef, _mono_mul(a._den_mono, b._den_mono))


def _scale(a: Expr, coef: int, mono: Monomial, den_coef: int, den_mono: Monomial) -> Expr:
    """``a * (coef*mono) / (den_coef*den_mono)`` for nonzero ``coef`` and ``den_coef``."""
    den_coef *= a._den_coef
    den_mono = _mono_mul(a._den_mono, den_mono)
    if len(a._num) == 1:
        ((a_mono, a_coef),) = a._num
        return _canonical_term(_mono_mul(a_mono, mono), a_coef * coef, den_coef, den_mono)
    # Multiplying by one term maps distinct monomials to distinct monomials,
    # so there is nothing to combine.
    items = [(_mono_mul(a_mono, mono), a_coef * coef) for a_mono, a_coef in a._num]
    return _canonical_items(items, den_coef, den_mono)


def _div(a: Expr, b: Expr) -> Expr:
    if not b._num:
        raise SymbolicError(f"division by zero: {_grouped(a)}/0")
    if not a._num:
        return _ZERO
    if len(b._num) == 1:
        ((mono, coef),) = b._num
        return _scale(a, b._den_coef, b._den_mono, coef, mono)
    return _div_by_sum(a, b)


def _div_by_sum(a: Expr, b: Expr) -> Expr:
    """Divide by an expression whose numerator is a sum.

    The result can only be kept in canonical form (a polynomial over a
    monomial) when the dividend's numerator is the divisor's numerator times a
    single term, e.g. ``(2*a + 2*b)/(a + b)`` or ``(a*c + b*c)/(a + b)``; any
    other case would need a general rational-function denominator, which sizes
    never need, so it is reported instead of silently approximated.
    """
    if not a._num:
        return _ZERO
    ratio = _single_term_ratio(a._num, b._num)
    if ratio is None:
        raise SymbolicError(
            f"cannot divide by a sum: {_grouped(a)}/({b}) is not a polynomial over a monomial"
        )
    coef, exponents = ratio
    # a / b = (ratio * a_num/b_num) * b_den / a_den, with the ratio's negative
    # exponents moving into the denominator.
    num_mono = _mono_mul(tuple(sorted((s, e) for s, e in exponents.items() if e > 0)), b._den_mono)
    den_mono = _mono_mul(tuple(sorted((s, -e) for s, e in exponents.items() if e < 0)), a._den_mono)
    return _canonical(
        {num_mono: coef.numerator * b._den_coef}, coef.denominator * a._den_coef, den_mono
    )


def _single_term_ratio(
    dividend: tuple[Term, ...], divisor: tuple[Term, ...]
) -> tuple[Fraction, dict[str, int]] | None:
    """Find ``r = c * x1^e1 * ...`` (exponents of any sign) with ``dividend == r * divisor``.

    Multiplying by a single term maps terms one to one, so the divisor's first
    term must land on one of the dividend's terms; each candidate is checked.
    """
    if len(dividend) != len(divisor):
        return None
    target = dict(dividend)
    lead_mono, lead_coef = divisor[0]
    for mono, coef in dividend:
        exponents = dict(mono)
        for symbol, exponent in lead_mono:
            exponents[symbol] = exponents.get(symbol, 0) - exponent
        ratio_coef = Fraction(coef, lead_coef)
        if all(
            target.get(_laurent_mul(d_mono, exponents)) == d_coef * ratio_coef
            for d_mono, d_coef in divisor
        ):
            return ratio_coef, {s: e for s, e in exponents.items() if e}
    return None


def _laurent_mul(mono: Monomial, exponents: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    combined = dict(mono)
    for symbol, exponent in exponents.items():
        combined[symbol] = combined.get(symbol, 0) + exponent
    return tuple(sorted((s, e) for s, e in combined.items() if e))


# ----------------------------------------------------------------------- printing


def _format_term(mono: Monomial, coef: int) -> str:
    if not mono:
        return str(coef)
    body = "*".join(_mono_factors(mono))
    if coef == 1:
        return body
    if coef == -1:
        return "-" + body
    return f"{coef}*{body}"


def _format_polynomial(terms: tuple[Term, ...]) -> str:
    if not terms:
        return "0"
    parts = [_format_term(*terms[0])]
    for mono, coef in terms[1:]:
        if coef < 0:
            parts.append(" - " + _format_term(mono, -coef))
        else:
            parts.append(" + " + _format_term(mono, coef))
    return "".join(parts)


def _grouped(expr: Expr) -> str:
    """The expression's text, parenthesised if it would not bind as one operand."""
    text = str(expr)
    return f"({text})" if " " in text or "/" in text else text


# ------------------------------------------------------------------------ parsing


# Every non-space character forms some token, so nothing is skipped silently;
# stray characters become ``op`` tokens that the parser then rejects.
_TOKEN = re.compile(r"\s*(?:(?P<int>[0-9]+)|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>\S))")


class _Parser:
    """Recursive descent over the grammar in :meth:`Expr.parse`."""

    def __init__(self, text: str):
        self.text = text
        self.tokens: list[tuple[str, str, int]] = []
        for match in _TOKEN.finditer(text):
            kind = match.lastgroup
            self.tokens.append((kind, match.group(kind), match.start(kind)))
        self.tokens.append(("end", "", len(text)))
        self.index = 0

    def parse(self) -> Expr:
        value = self.expr()
        if self.peek()[0] != "end":
            self.fail("an operator or end of input")
        return value

    def peek(self) -> tuple[str, str, int]:
        return self.tokens[self.index]

    def take(self, op: str) -> bool:
        kind, text, _ = self.tokens[self.index]
        if kind == "op" and text == op:
            self.index += 1
            return True
        return False

    def fail(self, expected: str) -> NoReturn:
        kind, text, position = self.peek()
        found = "end of input" if kind == "end" else repr(text)
        raise ExprSyntaxError(self.text, position, expected, found)

    def expr(self) -> Expr:
        value = self.term()
        while True:
            if self.take("+"):
                value = value + self.term()
            elif self.take("-"):
                value = value - self.term()
            else:
                return value

    def term(self) -> Expr:
        value = self.unary()
        while True:
            if self.take("*"):
                value = value * self.unary()
            elif self.take("/"):
                value = value / self.unary()
            else:
                return value

    def unary(self) -> Expr:
        if self.take("-"):
            return -self.unary()
        return self.atom()

    def atom(self) -> Expr:
        kind, text, _ = self.peek()
        if kind == "int":
            self.index += 1
            return Expr.const(int(text))
        if kind == "ident":
            self.index += 1
            return Expr.sym(text)
        if self.take("("):
            value = self.expr()
            if not self.take(")"):
                self.fail("')'")
            return value
        self.fail("an integer, a symbol or '('")


@lru_cache(maxsize=4096)
def _parse(text: str) -> Expr:
    # Sizes are re-read from IR text constantly and expressions are immutable,
    # so parsed results are shared.
    return _Parser(text).parse()


# --------------------------------------------------------------------- evaluation


def _monomial_value(mono: Monomial, env: Mapping[str, object]):
    value = 1
    for symbol, exponent in mono:
        value *= env[symbol] if exponent == 1 else env[symbol] ** exponent
    return value


def _reject_division(expr: Expr, env: Mapping[str, int], numerator: int, denominator: int):
    """Raise the error for ``numerator/denominator`` not being an integer."""
    if denominator == 0:
        raise SymbolicError(f"{expr} divides by zero{_for_env(env)}")
    raise IndivisibleError(expr, env, numerator, denominator)


def _reject_compiled(expr: Expr, symbols: tuple[str, ...], numerator, denominator, values):
    used = expr.symbols
    env = {name: value for name, value in zip(symbols, values) if name in used}
    _reject_division(expr, env, numerator, denominator)


def _python_polynomial(terms: Iterable[Term], names: Mapping[str, str]) -> str:
    parts = []
    for mono, coef in terms:
        factors = []
        for symbol, exponent in mono:
            name = names[symbol]
            # Repeated multiplication beats ``**`` for the small powers sizes use.
            factors.extend([name] * exponent if exponent <= 3 else [f"{name}**{exponent}"])
        if coef != 1 or not factors:
            factors.insert(0, str(coef))
        parts.append("*".join(factors))
    return " + ".join(parts) or "0"


@lru_cache(maxsize=4096)
def _compile(expr: Expr, symbols: tuple[str, ...]) -> Callable[..., int]:
    if len(set(symbols)) != len(symbols):
        raise SymbolicError(f"duplicate symbols in compile order {symbols}")
    missing = expr.symbols.difference(symbols)
    if missing:
        raise UnboundSymbolError(expr, missing)
    # Parameters get generated names so that symbol names never meet Python
    # keywords or the helper names in the generated code.
    names = {symbol: f"x{i}" for i, symbol in enumerate(symbols)}
    params = ", ".join(names.values())
    numerator = _python_polynomial(expr._num, names)
    if expr.is_integral:
        body = f"    return {numerator}\n"
    else:
        denominator = _python_polynomial([(expr._den_mono, expr._den_coef)], names)
        body = (
            f"    n = {numerator}\n"
            f"    d = {denominator}\n"
            "    if d == 0 or n % d:\n"
            f"        _reject(n, d, ({params}{',' if params else ''}))\n"
            "    return n // d\n"
        )
    namespace = {"_reject": partial(_reject_compiled, expr, symbols)}
    # The source is generated from integers and the ``x<i>`` names above only.
    exec(f"def evaluate({params}):\n{body}", namespace)  # noqa: S102
    function = namespace["evaluate"]
    function.__qualname__ = function.__name__ = f"evaluate[{expr}]"
    return function


# --------------------------------------------------------------------------- Expr


class Expr:
    """An exact, immutable, hashable size expression kept in canonical form.

    Build one with :meth:`parse`, :meth:`const`, :meth:`sym` or :meth:`of`
    (``Expr(x)`` is :meth:`of`), then combine with ``+ - * /``, unary ``-`` and
    ``** n``; plain ``int`` operands are accepted on either side. Integer
    constants compare and hash equal to the corresponding ``int``.
    """

    __slots__ = ("_den_coef", "_den_mono", "_hash", "_num", "_symbols", "_text")

    _num: tuple[Term, ...]
    _den_coef: int
    _den_mono: Monomial

    def __new__(cls, value: int | str | Expr) -> Expr:  # noqa: PYI034 (always a plain Expr)
        return Expr.of(value)

    def __setattr__(self, name, value):
        raise AttributeError(f"Expr is immutable (cannot set {name!r})")

    def __delattr__(self, name):
        raise AttributeError(f"Expr is immutable (cannot delete {name!r})")

    # ---------------------------------------------------------------- construction

    @staticmethod
    def parse(text: str) -> Expr:
        """Read an expression; whitespace is ignored.

        Grammar::

            expr  := term (('+' | '-') term)*
            term  := unary (('*' | '/') unary)*
            unary := '-' unary | atom
            atom  := INTEGER | IDENT | '(' expr ')'

        Raises :class:`ExprSyntaxError` for malformed text and
        :class:`SymbolicError` for a division the canonical form cannot hold.
        """
        if not isinstance(text, str):
            raise TypeError(f"Expr.parse expects a str, got {type(text).__name__}")
        return _parse(text)

    @staticmethod
    def const(value: int) -> Expr:
        """The integer constant ``value``."""
        if isinstance(value, bool):
            # bool is an int subclass; a True/False size is always a bug upstream.
            raise TypeError("a size cannot be a bool")
        value = operator.index(value)
        interned = _SMALL_CONSTANTS.get(value)
        if interned is not None:
            return interned
        return _make((((), value),), 1, ())

    @staticmethod
    def sym(name: str) -> Expr:
        """The symbol ``name``, which must match ``[A-Za-z_][A-Za-z0-9_]*``."""
        interned = _SYMBOLS.get(name)
        if interned is not None:
            return interned
        if not isinstance(name, str) or not _SYMBOL_NAME.fullmatch(name):
            raise SymbolicError(f"invalid symbol name {name!r}: expected [A-Za-z_][A-Za-z0-9_]*")
        interned = _SYMBOLS[name] = _make(((((name, 1),), 1),), 1, ())
        return interned

    @staticmethod
    def of(value: int | str | Expr) -> Expr:
        """Coerce an ``int`` (constant), ``str`` (parsed) or ``Expr`` (returned as is)."""
        if isinstance(value, Expr):
            return value
        if isinstance(value, str):
            return Expr.parse(value)
        return Expr.const(value)

    # ------------------------------------------------------------------ inspection

    @property
    def symbols(self) -> frozenset[str]:
        """Every symbol that appears in the canonical form."""
        try:
            return self._symbols
        except AttributeError:  # not computed yet
            names = {symbol for mono, _ in self._num for symbol, _ in mono}
            names.update(symbol for symbol, _ in self._den_mono)
            symbols = frozenset(names)
            _set_symbols(self, symbols)
            return symbols

    @property
    def is_constant(self) -> bool:
        """Whether no symbol appears (the value may still be a fraction such as ``1/2``)."""
        return not self._den_mono and all(not mono for mono, _ in self._num)

    @property
    def is_integral(self) -> bool:
        """Whether this is a polynomial with integer coefficients (the denominator is 1)."""
        return self._den_coef == 1 and not self._den_mono

    @property
    def is_monomial(self) -> bool:
        """Whether the numerator is a single term or zero, i.e. this can be divided by."""
        return len(self._num) <= 1

    def as_int(self) -> int | None:
        """The value if this is an integer constant, else ``None``."""
        if self._den_coef != 1 or self._den_mono:
            return None
        if not self._num:
            return 0
        if len(self._num) == 1 and not self._num[0][0]:
            return self._num[0][1]
        return None

    def numerator(self) -> Expr:
        """The canonical numerator polynomial."""
        return _make(self._num, 1, ())

    def denominator(self) -> Expr:
        """The canonical denominator monomial (with its positive coefficient)."""
        return _make(((self._den_mono, self._den_coef),), 1, ())

    def sort_key(self) -> tuple:
        """A key for deterministic ordering: constants by value first, then by text.

        Expressions deliberately have no ``<``: symbolic sizes have no natural
        order, but passes still need reproducible output.
        """
        if self.is_constant:
            return (0, self.evaluate_fraction({}))
        return (1, str(self))

    # ---------------------------------------------------------------- substitution

    def subs(self, mapping: Mapping[str, int | str | Expr]) -> Expr:
        """Replace some symbols by integers or expressions, returning the canonical result.

        Symbols not in ``mapping`` stay symbolic. Substituting a sum for a
        symbol of the denominator raises :class:`SymbolicError` unless the
        division stays exact (see ``/``).
        """
        used = self.symbols
        values = {name: Expr.of(value) for name, value in mapping.items() if name in used}
        if not values:
            return self

        def factor(symbol: str) -> Expr:
            return values[symbol] if symbol in values else Expr.sym(symbol)

        def monomial(mono: Monomial) -> Expr:
            return product(factor(symbol) ** exponent for symbol, exponent in mono)

        numerator = sum_exprs(monomial(mono) * coef for mono, coef in self._num)
        return numerator / (monomial(self._den_mono) * self._den_coef)

    def _evaluate_parts(self, env: Mapping[str, int]):
        missing = [symbol for symbol in self.symbols if symbol not in env]
        if missing:
            raise UnboundSymbolError(self, missing)
        numerator = sum(coef * _monomial_value(mono, env) for mono, coef in self._num)
        return numerator, self._den_coef * _monomial_value(self._den_mono, env)

    def evaluate(self, env: Mapping[str, int]) -> int:
        """The exact integer value under ``env``.

        Raises :class:`UnboundSymbolError` when a symbol has no value and
        :class:`IndivisibleError` when the value is not an integer.
        """
        numerator, denominator = self._evaluate_parts(env)
        if denominator == 0 or numerator % denominator:
            _reject_division(
                self, {name: env[name] for name in self.symbols}, numerator, denominator
            )
        return numerator // denominator

    def evaluate_fraction(self, env: Mapping[str, int | Fraction]) -> Fraction:
        """The exact value under ``env``, with no requirement that it be an integer."""
        numerator, denominator = self._evaluate_parts(env)
        if denominator == 0:
            _reject_division(
                self, {name: env[name] for name in self.symbols}, numerator, denominator
            )
        return Fraction(numerator, denominator)

    def compile(self, symbols: Sequence[str]) -> Callable[..., int]:
        """A fast evaluator taking the values of ``symbols`` positionally.

        The canonical form is turned into straight-line Python once (and cached
        per expression and symbol order), which is what makes sweeping many
        configurations cheap. The function raises :class:`IndivisibleError`
        exactly like :meth:`evaluate`; ``symbols`` must cover :attr:`symbols`.
        """
        return _compile(self, tuple(symbols))

    def divides(self, other: int | str | Expr) -> bool:
        """Whether ``other / self`` is a polynomial with integer coefficients.

        This is divisibility for every value of the symbols: ``tp`` divides
        ``4*H*tp`` but not ``H``. Zero divides only zero.
        """
        other = Expr.of(other)
        if not self._num:
            return not other._num
        try:
            return (other / self).is_integral
        except SymbolicError:
            return False

    # ------------------------------------------------------------------ arithmetic

    def __add__(self, other):
        other = _coerce(other)
        return NotImplemented if other is None else _add(self, other)

    def __radd__(self, other):
        other = _coerce(other)
        return NotImplemented if other is None else _add(other, self)

    def __sub__(self, other):
        other = _coerce(other)
        return NotImplemented if other is None else _add(self, -other)

    def __rsub__(self, other):
        other = _coerce(other)
        return NotImplemented if other is None else _add(other, -self)

    def __mul__(self, other):
        other = _coerce(other)
        return NotImplemented if other is None else _mul(self, other)

    def __rmul__(self, other):
        other = _coerce(other)
        return NotImplemented if other is None else _mul(other, self)

    def __truediv__(self, other):
        other = _coerce(other)
        return NotImplemented if other is None else _div(self, other)

    def __rtruediv__(self, other):
        other = _coerce(other)
        return NotImplemented if other is None else _div(other, self)

    def __neg__(self) -> Expr:
        # Negation keeps every canonical property (the term order ignores coefficients).
        return _make(
            tuple((mono, -coef) for mono, coef in self._num), self._den_coef, self._den_mono
        )

    def __pos__(self) -> Expr:
        return self

    def __pow__(self, exponent: int) -> Expr:
        """Repeated multiplication; a negative exponent divides (so needs a monomial)."""
        if isinstance(exponent, bool) or not isinstance(exponent, int):
            return NotImplemented
        if exponent < 0:
            return _div(_ONE, self**-exponent)
        result, base = _ONE, self
        while exponent:
            if exponent & 1:
                result = _mul(result, base)
            exponent >>= 1
            if exponent:
                base = _mul(base, base)
        return result

    # ------------------------------------------------------- equality and conversion

    def __eq__(self, other):
        if isinstance(other, Expr):
            return self is other or (
                self._num == other._num
                and self._den_coef == other._den_coef
                and self._den_mono == other._den_mono
            )
        if isinstance(other, int):
            return self.as_int() == other
        return NotImplemented

    def __hash__(self) -> int:
        try:
            return self._hash
        except AttributeError:  # not computed yet
            value = self.as_int()
            # Integer constants hash like the int they equal, keeping dicts keyed by
            # sizes consistent whether a caller looks up ``4`` or ``Expr.const(4)``.
            cached = (
                hash(value)
                if value is not None
                else hash((self._num, self._den_coef, self._den_mono))
            )
            _set_hash(self, cached)
            return cached

    def __bool__(self) -> bool:
        return bool(self._num)

    def __int__(self) -> int:
        value = self.as_int()
        if value is None:
            raise SymbolicError(f"{self} is not an integer constant")
        return value

    def __str__(self) -> str:
        try:
            return self._text
        except AttributeError:  # not computed yet
            text = self._format()
            _set_text(self, text)
            return text

    def _format(self) -> str:
        numerator = _format_polynomial(self._num)
        if self.is_integral:
            return numerator
        if len(self._num) > 1:
            numerator = f"({numerator})"
        denominator = _format_term(self._den_mono, self._den_coef)
        factor_count = (self._den_coef != 1) + _mono_degree(self._den_mono)
        if factor_count > 1:
            denominator = f"({denominator})"
        return f"{numerator}/{denominator}"

    def __repr__(self) -> str:
        return f"Expr({str(self)!r})"

    # Canonical text rebuilds an equal Expr, and the immutability guard would
    # otherwise break the default slot-restoring copy and pickle protocols.
    def __reduce__(self):
        return (Expr, (str(self),))

    def __copy__(self) -> Expr:
        return self

    def __deepcopy__(self, memo) -> Expr:
        return self


# ``__setattr__`` refuses every write, so the module writes the slots through
# their descriptors; the cached slots (hash, text, symbols) are filled lazily.
_new_expr = object.__new__
_set_num = Expr._num.__set__
_set_den_coef = Expr._den_coef.__set__
_set_den_mono = Expr._den_mono.__set__
_set_hash = Expr._hash.__set__
_set_text = Expr._text.__set__
_set_symbols = Expr._symbols.__set__


def _coerce(value) -> Expr | None:
    if isinstance(value, Expr):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return Expr.const(value)
    return None


_ZERO = _make((), 1, ())
_ONE = _make((((), 1),), 1, ())
# Small constants show up in nearly every size (``2*``, ``/2``, ``4*H``), so they
# are shared rather than rebuilt.
_SMALL_CONSTANTS: dict[int, Expr] = {0: _ZERO, 1: _ONE}
_SMALL_CONSTANTS.update((v, _make((((), v),), 1, ())) for v in range(-16, 257) if v not in (0, 1))
_SYMBOLS: dict[str, Expr] = {}


def product(items: Iterable[Expr | int | str]) -> Expr:
    """The product of ``items`` (1 when empty)."""
    result = _ONE
    for item in items:
        result = _mul(result, Expr.of(item))
    return result


def sum_exprs(items: Iterable[Expr | int | str]) -> Expr:
    """The sum of ``items`` (0 when empty)."""
    result = _ZERO
    for item in items:
        result = _add(result, Expr.of(item))
    return result
