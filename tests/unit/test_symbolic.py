"""Tests for stagec.dialects.symbolic: exact symbolic size expressions.

The example tests pin the public API, the canonical text and every error
message; the property tests check the simplifier against an independent
``Fraction`` evaluation of random expression trees.
"""

from __future__ import annotations

import copy
import pickle
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stagec.dialects.symbolic import (
    Expr,
    ExprSyntaxError,
    IndivisibleError,
    SymbolicError,
    UnboundSymbolError,
    product,
    sum_exprs,
)

P = Expr.parse


# ------------------------------------------------------------------ construction


def test_const_and_sym():
    assert Expr.const(7).as_int() == 7
    assert Expr.const(-3) == -3
    assert str(Expr.sym("tp")) == "tp"
    assert Expr.sym("_x1").symbols == frozenset({"_x1"})


@pytest.mark.parametrize("name", ["", "1a", "a-b", "a b", "tp*2"])
def test_sym_rejects_invalid_names(name):
    with pytest.raises(SymbolicError, match="invalid symbol name"):
        Expr.sym(name)


def test_const_rejects_bool_and_non_integers():
    with pytest.raises(TypeError, match="bool"):
        Expr.const(True)
    with pytest.raises(TypeError):
        Expr.const(1.5)


def test_of_coerces_int_str_and_expr():
    e = P("4*H/tp")
    assert Expr.of(e) is e
    assert Expr.of("4*H/tp") == e
    assert Expr.of(4) == Expr.const(4)
    assert Expr("4*H/tp") == e  # the constructor is `of`, so repr() evaluates back
    with pytest.raises(TypeError):
        Expr.of(2.0)


def test_parse_requires_str():
    with pytest.raises(TypeError, match="expects a str"):
        Expr.parse(3)


# ------------------------------------------------------------ canonical simplification


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("2*H/2", "H"),
        ("(H/heads)*heads", "H"),
        ("H/tp*tp/H", "1"),
        ("(a*b + a*c)/a", "b + c"),
        ("(4*H + 4*H)/8", "H"),
        ("B/dp/sp", "B/(sp*dp)"),
        ("(2*a + 2*b)/(a + b)", "2"),
        ("(a*c + b*c)/(a + b)", "c"),
        ("(a + b)/(2*a*c + 2*b*c)", "1/(2*c)"),
        ("H - H", "0"),
        ("0/tp", "0"),
        ("(a + b)*(a - b)", "a*a - b*b"),
        ("H/2 + H/2", "H"),
        ("H/tp + H/tp", "2*H/tp"),
        ("a/b + c/d", "(a*d + b*c)/(b*d)"),
        ("6*a/(4*b)", "3*a/(2*b)"),
        ("-a/-b", "a/b"),
        ("a/(-2)", "-a/2"),
        ("(2*a*b + 4*a)/(6*a*a)", "(b + 2)/(3*a)"),
    ],
)
def test_simplifies_to_the_same_canonical_form(left, right):
    assert P(left) == P(right)
    assert hash(P(left)) == hash(P(right))
    assert str(P(left)) == str(P(right))


def test_spec_examples():
    assert str(P("4*H/tp")) == "4*H/tp"
    assert str(P("B/dp/sp")) == "B/(dp*sp)"
    assert P("2*H/2") == P("H")
    assert P("(H/heads)*heads") == Expr.sym("H")
    assert P("H/tp*tp/H") == 1
    assert str(P("(4*H + 4*H)/8")) == "H"
    assert P("(a*b + a*c)/a") == P("b + c")


