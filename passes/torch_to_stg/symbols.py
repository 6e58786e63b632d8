"""The model's symbols (docs/training-ir.md) read off an imported torch function:

    V, H    the token embedding table [V, H] (the embedding whose indices are an input)
    P       a position table [P, H] (an embedding whose indices are position-only)
    N, KV, D  the first attention: q [B, N, S, D], k [B, KV, S, D]
    F       a linear layer inside the layers whose output is none of H, N*D, KV*D, V
    L       the layer count: distinct indices in `<list>.<i>.` parameter names

Given bindings (a config's, e.g. from a Hugging Face config) win over inferred ones.
"""

from __future__ import annotations

from collections.abc import Mapping

from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, StringAttr

from stagec.dialects.torch import DYNAMIC_SIZE, ValueTensorType
from stagec.passes.torch_to_stg.context import ModelSymbols, layer_of

__all__ = ["infer_symbols"]


def _shape(value) -> list[int] | None:
    ty = value.type
    if not isinstance(ty, ValueTensorType) or not hasattr(ty.shape, "data"):
        return None
    return [s.data for s in ty.shape.data]


def infer_symbols(fn: func.FuncOp, given: Mapping[str, int] | None = None) -> ModelSymbols:
    symbols = ModelSymbols()
    for name, value in (given or {}).items():
        symbols.bind(name, value)
    kinds = {}
    names = {}
    arg_attrs = fn.arg_attrs.data if fn.arg_attrs is not None else [DictionaryAttr({})] * len(fn.args)
    for arg, attrs in zip(fn.args, arg_attrs):
        kind = attrs.data.get("torch.kind")
        name = attrs.data.get("torch.name")
        kinds[arg] = kind.data if isinstance(kind, StringAttr) else "input"
        names[arg] = name.data if isinstance(name, StringAttr) else ""
    layers = {layer_of(names[a]) for a in fn.args if kinds[a] == "parameter"} - {None}
    if layers:
        by_prefix: dict[str, set[int]] = {}
        for prefix, index in layers:
            by_prefix.setdefault(prefix, set()).add(index)
        prefix = max(by_prefix, key=lambda p: len(by_prefix[p]))
        symbols.bind("L", len(by_prefix[prefix]))
    linears = []
    for op in fn.body.block.ops:
        if op.name == "torch.aten.embedding":
            table = _shape(op.operands[0])
            ids = op.operands[1]
            if table and len(table) == 2:
                if ids in kinds and kinds[ids] == "input":
                    symbols.bind("V", table[0])
                    symbols.bind("H", table[1])
                elif not (ids in kinds):
                    symbols.bind("P", table[0]) if "V" in symbols.values else None
        elif op.name == "torch.aten.scaled_dot_product_attention":
            q, k = _shape(op.operands[0]), _shape(op.operands[1])
            if q and k and len(q) == 4 and len(k) == 4 and DYNAMIC_SIZE not in (q[1], q[3], k[1]):
                symbols.bind("N", q[1])
                symbols.bind("KV", k[1])
                symbols.bind("D", q[3])
        elif op.name == "torch.aten.linear":
            w = op.operands[1]
            shape = _shape(w)
            if shape and len(shape) == 2 and w in names and layer_of(names[w]):
                linears.append(shape[0])
    v = symbols.values
    if "F" in v or "FE" in v:
        return symbols
    known = {v.get("H"), v.get("V"), v.get("E")}
    if "N" in v and "D" in v:
        known |= {v["N"] * v["D"], v.get("KV", v["N"]) * v["D"]}
    for out in linears:
        if out not in known:
            symbols.bind("F", out)
            break
    return symbols
