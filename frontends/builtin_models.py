"""Small built-in models, built as stg IR with symbolic dims.

They are what `stagec ir` shows when no model is named, and a compact example of
building stg IR from Python. The full model templates (GPT, Llama, MoE, MLA, Mamba)
live in frontends/templates/.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.builder import ImplicitBuilder
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, bf16

from stagec.dialects import stg
from stagec.dialects.stg import ElementwiseKind, TensorType


def _t(*dims, partial: tuple[str, ...] = ()) -> TensorType:
    """`_t("B", ("F", ["tp"]))` is !stg.tensor<[B, F/tp], bf16>."""
    return TensorType(dims, bf16, partial)


def llama_mlp() -> ModuleOp:
    """The Llama MLP under Megatron tensor parallelism (stage.md Table III, column row):
    y = down(silu(gate(x)) * up(x)), gate/up split by columns, down by rows, and one
    all-reduce of the partial sum."""
    split_f = ("F", ["tp"])
    module = ModuleOp([stg.MeshOp("m", ["tp"])])
    body = func.FuncOp("llama_mlp", ((), ()))
    module.body.block.add_op(body)
    with ImplicitBuilder(body.body):
        x = stg.InputOp("x", _t("B", "S", "H")).result
        w_gate = stg.ParamOp("mlp.gate_proj", _t("H", split_f)).result
        w_up = stg.ParamOp("mlp.up_proj", _t("H", split_f)).result
        w_down = stg.ParamOp("mlp.down_proj", _t(split_f, "H")).result
        hidden = _t("B", "S", split_f)
        gate = stg.EinsumOp("bsh,hf->bsf", [x, w_gate], hidden).result
        up = stg.EinsumOp("bsh,hf->bsf", [x, w_up], hidden).result
        silu = stg.ElementwiseOp(ElementwiseKind.SILU, [gate], hidden).result
        act = stg.ElementwiseOp(ElementwiseKind.MUL, [silu, up], hidden).result
        partial = stg.EinsumOp(
            "bsf,fh->bsh", [act, w_down], _t("B", "S", "H", partial=("tp",))
        ).result
        stg.AllReduceOp(partial, "m", ["tp"], _t("B", "S", "H"))
        func.ReturnOp()
    return module


BUILTIN_MODELS: dict[str, Callable[[], ModuleOp]] = {"llama-mlp": llama_mlp}
