"""The error a pass raises when its input breaks its contract.

stagec-opt prints it as `file:line:col: error: pass 'NAME' failed: MESSAGE`, with the
location of the op it names when the op has one, and exits with code 2.
"""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException


class PassError(DiagnosticException):
    """A pass cannot transform its input; `op` is where the problem is, if anywhere."""

    def __init__(self, message: str, op: Operation | None = None):
        super().__init__(message)
        self.op = op
