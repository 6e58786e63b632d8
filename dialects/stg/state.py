"""State ops: where tensors enter a training step - parameters, inputs, optimizer states.

A state op inside a stg.repeat body names one tensor per iteration (each of the 80
layers has its own `mlp.w1`), so its count multiplies by the repeat count.
"""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr
from xdsl.irdl import IRDLOperation, irdl_op_definition, prop_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from stagec.dialects.stg.attributes import TensorType
from stagec.dialects.stg.mesh import MeshAxesDeclared


class StateOp(IRDLOperation):
    """A named tensor that lives across steps (or is fed from outside)."""

    tensor_name = prop_def(StringAttr, prop_name="name")
    result = result_def(TensorType)

    traits = traits_def(Pure(), MeshAxesDeclared())

    def __init__(self, name: str, result_type: TensorType, **extra):
        super().__init__(
            result_types=[result_type],
            properties={"name": StringAttr(name), **{k: StringAttr(v) for k, v in extra.items()}},
        )

    def verify_(self) -> None:
        if not self.tensor_name.data:
            raise VerifyException(f"'{self.name}' needs a non-empty name")
        if self.result.type.partial_axes:
            raise VerifyException(f"'{self.name}' \"{self.tensor_name.data}\" cannot be a partial sum")


@irdl_op_definition
class ParamOp(StateOp):
    """A trainable parameter: `%w = stg.param "layers.mlp.w1" : !stg.tensor<[H, 4*H/tp], bf16>`."""

    name = "stg.param"

    assembly_format = "$name attr-dict `:` type($result)"


@irdl_op_definition
class InputOp(StateOp):
    """A batch input (tokens, labels): `%ids = stg.input "input_ids" : ...`."""

    name = "stg.input"

    assembly_format = "$name attr-dict `:` type($result)"


@irdl_op_definition
class OptimizerStateOp(StateOp):
    """An optimizer state of a parameter:
    `%m = stg.optimizer_state "exp_avg" of "layers.mlp.w1" : ...`."""

    name = "stg.optimizer_state"

    param = prop_def(StringAttr)

    assembly_format = "$name `of` $param attr-dict `:` type($result)"

    def __init__(self, name: str, param: str, result_type: TensorType):
        super().__init__(name, result_type, param=param)

    def verify_(self) -> None:
        super().verify_()
        if not self.param.data:
            raise VerifyException("'stg.optimizer_state' must name its parameter")
