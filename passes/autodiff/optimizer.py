"""The optimizer step: one update per parameter over its stored states.

The step mirrors the forward's layer structure, so a stacked layer parameter is
updated inside a `stg.repeat L` that reads and assigns its per-layer states. Under
mixed precision (DeepCompile §5.1) the update runs on the fp32 master weight and
fp32 states, and the bf16 compute copy is written back from it.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import f32
from xdsl.ir import Block, Region, SSAValue

from stagec.dialects.stg.names import EXP_AVG, EXP_AVG_SQ, GRAD, MASTER, MOMENTUM, STEP
from stagec.dialects import stg
from stagec.dialects.stg import ElementwiseKind as E
from stagec.dialects.stg import TensorType


@dataclass(frozen=True)
class OptimizerConfig:
    kind: str  # "adamw", "adam", "sgd" or "none"
    lr: float
    beta1: float
    beta2: float
    eps: float
    weight_decay: float
    momentum: float
    master_weights: bool
    zero_grads: bool
    wide_grads: bool = True  # f32 gradient buffers under master weights (else the param's type)


@dataclass
class ParamGroup:
    """The parameters read directly in one block, and the layer stacks inside it."""

    params: dict[str, TensorType]
    stacks: list[tuple[stg.RepeatOp, ParamGroup]]


def param_groups(block: Block) -> ParamGroup:
    group = ParamGroup({}, [])
    for op in block.ops:
        if isinstance(op, stg.ParamOp):
            group.params.setdefault(op.tensor_name.data, op.result.type)
        elif isinstance(op, stg.RepeatOp):
            group.stacks.append((op, param_groups(op.body.block)))
        else:
            for region in op.regions:
                for inner in region.blocks:
                    nested = param_groups(inner)
                    for name, ty in nested.params.items():
                        group.params.setdefault(name, ty)
                    group.stacks += nested.stacks
    return group


def optimizer_block(group: ParamGroup, config: OptimizerConfig) -> Block:
    block = Block()
    for name, ty in group.params.items():
        _update(block, name, ty, config)
    for repeat, inner in group.stacks:
        if not _has_params(inner):
            continue
        body = optimizer_block(inner, config)
        body.add_op(stg.YieldOp())
        block.add_op(stg.RepeatOp(repeat.count_expr, [], [], Region(body)))
    return block


def _has_params(group: ParamGroup) -> bool:
    return bool(group.params) or any(_has_params(g) for _, g in group.stacks)


def state_type(param_type: TensorType, config: OptimizerConfig) -> TensorType:
    """fp32 under mixed precision, else the parameter's own type."""
    return TensorType(param_type.shape, f32) if config.master_weights else TensorType(param_type.shape, param_type.element_type)


def _update(block: Block, name: str, ty: TensorType, config: OptimizerConfig) -> None:
    def add(op):
        block.add_op(op)
        return op

    def read(state: str, state_ty: TensorType) -> SSAValue:
        return add(stg.OptimizerStateOp(state, name, state_ty)).result

    sty = state_type(ty, config)
    weight = read(MASTER, sty) if config.master_weights else add(stg.ParamOp(name, ty)).result
    gty = sty if config.wide_grads or not config.master_weights else TensorType(ty.shape, ty.element_type)
    grad = read(GRAD, gty)
    if gty != sty:
        grad = add(stg.ElementwiseOp(E.CAST, [grad], sty)).result
    if config.kind in ("adam", "adamw"):
        update = add(
            stg.AdamOp(
                weight,
                grad,
                read(EXP_AVG, sty),
                read(EXP_AVG_SQ, sty),
                read(STEP, TensorType([], sty.element_type)),
                lr=config.lr,
                betas=(config.beta1, config.beta2),
                eps=config.eps,
                weight_decay=config.weight_decay,
                decoupled=config.kind == "adamw",
            )
        )
        new_weight = update.new_param
        for state, value in ((EXP_AVG, update.new_exp_avg), (EXP_AVG_SQ, update.new_exp_avg_sq), (STEP, update.new_step)):
            add(stg.AssignOp(value, state, name))
    else:
        buffer = read(MOMENTUM, sty) if config.momentum else None
        update = add(
            stg.SgdOp(
                weight,
                grad,
                lr=config.lr,
                weight_decay=config.weight_decay,
                momentum_buffer=buffer,
                momentum=config.momentum if config.momentum else None,
            )
        )
        new_weight = update.new_param
        if buffer is not None:
            add(stg.AssignOp(update.new_momentum_buffer, MOMENTUM, name))
    if config.master_weights:
        add(stg.AssignOp(new_weight, MASTER, name))
        new_weight = add(stg.ElementwiseOp(E.CAST, [new_weight], ty)).result
    add(stg.AssignOp(new_weight, name))
    if config.zero_grads:
        add(stg.AssignOp(add(stg.FillOp(0.0, gty)).result, GRAD, name))
