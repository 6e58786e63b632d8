"""The dialects stagec speaks: stg (symbolic sharded tensors) and torch (torch-mlir input)."""

from collections.abc import Callable

from xdsl.ir import Dialect


def _builtin() -> Dialect:
    from xdsl.dialects.builtin import Builtin

    return Builtin


def _func() -> Dialect:
    from xdsl.dialects.func import Func

    return Func


def _stg() -> Dialect:
    from stagec.dialects.stg import STG

    return STG


def _torch() -> Dialect:
    from stagec.dialects.torch import Torch

    return Torch


def all_dialects() -> dict[str, Callable[[], Dialect]]:
    """Every dialect stagec-opt loads, by name; factories so that loading stays lazy."""
    return {"builtin": _builtin, "func": _func, "stg": _stg, "torch": _torch}
