"""`stg.config`: the module attribute that binds a model's symbols (docs/training-ir.md).

    builtin.module attributes {stg.model = "llama3-8b", stg.config = {H = 4096 : i64, L = 32 : i64, ...}}

The one reader and writer of it. A missing `stg.config` binds nothing. Its integer
entries named as symbols are the bindings; any other entry (a `dtype = "bf16"` note, an
i1 flag) is a fact about the model that binds no symbol and is left alone. A
`stg.config` that is not a dictionary is a malformed module: `ConfigError`, which
stagec-opt and the stagec CLI report like any other diagnostic.
"""

from __future__ import annotations

from collections.abc import Mapping

from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, IntegerType, ModuleOp, i64
from xdsl.ir import Attribute
from xdsl.utils.exceptions import DiagnosticException

from stagec.dialects.symbolic import Expr, SymbolicError

__all__ = ["CONFIG", "SYMBOL_ORDER", "ConfigError", "config_bindings", "entry_value", "parse_bindings", "set_config"]

CONFIG = "stg.config"

# How `stg.config` lists a model's symbols (docs/training-ir.md's table order).
SYMBOL_ORDER = ("H", "L", "L2", "V", "P", "N", "KV", "D", "F", "E", "FE", "FS",
                "QR", "KVR", "DN", "DR", "DV", "DI", "DS", "R")


class ConfigError(DiagnosticException):
    """A malformed `stg.config`; `op` is the module carrying it (stagec-opt points at it)."""

    def __init__(self, message: str, op: ModuleOp | None = None):
        super().__init__(message)
        self.op = op


def config_bindings(module: ModuleOp) -> dict[str, int]:
    """The symbol values `module`'s stg.config binds ({} without one)."""
    config = module.attributes.get(CONFIG)
    if config is None:
        return {}
    if not isinstance(config, DictionaryAttr):
        raise ConfigError(f"{CONFIG} must be a dictionary of the model's symbol values, not {config}", module)
    return {
        name: number
        for name, value in config.data.items()
        if (number := entry_value(value)) is not None and _is_symbol(name)
    }


def entry_value(attr: Attribute) -> int | None:
    """The size an entry binds, or None for an entry that binds none."""
    if isinstance(attr, IntegerAttr) and isinstance(attr.type, IntegerType):
        if attr.type.width.data > 1:  # i1 is a flag, not a size
            return attr.value.data
    return None


def set_config(module: ModuleOp, values: Mapping[str, int]) -> None:
    """Bind `values` as `module`'s stg.config, listed in SYMBOL_ORDER (others after, by name)."""
    order = {name: i for i, name in enumerate(SYMBOL_ORDER)}
    names = sorted(values, key=lambda n: (order.get(n, len(order)), n))
    module.attributes[CONFIG] = DictionaryAttr({n: IntegerAttr(values[n], i64) for n in names})


def parse_bindings(text: str) -> dict[str, int]:
    """`H=64,V=128` (or space-separated) -> {"H": 64, "V": 128}, as a pass option spells them."""
    out = {}
    for item in text.replace(",", " ").split():
        name, equals, value = item.partition("=")
        try:
            if not equals or not _is_symbol(name):
                raise ValueError
            out[name] = int(value)
        except ValueError:
            raise ConfigError(f"'{item}' does not bind a symbol to an integer (e.g. H=4096)") from None
    return out


def _is_symbol(name: str) -> bool:
    try:
        Expr.sym(name)
    except SymbolicError:
        return False
    return True