# ------------------------------------------------------------------------ printing


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        # integers and symbols
        ("0", "0"),
        ("42", "42"),
        ("-7", "-7"),
        ("B", "B"),
        ("  B  ", "B"),
        # coefficient omitted when 1, "-" when -1
        ("1*H", "H"),
        ("-1*H", "-H"),
        ("4*H", "4*H"),
        ("H*4", "4*H"),
        # powers print as repeated factors, symbols sorted in ASCII order
        ("H*H", "H*H"),
        ("tp*H*H", "H*H*tp"),
        ("KV*D", "D*KV"),
        ("dp*S*B", "B*S*dp"),
        # degree descending, then symbol names; the constant term last
        ("1 + H", "H + 1"),
        ("H + 2*KV*D", "2*D*KV + H"),
        ("b + a", "a + b"),
        ("H + H*H + 3", "H*H + H + 3"),
        ("H*KV + H*H", "H*H + H*KV"),
        # subtraction prints as " - "
        ("H - 2*D", "-2*D + H"),
        ("H - 1", "H - 1"),
        ("a - b - c", "a - b - c"),
        ("-a - b", "-a - b"),
        # single-term numerators are bare, sums parenthesised
        ("4*H/tp", "4*H/tp"),
        ("-H/tp", "-H/tp"),
        ("-2*H/tp", "-2*H/tp"),
        ("(H + 2*KV*D)/tp", "(2*D*KV + H)/tp"),
        ("(S - 1)/sp", "(S - 1)/sp"),
        # single-factor denominators are bare, products parenthesised
        ("H/2", "H/2"),
        ("1/2", "1/2"),
        ("-3/4", "-3/4"),
        ("B/(dp*sp)", "B/(dp*sp)"),
        ("H/(2*tp)", "H/(2*tp)"),
        ("H/(tp*tp)", "H/(tp*tp)"),
        ("3*H/(2*tp)", "3*H/(2*tp)"),
        ("(a + 1)/(2*b)", "(a + 1)/(2*b)"),
    ],
)
def test_canonical_text(text, canonical):
    e = P(text)
    assert str(e) == canonical
    assert P(canonical) == e
    assert str(P(canonical)) == canonical


def test_repr():
    assert repr(P("4*H/tp")) == "Expr('4*H/tp')"
    assert eval(repr(P("(a + 1)/(2*b)")), {"Expr": Expr}) == P("(a + 1)/(2*b)")


# -------------------------------------------------------------------- parse errors


@pytest.mark.parametrize(
    ("text", "position", "message"),
    [
        ("", 0, "expected an integer, a symbol or '(' but found end of input at position 0 in ''"),
        ("a + *b", 4, "expected an integer, a symbol or '(' but found '*' at position 4"),
        ("(a + b", 6, "expected ')' but found end of input at position 6"),
        ("a b", 2, "expected an operator or end of input but found 'b' at position 2"),
        ("a)", 1, "expected an operator or end of input but found ')' at position 1"),
        ("a $ b", 2, "expected an operator or end of input but found '$' at position 2"),
        ("2a", 1, "expected an operator or end of input but found 'a' at position 1"),
        ("a +", 3, "but found end of input at position 3"),
        ("a ^ 2", 2, "found '^' at position 2"),
        ("()", 1, "expected an integer, a symbol or '(' but found ')' at position 1"),
    ],
)
def test_syntax_errors(text, position, message):
    with pytest.raises(ExprSyntaxError) as info:
        P(text)
    assert info.value.text == text
    assert info.value.position == position
    assert message in str(info.value)
    assert isinstance(info.value, SymbolicError)


def test_unary_minus_binds_to_the_next_operand():
    assert P("--a") == P("a")
    assert P("2*-3") == -6
    assert P("a - -b") == P("a + b")
    assert P("-a*b") == -(P("a") * P("b"))


# ---------------------------------------------------------------- arithmetic errors


def test_division_by_a_sum_is_rejected():
    with pytest.raises(SymbolicError, match=r"cannot divide by a sum: a/\(b \+ c\)"):
        P("a/(b + c)")
    with pytest.raises(SymbolicError, match="cannot divide by a sum"):
        P("a*a - b*b") / P("a + b")  # exact, but not by a single term


@pytest.mark.parametrize("text", ["a/0", "a/(b - b)", "1/(0*tp)"])
def test_division_by_zero(text):
    with pytest.raises(SymbolicError, match="division by zero"):
        P(text)


def test_arithmetic_with_ints_on_either_side():
    h = Expr.sym("H")
    assert 4 * h == h * 4 == P("4*H")
    assert h + 1 == 1 + h == P("H + 1")
    assert h - 1 == P("H - 1")
    assert 1 - h == P("1 - H")
    assert h / 2 == P("H/2")
    assert 2 / h == P("2/H")
    assert -h == P("-H")
    assert +h is h


