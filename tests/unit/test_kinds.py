"""dialects/kinds.py: per-class answers equal isinstance's, for subclasses, groups,
registered virtual subclasses and objects of no group."""

import abc

from hypothesis import given
from hypothesis import strategies as st

from stagec.dialects.kinds import class_tests, kind_of
from stagec.dialects.stg.comm import AllGatherOp, CollectiveOp, LocalSliceOp, ReduceScatterOp
from stagec.dialects.stg.memory import ReleaseOp, WaitOp


class Base(abc.ABC):
    pass


class Child(Base):
    pass


class Other:
    pass


class Virtual:
    pass


Base.register(Virtual)
CLASSES = [Base, Child, Other, Virtual, int, str]
GROUPS = [Child, (Other, str), Base, int]


@given(st.lists(st.sampled_from(CLASSES), min_size=1, max_size=20))
def test_answers_are_isinstances_in_any_order_of_first_use(order):
    kind, tests = kind_of(*GROUPS), class_tests(child=GROUPS[0], other=GROUPS[1], base=GROUPS[2], number=GROUPS[3])
    groups = [g if isinstance(g, tuple) else (g,) for g in GROUPS]
    for cls in order:
        value = cls() if cls not in (int, str) else cls(1)
        expected = [isinstance(value, g) for g in groups]
        answers = tests(value)
        assert tuple(answers) == tuple(expected) and answers.other == expected[1]
        assert kind(value) == (expected.index(True) if True in expected else -1)


def test_the_first_group_wins_and_no_group_is_minus_one():
    kind = kind_of(LocalSliceOp, CollectiveOp, (WaitOp, ReleaseOp))
    # a local slice is a collective too: the earlier group names it
    assert issubclass(LocalSliceOp, CollectiveOp)
    assert kind(object.__new__(LocalSliceOp)) == 0
    assert kind(object.__new__(AllGatherOp)) == kind(object.__new__(ReduceScatterOp)) == 1
    assert kind(object.__new__(ReleaseOp)) == 2
    assert kind(Child()) == -1 and kind(None) == -1
    assert kind_of(Base)(Virtual()) == 0  # a registered virtual subclass, as isinstance says
