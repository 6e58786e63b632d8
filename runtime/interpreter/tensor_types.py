"""stg types evaluated under the bindings: torch dtypes, global and local shapes, and
the check that a value is what its type says."""

from __future__ import annotations

from collections.abc import Mapping

import torch
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
)
from xdsl.ir import Attribute

from stagec.dialects.stg.attributes import DistributedTensorType
from stagec.dialects.symbolic import Expr, IndivisibleError, UnboundSymbolError
from stagec.runtime.interpreter.errors import InterpreterError
from stagec.runtime.interpreter.values import PerRank

_FLOAT_DTYPES = {
    BFloat16Type: torch.bfloat16,
    Float16Type: torch.float16,
    Float32Type: torch.float32,
    Float64Type: torch.float64,
}
_INT_DTYPES = {64: torch.int64, 32: torch.int32, 1: torch.bool}


def torch_dtype(element_type: Attribute) -> torch.dtype:
    """bf16, f16, f32, f64, i64, i32 and i1 (as torch.bool)."""
    if type(element_type) in _FLOAT_DTYPES:
        return _FLOAT_DTYPES[type(element_type)]
    if isinstance(element_type, IntegerType) and element_type.width.data in _INT_DTYPES:
        return _INT_DTYPES[element_type.width.data]
    raise InterpreterError(f"the interpreter has no torch dtype for element type {element_type}")


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """Reductions and normalisations of half-precision values run in fp32, as torch's
    mixed-precision kernels do; f32 and f64 run as they are."""
    return torch.float32 if dtype in (torch.bfloat16, torch.float16) else dtype


class Sizes:
    """Evaluates symbolic sizes under the bindings (cached per type)."""

    def __init__(self, env: Mapping[str, int]):
        self.env = dict(env)
        self._local: dict[DistributedTensorType, tuple[int, ...]] = {}
        self._global: dict[DistributedTensorType, tuple[int, ...]] = {}

    def eval(self, expr: Expr, what: str) -> int:
        try:
            return expr.evaluate(self.env)
        except UnboundSymbolError as e:
            names = ", ".join(e.symbols)
            example = ", ".join(f"'{s}': ..." for s in e.symbols)
            raise InterpreterError(
                f"{what} {expr} has no value: symbol {names} is unbound; give it in "
                f"Interpreter(module, bindings={{{example}}}) or the module's stg.config"
            ) from None
        except IndivisibleError as e:
            raise InterpreterError(f"{what} {e}") from None

    def global_shape(self, ty: DistributedTensorType) -> tuple[int, ...]:
        if ty not in self._global:
            self._global[ty] = tuple(self.eval(d.expr, f"the size of {ty.layout_str()}:") for d in ty.dims.data)
        return self._global[ty]

    def local_shape(self, ty: DistributedTensorType) -> tuple[int, ...]:
        if ty not in self._local:
            self._local[ty] = tuple(
                self.eval(d.local_size(), f"the per-rank size of {ty.layout_str()}:") for d in ty.dims.data
            )
        return self._local[ty]

    def bound(self, ty: DistributedTensorType) -> str:
        """`B=4, dp=2`: the bindings a type's sizes use, for messages."""
        names = sorted({s for d in ty.dims.data for s in d.local_size().symbols | d.expr.symbols})
        return ", ".join(f"{n}={self.env[n]}" for n in names if n in self.env)


def check_value(value: PerRank, ty: DistributedTensorType, sizes: Sizes, what: str) -> None:
    """Fail unless every rank's local has the shape and dtype the type gives it (ranks
    outside the program that computes the value hold None)."""
    shape, dtype = sizes.local_shape(ty), torch_dtype(ty.element_type)
    for rank, local in enumerate(value):
        if local is not None and (tuple(local.shape) != shape or local.dtype != dtype):
            where = f" on rank {rank}" if len(value) > 1 else ""
            under = f" under {sizes.bound(ty)}" if sizes.bound(ty) else ""
            raise InterpreterError(
                f"{what}{where} is {list(local.shape)} {local.dtype}, but its type "
                f"{ty.layout_str()} {ty.element_type} means {list(shape)} {dtype} per rank{under}"
            )
