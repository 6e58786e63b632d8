"""Shared helpers of the interpreter tests: parse IR text, run a function, make
seeded random inputs. Everything runs in float64 and compares to 1e-10."""

from __future__ import annotations

import torch
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from stagec.dialects import make_context
from stagec.runtime.interpreter import Interpreter, StateStore

TOL = dict(atol=1e-10, rtol=1e-10)


def parse(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


def interpreter(text: str, **bindings: int) -> Interpreter:
    return Interpreter(parse(text), bindings)


def run(text: str, *args, func: str = "f", store: StateStore | None = None, **bindings: int) -> list[torch.Tensor]:
    """Runs @func of the module `text` on global-tensor arguments."""
    return interpreter(text, **bindings).run(func, store, list(args))


def rand(*shape: int, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator, dtype=torch.float64)


def randint(high: int, *shape: int, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, high, shape, generator=generator, dtype=torch.int64)


def close(actual: torch.Tensor, expected: torch.Tensor) -> None:
    torch.testing.assert_close(actual, expected, **TOL)


def t(dims: str, element: str = "f64", partial: str = "") -> str:
    """`t("B/dp, H")` -> `!stg.tensor<[B/dp, H], f64>`."""
    return f"!stg.tensor<[{dims}]{' @' + partial if partial else ''}, {element}>"
