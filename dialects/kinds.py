"""Class tests for xDSL's ops and attributes, decided once per class.

xDSL's op and attribute classes are ABCs (`Operation` derives from `abc.ABC`), and
`isinstance` against an ABC goes through `ABCMeta.__instancecheck__`: about 300 ns a
call here, against 40 ns for a plain class. The analyses, the schedulers and the
emitter test every op of a program against a chain of classes, hundreds of thousands
of times per strategy in `stagec dse`. `kind_of(A, (B, C), D)` returns a function that
answers which group an object's class belongs to - the index of the first group it
is a subclass of, -1 for none - with `issubclass` once per class (what isinstance
answers for an instance of it, registered virtual subclasses included) and a dict
lookup after.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable

__all__ = ["class_tests", "kind_of"]


def kind_of(*groups: type | tuple[type, ...]) -> Callable[[object], int]:
    classes = tuple(g if isinstance(g, tuple) else (g,) for g in groups)
    known: dict[type, int] = {}

    def kind(value: object) -> int:
        cls = value.__class__
        index = known.get(cls)
        if index is None:
            index = known[cls] = next((i for i, group in enumerate(classes) if issubclass(cls, group)), -1)
        return index

    return kind


def class_tests(**groups: type | tuple[type, ...]) -> Callable[[object], tuple]:
    """`tests(value).name` is isinstance(value, groups[name]), for every group at once,
    decided once per class: for a chain of tests whose order and conditions matter."""
    answers_of = namedtuple("ClassTests", groups)
    classes = tuple(g if isinstance(g, tuple) else (g,) for g in groups.values())
    known: dict[type, tuple] = {}

    def tests(value: object) -> tuple:
        cls = value.__class__
        answers = known.get(cls)
        if answers is None:
            answers = known[cls] = answers_of(*(issubclass(cls, group) for group in classes))
        return answers

    return tests
