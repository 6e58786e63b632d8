"""The error a pass raises when its input breaks its contract, and the warning it
gives when it goes on but does less than asked.

stagec-opt prints an error as `file:line:col: error: pass 'NAME' failed: MESSAGE`,
with the location of the op it names when the op has one, and exits with code 2. A
warning is one line on stderr, `warning: pass 'NAME': MESSAGE`, and the pass goes on.
"""

from __future__ import annotations

import sys

from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException


class PassError(DiagnosticException):
    """A pass cannot transform its input; `op` is where the problem is, if anywhere."""

    def __init__(self, message: str, op: Operation | None = None):
        super().__init__(message)
        self.op = op


def warn(pass_name: str, message: str) -> None:
    """Say on stderr, in one line, that pass `pass_name` does less than it was asked."""
    print(f"warning: pass '{pass_name}': {message}", file=sys.stderr)