def test_arithmetic_with_other_types_is_a_type_error():
    with pytest.raises(TypeError):
        Expr.sym("H") * 1.5
    with pytest.raises(TypeError):
        "x" + Expr.sym("H")


def test_power():
    assert P("a + b") ** 2 == P("a*a + 2*a*b + b*b")
    assert P("tp") ** 0 == 1
    assert P("2*tp") ** -2 == P("1/(4*tp*tp)")
    with pytest.raises(SymbolicError, match="cannot divide by a sum"):
        P("a + b") ** -1
    with pytest.raises(TypeError):
        P("a") ** P("b")


# ---------------------------------------------------------------------- inspection


def test_symbols():
    assert P("(H + 2*KV*D)/tp").symbols == frozenset({"H", "KV", "D", "tp"})
    assert P("3").symbols == frozenset()
    assert P("H/tp*tp").symbols == frozenset({"H"})


@pytest.mark.parametrize(
    ("text", "constant", "integral", "monomial", "value"),
    [
        ("0", True, True, True, 0),
        ("5", True, True, True, 5),
        ("1/2", True, False, True, None),
        ("4*H", False, True, True, None),
        ("H/tp", False, False, True, None),
        ("H + 1", False, True, False, None),
        ("(H + 1)/2", False, False, False, None),
    ],
)
def test_predicates(text, constant, integral, monomial, value):
    e = P(text)
    assert e.is_constant is constant
    assert e.is_integral is integral
    assert e.is_monomial is monomial
    assert e.as_int() == value


def test_numerator_and_denominator():
    e = P("(H + 2*KV*D)/(2*tp)")
    assert e.numerator() == P("H + 2*KV*D")
    assert e.denominator() == P("2*tp")
    assert e.numerator() / e.denominator() == e
    assert P("-H/tp").numerator() == P("-H")
    assert P("7").denominator() == 1


def test_int_and_bool():
    assert int(P("2*3")) == 6
    with pytest.raises(SymbolicError, match="H/2 is not an integer constant"):
        int(P("H/2"))
    with pytest.raises(SymbolicError, match="1/2 is not an integer constant"):
        int(P("1/2"))
    assert not P("H - H")
    assert P("H")
    assert P("1/2")


def test_equality_and_hash_with_ints():
    assert Expr.const(3) == 3
    assert 3 == Expr.const(3)
    assert Expr.const(3) != 4
    assert P("H") != 3
    assert hash(Expr.const(3)) == hash(3)
    assert hash(P("6/2")) == hash(3)
    assert {3: "three"}[P("1 + 2")] == "three"
    assert P("H") != "H"  # no implicit parsing in comparisons


def test_usable_as_dict_key_and_in_sets():
    sizes = {P("4*H/tp"), P("H*4/tp"), P("8*H/(2*tp)"), P("H")}
    assert sizes == {P("4*H/tp"), P("H")}
    table = {P("B/(dp*sp)"): 1}
    assert table[P("B/dp/sp")] == 1


def test_sort_key_orders_constants_numerically_then_by_text():
    items = [P("H"), P("10"), P("B/dp"), P("9"), P("1/2"), P("-3")]
    ordered = sorted(items, key=Expr.sort_key)
    assert [str(e) for e in ordered] == ["-3", "1/2", "9", "10", "B/dp", "H"]
    with pytest.raises(TypeError):
        P("a") < P("b")  # noqa: B015 (sizes deliberately have no order)


def test_immutable():
    e = P("H")
    with pytest.raises(AttributeError, match="immutable"):
        e._num = ()
    with pytest.raises(AttributeError):
        e.extra = 1


def test_copy_and_pickle():
    e = P("(H + 1)/tp")
    assert copy.copy(e) is e
    assert copy.deepcopy(e) is e
    assert pickle.loads(pickle.dumps(e)) == e


