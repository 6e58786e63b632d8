"""torch-mlir's Python IR objects -> xDSL, op by op (no printing and re-parsing).

The FX importer builds an MLIR module in torch-mlir's own context; this walks its one
function and builds the same ops in xDSL's generic torch dialect (`stagec.dialects.torch`).
Attributes of the kinds torch-mlir's importer makes (integers, floats, strings, bools,
affine maps) are rebuilt from their fields; types, which repeat a great deal, are
translated once per distinct spelling; anything else falls back to xDSL's attribute
parser on its text.

Each op's location, as `frontends.torch.importer` sets it (`loc("<module path>"(file:line))`),
becomes two discardable attributes the converter reports errors with:
`torch.module` (the nn.Module path, e.g. "model.layers.3.mlp") and `torch.loc`
("file.py:42").
"""

from __future__ import annotations

import re
from collections.abc import Callable

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    AffineMapAttr,
    ArrayAttr,
    BoolAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.parser import Parser

from stagec.dialects import make_context
from stagec.dialects.stg.names import FORWARD_FUNCTION
from stagec.dialects.torch import torch_op

__all__ = ["translate_module"]

_NAME_LOC = re.compile(r'^loc\("(?P<module>[^"]*)"\("(?P<file>[^"]*)":(?P<line>\d+)')


class _Translator:
    def __init__(self, ir):
        self.ir = ir  # torch_mlir.ir
        self.ctx = make_context()
        self.types: dict[str, Attribute] = {}
        self.values: dict[object, SSAValue] = {}

    # -- types and attributes ----------------------------------------------------------
    def type(self, mlir_type) -> Attribute:
        text = str(mlir_type)
        if (ty := self.types.get(text)) is None:
            ty = self.types[text] = Parser(self.ctx, text).parse_type()
        return ty

    def attribute(self, attr) -> Attribute:
        ir = self.ir
        if isinstance(attr, ir.BoolAttr):
            return BoolAttr(attr.value, i1)
        if isinstance(attr, ir.IntegerAttr):
            if str(attr.type) == "i64":
                return IntegerAttr(attr.value, i64)
        elif isinstance(attr, ir.FloatAttr):
            if str(attr.type) == "f64":
                return FloatAttr(attr.value, f64)
        elif isinstance(attr, ir.StringAttr):
            return StringAttr(attr.value)
        elif isinstance(attr, ir.AffineMapAttr):
            return AffineMapAttr(self.affine_map(attr.value))
        elif isinstance(attr, ir.ArrayAttr):
            return ArrayAttr(self.attribute(a) for a in attr)
        text = str(attr)
        try:
            return Parser(self.ctx, text).parse_attribute()
        except Exception:  # e.g. dense_resource blobs of a literal: keep the spelling
            return StringAttr(text)

    def affine_map(self, m) -> AffineMap:
        return AffineMap(m.n_dims, m.n_symbols, tuple(self.affine_expr(e) for e in m.results))

    def affine_expr(self, e) -> AffineExpr:
        ir = self.ir
        if isinstance(e, ir.AffineConstantExpr):
            return AffineExpr.constant(e.value)
        if isinstance(e, ir.AffineSymbolExpr):
            return AffineExpr.symbol(e.position)
        if isinstance(e, ir.AffineDimExpr):
            return AffineExpr.dimension(e.position)
        for cls, combine in (
            (ir.AffineAddExpr, lambda a, b: a + b),
            (ir.AffineMulExpr, lambda a, b: a * b),
            (ir.AffineFloorDivExpr, lambda a, b: a // b),
            (ir.AffineCeilDivExpr, lambda a, b: a.ceil_div(b)),
            (ir.AffineModExpr, lambda a, b: a % b),
        ):
            if isinstance(e, cls):
                return combine(self.affine_expr(e.lhs), self.affine_expr(e.rhs))
        raise NotImplementedError(f"affine expression {e}")

    # -- ops ----------------------------------------------------------------------------
    def location_attrs(self, loc) -> dict[str, Attribute]:
        match = _NAME_LOC.match(str(loc))
        if match is None:
            return {}
        attrs: dict[str, Attribute] = {"torch.loc": StringAttr(f"{match['file']}:{match['line']}")}
        attrs["torch.module"] = StringAttr(match["module"])
        return attrs

    def block(self, mlir_block, block: Block, rename: Callable[[str], str]) -> None:
        for op in mlir_block.operations:
            op = op.operation
            name = op.name
            if name == "func.return":
                block.add_op(func.ReturnOp(*(self.values[v] for v in op.operands)))
                continue
            properties = {name: self.attribute(op.attributes[name]) for name in op.attributes}
            if name == "torch.symbolic_int":
                properties["symbol_name"] = StringAttr(rename(properties["symbol_name"].data))
            cls = torch_op(name)
            new = cls.create(
                operands=[self.values[v] for v in op.operands],
                result_types=[self.type(r.type) for r in op.results],
                properties=properties,
                attributes=self.location_attrs(op.location),
            )
            for old, result in zip(op.results, new.results):
                self.values[old] = result
            block.add_op(new)


def translate_module(
    mlir_module,
    ir,
    arg_attrs: list[dict[str, Attribute]],
    symbol_names: dict[str, str],
) -> ModuleOp:
    """The xDSL module of torch-mlir's `mlir_module` (one func). `arg_attrs` are the
    function's argument attributes (names, kinds); `symbol_names` renames torch's
    shape symbols (s72 -> B)."""
    t = _Translator(ir)
    funcs = [op for op in mlir_module.body.operations if op.operation.name == "func.func"]
    if len(funcs) != 1:
        raise ValueError(f"expected one function from torch-mlir, found {len(funcs)}")
    mlir_func = funcs[0].operation
    entry = mlir_func.regions[0].blocks[0]
    block = Block(arg_types=[t.type(a.type) for a in entry.arguments])
    for old, new, attrs in zip(entry.arguments, block.args, arg_attrs):
        t.values[old] = new
        if "torch.name" in attrs:
            new.name_hint = re.sub(r"[^A-Za-z0-9_]", "_", attrs["torch.name"].data)
    t.block(entry, block, lambda name: symbol_names.get(name, name))
    results = [v.type for v in block.last_op.operands] if block.last_op else []
    fn = func.FuncOp(
        FORWARD_FUNCTION,
        ([a.type for a in block.args], results),
        Region(block),
        arg_attrs=ArrayAttr(DictionaryAttr(a) for a in arg_attrs),
    )
    return ModuleOp([fn])
