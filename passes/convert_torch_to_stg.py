"""convert-torch-to-stg: torch-mlir's torch dialect -> a stg forward program.

    stagec-opt model.torch.mlir --pass-pipeline='builtin.module(convert-torch-to-stg)'

Requires: one `func.func` in torch-mlir's value-tensor form, as `stagec import`
(frontends/torch) makes it: parameters are function arguments carrying `torch.name`
(the FQN) and `torch.kind` ("parameter", "buffer", "input"), dynamic dims are bound
to named symbols (`torch.symbolic_int` "B", "S" + `torch.bind_symbolic_shape`), and
the function returns the scalar loss. Arguments without `torch.kind` are inputs.

Guarantees: the module becomes a forward program as docs/training-ir.md fixes it -
`func.func @forward() -> !stg.tensor<[], f32>`, inputs as `stg.input`, parameters as
`stg.param` named by their FQN, sizes symbolic in the model's symbols (`stg.config`
binds them: H, V, N, KV, D, F, ... read off the graph, or the `config` option), and the
unrolled layers of the layer list folded into one `stg.repeat L` (layers.py says how).
Rotary embeddings become `stg.elementwise rotary` over the `rope.angles` input and
position-only tensors (arange-based ids) the `position_ids` input.

An op on the way from the inputs to the loss that no pattern maps is an error naming
the op, its source line and its nn.Module path; ops whose results nothing converted
needs (position bookkeeping, the pieces of a matched pattern) are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from stagec.dialects.stg.config import parse_bindings
from stagec.passes.diagnostics import PassError
from stagec.passes.torch_to_stg.context import ConversionError
from stagec.passes.torch_to_stg.convert import Converter, build_module, set_config
from stagec.passes.torch_to_stg.layers import fold_layers
from stagec.passes.torch_to_stg.patterns import PATTERNS
from stagec.passes.torch_to_stg.symbols import infer_symbols

__all__ = ["ConvertTorchToStg", "ConversionError", "convert_torch_to_stg"]


def convert_torch_to_stg(module: ModuleOp, model: str = "torch", config: dict[str, int] | None = None,
                         fold: bool = True) -> ModuleOp:
    """The stg forward program of a torch module (a new ModuleOp)."""
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if len(funcs) != 1:
        raise PassError(f"convert-torch-to-stg: expected one torch function, found {len(funcs)}")
    fn = funcs[0]
    symbols = infer_symbols(fn, config)
    cv = Converter(fn, symbols)
    loss = cv.run(PATTERNS)
    out = build_module(cv, loss, model)
    if fold:
        block = out.ops.first.body.block
        tags = {op: where for op, where in cv.layer.items() if op.parent is block}
        result = fold_layers(block, tags)
        if result.reason is not None and result.prefix is not None:
            raise ConversionError(f"cannot fold the layers of '{result.prefix}' into one stg.repeat: {result.reason}")
        if result.prefix is not None:
            symbols.values["L"] = result.count
    set_config(out, symbols)
    return out


@dataclass(frozen=True)
class ConvertTorchToStg(ModulePass):
    """torch dialect (torch-mlir's import) -> a stg forward program (docs/training-ir.md)."""

    name = "convert-torch-to-stg"

    model: str = "torch"
    """The module's `stg.model` name."""
    config: str = ""
    """Model symbol values that win over inferred ones: "H=4096 F=14336"."""
    fold: bool = True
    """Fold the unrolled layers into one stg.repeat."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        new = convert_torch_to_stg(op, self.model, parse_bindings(self.config), self.fold)
        for child in list(op.ops):
            child.detach()
        for child in list(new.ops):
            child.detach()
            op.body.block.add_op(child)
        op.attributes.clear()
        op.attributes.update(new.attributes)
