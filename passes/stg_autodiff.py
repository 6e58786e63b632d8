"""stg-autodiff: the training step of a forward program (docs/training-ir.md).

Requires: a `func.func @forward()` returning a scalar float loss, unsharded (the pass
runs before stg-shard: no split or partial tensors, no collectives).

Guarantees: `@forward` is replaced by `@train_step`, which returns the step's loss and
holds a forward phase, a backward phase that stores every parameter's gradient in its
"grad" state, and an optimizer phase (unless optimizer=none); with micro_batches=M > 1
the first two run in a `stg.microbatch M` over inputs with a leading [M] dim and the
gradients accumulate. Layer stacks stay loops: the backward of `stg.repeat L` is one
`stg.repeat L ... reverse`, with recompute=true re-running each layer's forward.

    stagec-opt model.mlir --pass-pipeline='builtin.module(stg-autodiff{optimizer=adamw lr=3e-4 micro_batches=4 recompute=true})'
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import AnyFloat, ModuleOp, f32
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass

from stagec.dialects.stg.names import FORWARD_FUNCTION, TRAIN_STEP_FUNCTION
from stagec.dialects import stg
from stagec.dialects.stg import ElementwiseKind as E
from stagec.dialects.stg import PhaseKind, TensorType
from stagec.dialects.stg.comm import CommOp
from stagec.dialects.stg.structure import stacked
from stagec.dialects.stg.vjp import AutodiffError
from stagec.dialects.symbolic import Expr
from stagec.passes.autodiff.optimizer import OptimizerConfig, optimizer_block, param_groups
from stagec.passes.autodiff.reverse import BlockReverser, GradientPolicy, activity, seal_phase
from stagec.passes.diagnostics import PassError

OPTIMIZERS = ("adamw", "adam", "sgd", "none")
MASTER_WEIGHTS = ("auto", "true", "false")


def _append(block: Block, op):
    block.add_op(op)
    return op


def _low_precision(ty: TensorType) -> bool:
    return isinstance(ty.element_type, AnyFloat) and ty.element_type.bitwidth <= 16


@dataclass(frozen=True)
class StgAutodiff(ModulePass):
    """Differentiates @forward into @train_step: forward, backward and optimizer phases."""

    name = "stg-autodiff"

    optimizer: str = "adamw"
    """The optimizer step: adamw, adam, sgd, or none (gradients only)."""
    lr: float = 1e-4
    """The learning rate."""
    beta1: float = 0.9
    """Adam's first-moment decay."""
    beta2: float = 0.95
    """Adam's second-moment decay."""
    eps: float = 1e-8
    """Adam's denominator epsilon."""
    weight_decay: float = 0.0
    """Decoupled weight decay (adamw) or L2 penalty (adam, sgd)."""
    momentum: float = 0.0
    """SGD's momentum (0: plain SGD, no momentum buffer)."""
    micro_batches: int = 1
    """Micro-batches per step: gradients accumulate over them before the update."""
    recompute: bool = False
    """Recompute each layer's activations in the backward instead of keeping them."""
    master_weights: str = "auto"
    """Keep fp32 master weights for the update: true, false, or auto (with bf16/f16 parameters)."""
    grad_dtype: str = "auto"
    """The gradient buffers' type: `f32`, `param` (the parameter's, as Megatron keeps
    them without grad_reduce_in_fp32) or `auto` (f32 with master weights)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        forward = self._forward_function(op)
        try:
            self._differentiate(forward)
        except AutodiffError as error:
            where = f"'{error.op.name}': " if error.op is not None else ""
            raise PassError(f"{where}{error}", error.op) from None

    # -- contract -----------------------------------------------------------------------

    def _forward_function(self, module: ModuleOp) -> func.FuncOp:
        if self.optimizer not in OPTIMIZERS:
            raise PassError(f"optimizer={self.optimizer} is not one of {', '.join(OPTIMIZERS)}")
        if self.master_weights not in MASTER_WEIGHTS:
            raise PassError(f"master_weights={self.master_weights} is not one of auto, true, false")
        if self.grad_dtype not in ("auto", "param", "f32"):
            raise PassError(f"grad_dtype={self.grad_dtype} is not one of auto, param, f32")
        if self.micro_batches < 1:
            raise PassError(f"micro_batches={self.micro_batches} must be at least 1")
        forward = next(
            (f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == FORWARD_FUNCTION), None
        )
        if forward is None:
            raise PassError("the module has no func.func @forward to differentiate")
        ret = forward.body.block.last_op
        if not isinstance(ret, func.ReturnOp) or len(ret.arguments) != 1:
            raise PassError("@forward must return exactly one value, the loss", ret)
        loss_type = ret.arguments[0].type
        if not isinstance(loss_type, TensorType) or loss_type.rank != 0 or not isinstance(loss_type.element_type, AnyFloat):
            raise PassError(f"@forward must return a scalar float loss, not {loss_type}", ret)
        for inner in forward.walk():
            if isinstance(inner, CommOp):
                raise PassError(f"'{inner.name}' in @forward: run stg-autodiff before stg-shard", inner)
            for value in (*inner.operands, *inner.results):
                ty = value.type
                if isinstance(ty, TensorType) and (any(ty.splits) or ty.partial_axes):
                    raise PassError(
                        f"'{inner.name}' in @forward uses the distributed tensor "
                        f"{ty.layout_str()}; run stg-autodiff before stg-shard",
                        inner,
                    )
        return forward

    # -- construction -------------------------------------------------------------------

    def _differentiate(self, forward: func.FuncOp) -> None:
        body = forward.body.block
        ret = body.last_op
        loss = ret.arguments[0]
        active: set = set()
        activity(body, active)
        if loss not in active:
            raise AutodiffError(None, "the loss does not depend on any parameter")
        params = [o for o in body.walk() if isinstance(o, stg.ParamOp)]
        master = self.master_weights == "true" or (
            self.master_weights == "auto" and any(_low_precision(p.result.type) for p in params)
        )
        wide = self.grad_dtype == "f32" or (self.grad_dtype == "auto" and master)
        policy = GradientPolicy(
            grad_element_type=(lambda ty: f32) if wide else (lambda ty: ty.element_type),
            accumulate=self.micro_batches > 1,
        )

        # Inputs stay outside the phases: both read them (per micro-batch slices).
        inputs = [o for o in body.ops if isinstance(o, stg.InputOp)]
        forward_block = Block()
        for o in list(body.ops):
            if o is not ret and not isinstance(o, stg.InputOp):
                o.detach()
                forward_block.add_op(o)
        groups = param_groups(forward_block)

        backward_block = Block()
        reverser = BlockReverser(forward_block, backward_block, active, policy, self.recompute)
        seed = _append(backward_block, stg.FillOp(1.0 / self.micro_batches, loss.type))
        reverser.run({loss: seed.result})

        step = Block()
        for o in inputs:
            o.detach()
            step.add_op(o)
        if self.micro_batches == 1:
            step_loss = self._phases(step, forward_block, backward_block, loss)
        else:
            step_loss = self._micro_batch_loop(step, inputs, forward_block, backward_block, loss)
        if self.optimizer != "none":
            config = OptimizerConfig(
                self.optimizer, self.lr, self.beta1, self.beta2, self.eps, self.weight_decay,
                self.momentum, master, zero_grads=self.micro_batches > 1, wide_grads=wide,
            )
            block = optimizer_block(groups, config)
            step.add_op(seal_phase(block, PhaseKind.OPTIMIZER))
        step.add_op(func.ReturnOp(step_loss))

        ret.detach()
        ret.erase()
        train = func.FuncOp(TRAIN_STEP_FUNCTION, ((), (step_loss.type,)), Region(step))
        forward.parent_block().insert_op_before(train, forward)
        forward.detach()
        forward.erase()

    def _phases(self, into: Block, forward_block: Block, backward_block: Block, loss):
        """Appends the forward and backward phases; returns the loss as seen after them."""
        # The forward phase must yield the loss: make it an outside use first.
        marker = _append(into, stg.YieldOp(loss))
        into.insert_op_before(seal_phase(forward_block, PhaseKind.FORWARD), marker)
        into.insert_op_before(seal_phase(backward_block, PhaseKind.BACKWARD), marker)
        step_loss = marker.values[0]
        marker.detach()
        marker.erase()
        return step_loss

    def _micro_batch_loop(self, step: Block, inputs, forward_block, backward_block, loss):
        m = self.micro_batches
        b = Expr.sym("B")
        body = Block()
        scanned = []
        for o in inputs:
            ty = o.result.type
            if ty.rank == 0 or ty.shape[0] != b:
                continue  # shared by every micro-batch (e.g. rotary angles)
            whole = stg.InputOp(o.tensor_name.data, stacked(ty, Expr.const(m)))
            step.insert_op_before(whole, o)
            arg = body.insert_arg(ty, len(body.args))
            o.result.replace_all_uses_with(arg)
            o.detach()
            o.erase()
            scanned.append(whole.result)
        zero = _append(step, stg.FillOp(0.0, loss.type))
        acc = body.insert_arg(loss.type, 0)
        step_loss = self._phases(body, forward_block, backward_block, loss)
        share = _append(body, stg.ElementwiseOp(E.SCALE, [step_loss], loss.type, 1.0 / m))
        total = _append(body, stg.ElementwiseOp(E.ADD, [acc, share.result], loss.type))
        body.add_op(stg.YieldOp(total.result))
        loop = stg.MicroBatchOp(Expr.const(m), [zero.result], scanned, Region(body))
        step.add_op(loop)
        return loop.outputs[0]