def test_errors_pickle():
    for error in (
        ExprSyntaxError("a b", 2, "an operator", "'b'"),
        UnboundSymbolError(P("H/tp"), ["tp"]),
        IndivisibleError(P("B/dp"), {"B": 10, "dp": 4}, 10, 4),
    ):
        clone = pickle.loads(pickle.dumps(error))
        assert type(clone) is type(error)
        assert str(clone) == str(error)


# ---------------------------------------------------------- substitution and values


def test_subs_partial_and_full():
    e = P("(H + 2*KV*D)/tp")
    assert e.subs({"KV": 8, "D": 128}) == P("(H + 2048)/tp")
    assert e.subs({"H": 4096, "KV": 8, "D": 128, "tp": 8}) == 768
    assert e.subs({}) is e
    assert e.subs({"unrelated": 3}) is e


def test_subs_with_expressions():
    assert P("H/tp").subs({"H": "4*tp*x"}) == P("4*x")
    assert P("H/tp").subs({"tp": P("2*y")}) == P("H/(2*y)")
    assert P("a*b").subs({"a": "b + 1"}) == P("b*b + b")
    with pytest.raises(SymbolicError, match="cannot divide by a sum"):
        P("H/tp").subs({"tp": "a + b"})
    with pytest.raises(SymbolicError, match="division by zero"):
        P("H/tp").subs({"tp": 0})


def test_evaluate():
    assert P("(H + 2*KV*D)/tp").evaluate({"H": 4096, "KV": 8, "D": 128, "tp": 8}) == 768
    assert P("H - 2*D").evaluate({"H": 10, "D": 3}) == 4
    assert P("7").evaluate({}) == 7
    assert P("B/dp").evaluate({"B": 12, "dp": 4, "unused": 5}) == 3


def test_evaluate_reports_indivisible_sizes():
    with pytest.raises(IndivisibleError) as info:
        P("B/dp").evaluate({"B": 10, "dp": 4, "unused": 1})
    error = info.value
    assert str(error) == "B/dp is not an integer for B=10, dp=4 (10/4)"
    assert error.expr == P("B/dp")
    assert error.env == {"B": 10, "dp": 4}
    assert (error.numerator, error.denominator) == (10, 4)
    assert isinstance(error, SymbolicError)


def test_evaluate_reports_unbound_symbols():
    with pytest.raises(UnboundSymbolError) as info:
        P("(H + 2*KV*D)/tp").evaluate({"H": 1})
    assert info.value.symbols == ("D", "KV", "tp")
    assert str(info.value) == "cannot evaluate (2*D*KV + H)/tp: unbound symbols D, KV, tp"
    with pytest.raises(UnboundSymbolError, match="unbound symbol tp$"):
        P("H/tp").evaluate({"H": 1})


def test_evaluate_reports_zero_denominators():
    with pytest.raises(SymbolicError, match=r"B/dp divides by zero for B=10, dp=0"):
        P("B/dp").evaluate({"B": 10, "dp": 0})
    with pytest.raises(SymbolicError, match="divides by zero"):
        P("B/dp").evaluate_fraction({"B": 10, "dp": 0})


def test_evaluate_fraction():
    assert P("B/dp").evaluate_fraction({"B": 10, "dp": 4}) == Fraction(5, 2)
    assert P("1/2").evaluate_fraction({}) == Fraction(1, 2)
    assert P("a*b").evaluate_fraction({"a": Fraction(1, 2), "b": 4}) == 2
    with pytest.raises(UnboundSymbolError):
        P("a").evaluate_fraction({})


@pytest.mark.parametrize(
    ("divisor", "dividend", "expected"),
    [
        ("tp", "4*H*tp", True),
        ("tp", "H", False),
        ("2", "4*H", True),
        ("2", "H", False),
        ("tp", "H*tp + tp", True),
        ("a + b", "2*a + 2*b", True),
        ("a + b", "a*a - b*b", False),
        ("H/2", "4*H", True),
        ("4*H", "H", False),
        ("0", "0", True),
        ("0", "H", False),
        ("H", "0", True),
    ],
)
def test_divides(divisor, dividend, expected):
    assert P(divisor).divides(P(dividend)) is expected


