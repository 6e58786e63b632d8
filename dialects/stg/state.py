"""State ops: where tensors enter a training step - parameters, inputs, optimizer states.

A state op inside a stg.repeat body names one tensor per iteration (each of the 80
layers has its own `mlp.w1`), so its count multiplies by the repeat count.

Inside a stg.repeat a per-layer state names the layer of the iteration. Outside any
repeat, `layer K of N` names layer K of an N-layer stack explicitly - the scheduled
form's gradient buckets (stg-bucket-gradients) read and write the gradients of several
layers in one place:

    %g = stg.optimizer_state "grad" of "layers.mlp.w1" layer 5 of 16 : ...
    stg.assign %r to "grad" of "layers.mlp.w1" layer 5 of 16 : ...

State is named storage, not SSA: reads carry a memory-read effect and `stg.assign`
a write, so CSE never merges a read across a write. Per-parameter states a training
step keeps (stg-autodiff's conventions):

    "grad" of W        the gradient (fp32 under mixed precision), summed over micro-batches
    "master" of W      the fp32 master weight (mixed precision only)
    "exp_avg"/"exp_avg_sq"/"step" of W     Adam's moments and step count
    "momentum" of W    SGD's momentum buffer
"""

from __future__ import annotations

import functools

from xdsl.dialects.builtin import I64, IntegerAttr, StringAttr, i64
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, opt_prop_def, prop_def, result_def, traits_def
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect
from xdsl.utils.exceptions import VerifyException

from stagec.dialects.stg.names import GRAD
from stagec.dialects.stg.attributes import TensorType
from stagec.dialects.stg.mesh import MeshAxesDeclared


class LayerAddressed:
    """`layer K of N`: the op names layer K of an N-layer stack itself (module doc)."""

    def explicit_layer(self) -> tuple[int, int] | None:
        layer, stack = self.properties.get("layer"), self.properties.get("stack")
        return (layer.value.data, stack.value.data) if layer is not None and stack is not None else None

    def _verify_layer(self) -> None:
        layer, stack = self.properties.get("layer"), self.properties.get("stack")
        if (layer is None) != (stack is None):
            raise VerifyException(f"'{self.name}': 'layer' and 'of' (the stack's size) go together")
        if layer is not None and not 0 <= layer.value.data < stack.value.data:
            raise VerifyException(f"'{self.name}': layer {layer.value.data} is not one of the stack's "
                                  f"{stack.value.data} layers")


def layer_props(layer: tuple[int, int] | None) -> dict:
    return {} if layer is None else {"layer": _i64(layer[0]), "stack": _i64(layer[1])}


@functools.lru_cache(maxsize=4096)
def _i64(value: int) -> IntegerAttr:
    """One shared attribute per index (attributes are immutable): building and
    verifying an IntegerAttr costs more than the rest of a state op, and passes that
    unroll layer loops make thousands with a few dozen values."""
    return IntegerAttr(value, i64)


class StateOp(LayerAddressed, IRDLOperation):
    """A named tensor that lives across steps (or is fed from outside)."""

    tensor_name = prop_def(StringAttr, prop_name="name")
    result = result_def(TensorType)
    layer = opt_prop_def(IntegerAttr[I64])
    stack = opt_prop_def(IntegerAttr[I64])

    traits = traits_def(MemoryReadEffect(), MeshAxesDeclared())

    def __init__(self, name: str, result_type: TensorType, layer: tuple[int, int] | None = None, **extra):
        super().__init__(
            result_types=[result_type],
            properties={"name": StringAttr(name), **{k: StringAttr(v) for k, v in extra.items()},
                        **layer_props(layer)},
        )

    def verify_(self) -> None:
        self._verify_layer()
        if not self.tensor_name.data:
            raise VerifyException(f"'{self.name}' needs a non-empty name")
        if self.result.type.partial_axes and not self._may_be_partial():
            raise VerifyException(f"'{self.name}' \"{self.tensor_name.data}\" cannot be a partial sum")

    def _may_be_partial(self) -> bool:
        return False


@irdl_op_definition
class ParamOp(StateOp):
    """A trainable parameter: `%w = stg.param "layers.mlp.w1" : !stg.tensor<[H, 4*H/tp], bf16>`."""

    name = "stg.param"

    assembly_format = "$name (`layer` $layer^ `of` $stack)? attr-dict `:` type($result)"


@irdl_op_definition
class InputOp(StateOp):
    """A batch input (tokens, labels): `%ids = stg.input "input_ids" : ...`."""

    name = "stg.input"

    assembly_format = "$name (`layer` $layer^ `of` $stack)? attr-dict `:` type($result)"


@irdl_op_definition
class OptimizerStateOp(StateOp):
    """An optimizer state of a parameter:
    `%m = stg.optimizer_state "exp_avg" of "layers.mlp.w1" : ...`."""

    name = "stg.optimizer_state"

    param = prop_def(StringAttr)

    assembly_format = "$name `of` $param (`layer` $layer^ `of` $stack)? attr-dict `:` type($result)"

    def __init__(self, name: str, param: str, result_type: TensorType, layer: tuple[int, int] | None = None):
        super().__init__(name, result_type, layer, param=param)

    def _may_be_partial(self) -> bool:
        return self.tensor_name.data == GRAD  # a lazily reduced gradient buffer (stg.assign)

    def verify_(self) -> None:
        super().verify_()
        if not self.param.data:
            raise VerifyException("'stg.optimizer_state' must name its parameter")


@irdl_op_definition
class AssignOp(LayerAddressed, IRDLOperation):
    """Writes a named state: `stg.assign %w2 to "w" : T` (a parameter) or
    `stg.assign %m to "exp_avg" of "w" : T` (a per-parameter state). Later reads of
    the name, in this step or the next, see the value. A "grad" buffer may be stored
    as a partial sum: data-parallel ranks accumulate their own shares over the
    micro-batches and the optimizer's read reduces them once per step."""

    name = "stg.assign"

    value = operand_def(TensorType)
    state_name = prop_def(StringAttr, prop_name="name")
    param = opt_prop_def(StringAttr)
    layer = opt_prop_def(IntegerAttr[I64])
    stack = opt_prop_def(IntegerAttr[I64])

    traits = traits_def(MemoryWriteEffect(), MeshAxesDeclared())
    assembly_format = "$value `to` $name (`of` $param^)? (`layer` $layer^ `of` $stack)? attr-dict `:` type($value)"

    def __init__(self, value, name: str, param: str | None = None, layer: tuple[int, int] | None = None):
        super().__init__(
            operands=[value],
            properties={"name": StringAttr(name), **({"param": StringAttr(param)} if param is not None else {}),
                        **layer_props(layer)},
        )

    @property
    def key(self) -> tuple[str, str | None]:
        """(state name, parameter) as the matching read names it: ("w", None) for a
        parameter, ("exp_avg", "w") for one of its states."""
        return self.state_name.data, self.param.data if self.param is not None else None

    def verify_(self) -> None:
        self._verify_layer()
        if not self.state_name.data or (self.param is not None and not self.param.data):
            raise VerifyException("'stg.assign' needs a non-empty state name")
        if self.value.type.partial_axes and self.state_name.data != GRAD:
            raise VerifyException(
                f"'stg.assign' to \"{self.state_name.data}\": only a gradient buffer may be stored as a "
                f"partial sum ({self.value.type.layout_str()}); reduce it first"
            )
