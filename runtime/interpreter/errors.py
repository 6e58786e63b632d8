"""The one error the interpreter raises, and how it names the op that failed."""

from __future__ import annotations

from xdsl.dialects.builtin import UnknownLoc
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation


class InterpreterError(Exception):
    """A program the interpreter cannot run as written: a missing input, an unbound
    symbol, a value whose shape contradicts its type, an op it cannot execute.

    `located` is set once the message names the op it happened in, so enclosing
    structure ops (a stg.repeat around the failing op) do not name themselves again;
    `stopped` marks a program stopped because another one running beside it failed.
    """

    def __init__(self, message: str, *, located: bool = False, stopped: bool = False):
        super().__init__(message)
        self.located = located
        self.stopped = stopped


def describe_op(op: Operation) -> str:
    """`'stg.einsum' (%h) at loc("model.py":3:4) in @forward`: enough to find the op."""
    text = f"'{op.name}'"
    names = [f"%{r.name_hint}" for r in op.results if r.name_hint]
    if names:
        text += f" ({', '.join(names)})"
    if not isinstance(op.location, UnknownLoc):
        text += f" at {op.location}"
    func = op.parent_op()
    while func is not None and not isinstance(func, FuncOp):
        func = func.parent_op()
    if func is not None:
        text += f" in @{func.sym_name.data}"
    return text
