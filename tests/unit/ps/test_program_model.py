"""A ps program names its model fully (dialects/ps: ps.program's `model`, `dtype` and
`overrides`): any JSON overrides print as text that parses back to the same plan, in
the custom and the generic form, and the dtypes are the model templates'."""

from __future__ import annotations

import io
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.parser import Parser
from xdsl.printer import Printer

from stagec.dialects import make_context
from stagec.dialects.ps import module_from_plan, plan_from_module
from stagec.dialects.ps.ops import MODEL_DTYPES
from stagec.dialects.ps.syntax import config_attr, config_value
from stagec.runtime.ps.placement import build_plan
from stagec.runtime.ps.plan import Cluster, Layer


def _plan(**model):
    plan = build_plan([Cluster("A", 1000.0)], [[1e6]], 1, [Layer("lm_head", 4)], inner_steps=1, grace_window_s=0.0)
    return replace(plan, model="llama3.2-1b", **model)


def _text(plan, generic=False) -> str:
    stream = io.StringIO()
    Printer(stream=stream, print_generic_format=generic).print_op(module_from_plan(plan))
    return stream.getvalue()


def _parse(text):
    return plan_from_module(Parser(make_context(), text).parse_module())


def test_the_dtypes_are_the_templates():
    from stagec.frontends.templates.blocks import DTYPES

    assert set(MODEL_DTYPES) == set(DTYPES)


def test_defaults_print_as_nothing_and_the_rest_as_written():
    assert 'model "llama3.2-1b" {' in _text(_plan())
    text = _text(_plan(model_dtype="bf16", model_overrides={"vocab_size": 100, "rope_scaling": None,
                                                             "norm": 1e-05, "on": True, "list": [1, "a"]}))
    assert 'model "llama3.2-1b" dtype bf16 overrides {list = [1, "a"], norm = 1.0e-05, on = true, ' \
           'rope_scaling = unit, vocab_size = 100} {' in text


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(st.characters(max_codepoint=127), min_size=1, max_size=8), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None)
@given(overrides=st.dictionaries(st.text(st.characters(max_codepoint=127), min_size=1, max_size=12), JSON,
                                 max_size=4),
       dtype=st.sampled_from(MODEL_DTYPES))
def test_any_json_overrides_round_trip_through_text(overrides, dtype):
    plan = _plan(model_overrides=overrides, model_dtype=dtype)
    text = _text(plan)
    again = _parse(text)
    assert again == plan
    # ints stay ints and floats floats (1 and 1.0 are equal in Python, not in a config)
    assert repr(again.model_overrides) == repr(config_value(config_attr(overrides)))
    assert _text(again) == text
    assert _parse(_text(plan, generic=True)) == plan


@pytest.mark.parametrize("value, message", [
    (float("inf"), "inf is not a finite number"),
    (2**63, "9223372036854775808 does not fit in 64 bits"),
    ({1: "a"}, "key 1 is not a name; give an ASCII config key"),
    ({"": "a"}, "key '' is not a name; give an ASCII config key"),
    ({"é": "a"}, "key 'é' is not a name; give an ASCII config key"),
    ({1, 2}, "{1, 2} (set) is not a JSON value"),
])
def test_what_has_no_json_word_is_refused(value, message):
    with pytest.raises(ValueError) as error:
        config_attr(value)
    assert str(error.value) == message