def test_divides_accepts_ints_and_text():
    assert Expr.const(2).divides(8)
    assert Expr.sym("tp").divides("4*tp")


# --------------------------------------------------------------------- compilation


def test_compile_evaluates_positionally():
    f = P("(H + 2*KV*D)/tp").compile(["tp", "H", "KV", "D", "unused"])
    assert f(8, 4096, 8, 128, 0) == 768
    g = P("a*a*a*a*b - 3").compile(["a", "b"])
    assert g(2, 5) == 77
    assert P("5").compile([])() == 5


def test_compile_reports_indivisible_sizes_like_evaluate():
    f = P("B/dp").compile(["B", "dp", "unused"])
    with pytest.raises(IndivisibleError) as info:
        f(10, 4, 7)
    assert str(info.value) == "B/dp is not an integer for B=10, dp=4 (10/4)"
    assert info.value.env == {"B": 10, "dp": 4}
    with pytest.raises(SymbolicError, match="divides by zero"):
        f(10, 0, 7)
    with pytest.raises(IndivisibleError, match=r"^1/2 is not an integer \(1/2\)$"):
        P("1/2").compile([])()


def test_compile_handles_symbol_names_that_are_python_keywords():
    f = P("(n + d)/lambda").compile(["lambda", "n", "d"])
    assert f(2, 3, 5) == 4


def test_compile_is_cached_and_validates_symbols():
    e = P("H/tp")
    assert e.compile(["H", "tp"]) is P("H/tp").compile(("H", "tp"))
    with pytest.raises(UnboundSymbolError, match="tp"):
        e.compile(["H"])
    with pytest.raises(SymbolicError, match="duplicate"):
        e.compile(["H", "tp", "H"])


# ----------------------------------------------------------------- module helpers


def test_product_and_sum_exprs():
    assert product([]) == 1
    assert product(["dp", 2, Expr.sym("sp")]) == P("2*dp*sp")
    assert sum_exprs([]) == 0
    assert sum_exprs(["H/tp", 1, Expr.sym("x")]) == P("H/tp + x + 1")
    assert sum_exprs(P("H/4") for _ in range(4)) == P("H")


# ------------------------------------------------------------------ property tests
#
# Expression trees are plain tuples evaluated twice: through Expr, and directly
# with Fractions, so the simplifier is checked against arithmetic it does not share.

SYMBOLS = ("a", "b", "c", "H", "tp")
PROPERTY = settings(max_examples=200, deadline=None)

nonzero_coefficients = st.integers(-4, 4).filter(bool)
monomial_trees = st.builds(
    lambda coef, names: ("mono", coef, tuple(names)),
    nonzero_coefficients,
    st.lists(st.sampled_from(SYMBOLS), max_size=3),
)
leaves = st.one_of(
    st.sampled_from(SYMBOLS).map(lambda name: ("sym", name)),
    st.integers(-6, 6).map(lambda value: ("const", value)),
)


def _extend(children):
    return st.one_of(
        st.tuples(st.sampled_from(["+", "-", "*"]), children, children),
        st.tuples(st.just("/"), children, monomial_trees),
        st.tuples(st.just("neg"), children),
    )


trees = st.recursive(leaves, _extend, max_leaves=8)
environments = st.fixed_dictionaries({name: st.integers(1, 12) for name in SYMBOLS})


def build(tree) -> Expr:
    kind = tree[0]
    if kind == "sym":
        return Expr.sym(tree[1])
    if kind == "const":
        return Expr.const(tree[1])
    if kind == "mono":
        return product([tree[1], *map(Expr.sym, tree[2])])
    if kind == "neg":
        return -build(tree[1])
    left, right = build(tree[1]), build(tree[2])
    if kind == "+":
        return left + right
    if kind == "-":
        return left - right
    if kind == "*":
        return left * right
    return left / right


