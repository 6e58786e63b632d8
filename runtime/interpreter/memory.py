"""Memory ops: release marks a value dead (a later use is an error: the buffer is gone),
offload and reload copy a value to host and back, and wait opens a Token."""

from __future__ import annotations

from stagec.dialects.stg.attributes import TokenType
from stagec.dialects.stg.memory import OffloadOp, ReleaseOp, ReloadOp, WaitOp
from stagec.runtime.interpreter.registry import implements
from stagec.runtime.interpreter.values import Token


@implements(ReleaseOp)
def release(op: ReleaseOp, operands, ex):
    ex.release(op.input, op)
    return []


@implements(OffloadOp, ReloadOp)
def transfer(op, operands, ex):
    copy = [None if local is None else local.clone() for local in operands[0]]
    return [Token(copy) if isinstance(op.results[0].type, TokenType) else copy]


@implements(WaitOp)
def wait(op: WaitOp, operands, ex):
    (token,) = operands
    return [] if op.result is None else [token.payload]