def value(tree, env) -> Fraction:
    kind = tree[0]
    if kind == "sym":
        return Fraction(env[tree[1]])
    if kind == "const":
        return Fraction(tree[1])
    if kind == "mono":
        result = Fraction(tree[1])
        for name in tree[2]:
            result *= env[name]
        return result
    if kind == "neg":
        return -value(tree[1], env)
    left, right = value(tree[1], env), value(tree[2], env)
    if kind == "+":
        return left + right
    if kind == "-":
        return left - right
    if kind == "*":
        return left * right
    return left / right


def commuted(tree):
    """The same value with the operands of every ``+`` and ``*`` swapped."""
    kind = tree[0]
    if kind in ("+", "*"):
        return (kind, commuted(tree[2]), commuted(tree[1]))
    if kind in ("-", "/"):
        return (kind, commuted(tree[1]), commuted(tree[2]))
    if kind == "neg":
        return (kind, commuted(tree[1]))
    return tree


@PROPERTY
@given(trees, environments)
def test_simplification_is_sound(tree, env):
    assert build(tree).evaluate_fraction(env) == value(tree, env)


@PROPERTY
@given(trees)
def test_text_round_trips(tree):
    e = build(tree)
    text = str(e)
    assert Expr.parse(text) == e
    assert str(Expr.parse(text)) == text


@PROPERTY
@given(trees)
def test_equal_values_have_equal_hashes_and_text(tree):
    e = build(tree)
    c = Expr.sym("c")
    for same in (build(commuted(tree)), Expr.parse(str(e)), e + 0, e * 1, (e + c) - c, (e * c) / c):
        assert same == e
        assert hash(same) == hash(e)
        assert str(same) == str(e)


@PROPERTY
@given(trees, environments, st.sets(st.sampled_from(SYMBOLS)))
def test_partial_substitution_then_evaluation(tree, env, chosen):
    e = build(tree)
    partial = e.subs({name: env[name] for name in chosen})
    assert partial.symbols <= e.symbols - chosen
    rest = {name: env[name] for name in SYMBOLS if name not in chosen}
    assert partial.evaluate_fraction(rest) == e.evaluate_fraction(env)


@PROPERTY
@given(trees, environments, st.sampled_from(SYMBOLS), monomial_trees)
def test_substituting_expressions(tree, env, name, replacement_tree):
    e = build(tree)
    replacement = build(replacement_tree)
    substituted = e.subs({name: replacement})
    expected = e.evaluate_fraction({**env, name: replacement.evaluate_fraction(env)})
    assert substituted.evaluate_fraction(env) == expected


@PROPERTY
@given(trees, environments)
def test_compile_and_evaluate_agree_with_fractions(tree, env):
    e = build(tree)
    exact = e.evaluate_fraction(env)
    compiled = e.compile(SYMBOLS)
    arguments = [env[name] for name in SYMBOLS]
    if exact.denominator == 1:
        assert compiled(*arguments) == exact
        assert e.evaluate(env) == exact
    else:
        with pytest.raises(IndivisibleError):
            compiled(*arguments)
        with pytest.raises(IndivisibleError):
            e.evaluate(env)


@PROPERTY
@given(trees, trees, trees)
def test_ring_laws(x_tree, y_tree, z_tree):
    x, y, z = build(x_tree), build(y_tree), build(z_tree)
    assert x + y == y + x
    assert x * y == y * x
    assert (x + y) + z == x + (y + z)
    assert (x * y) * z == x * (y * z)
    assert x * (y + z) == x * y + x * z
    assert x - x == 0
    assert x - y == -(y - x)


@PROPERTY
@given(trees, monomial_trees)
def test_dividing_by_a_monomial_is_undone_by_multiplying(x_tree, y_tree):
    x, y = build(x_tree), build(y_tree)
    assert (x * y) / y == x
    assert (x / y) * y == x
    assert y.divides(x * y) or not x.is_integral


@PROPERTY
@given(trees, trees, environments)
def test_divides_implies_integral_quotients(x_tree, y_tree, env):
    x, y = build(x_tree), build(y_tree)
    if y.evaluate_fraction(env) == 0:
        return
    for dividend in (x, x * y):
        if y.divides(dividend):
            quotient = dividend.evaluate_fraction(env) / y.evaluate_fraction(env)
            assert (dividend / y).evaluate(env) == quotient
