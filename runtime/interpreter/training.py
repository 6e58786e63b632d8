"""Training ops: stg.vjp differentiates its body with torch.autograd, and stg.adam /
stg.sgd are torch.optim's Adam, AdamW and SGD updates written out functionally.

A vjp body runs on every rank at once, each rank's primals leaves of its own graph;
one autograd.grad call then gives every rank the gradient of its own local
computation (a partial sum where the cotangents are split and the primal is not, as
the op's types say). Collectives inside a body are refused: an all-reduce copies its
result to every rank, and differentiating every copy would count it once per rank.
"""

from __future__ import annotations

import torch

from stagec.dialects.stg.comm import CommOp
from stagec.dialects.stg.training import AdamOp, SgdOp, VjpOp
from stagec.runtime.interpreter.errors import InterpreterError
from stagec.runtime.interpreter.registry import Rank, implements, per_rank
from stagec.runtime.interpreter.tensor_types import torch_dtype
from stagec.runtime.interpreter.values import PerRank


def _differentiable(local: torch.Tensor) -> torch.Tensor:
    """A node to differentiate with respect to: a fresh leaf, or (inside an outer
    autograd computation) a view that keeps the outer graph intact."""
    if not local.is_floating_point():
        return local
    if local.requires_grad:
        return local.view_as(local)
    return local.detach().requires_grad_(True)


@implements(VjpOp)
def vjp(op: VjpOp, operands, ex):
    for inner in op.body.walk():
        if isinstance(inner, CommOp):
            raise InterpreterError(
                f"a stg.vjp body runs rank-locally, but it holds '{inner.name}'; "
                "move communication out of the differentiated body"
            )
    primals = operands[: len(op.primals)]
    cotangents = operands[len(op.primals) :]
    wrt = op.wrt_indices
    for i in wrt:
        if not torch_dtype(op.primals[i].type.element_type).is_floating_point:
            raise InterpreterError(
                f"primal #{i} has element type {op.primals[i].type.element_type}; only floats have gradients"
            )
    ranks = [rank.index for rank in ex.ranks]
    outer_graph = any(value[r].requires_grad for value in primals + cotangents for r in ranks)
    leaves: list[PerRank] = [[None] * ex.mesh.num_ranks for _ in primals]
    for leaf, value in zip(leaves, primals):
        for r in ranks:
            leaf[r] = _differentiable(value[r])
    with torch.enable_grad():
        outputs = ex.run_block(op.body.block, leaves)
    roots, seeds = [], []
    for value, cotangent in zip(outputs, cotangents):
        for r in ranks:
            if value[r].requires_grad:
                roots.append(value[r])
                seeds.append(cotangent[r].to(value[r].dtype))
    inputs = [leaves[i][r] for i in wrt for r in ranks]
    grads = (
        torch.autograd.grad(roots, inputs, seeds, allow_unused=True, create_graph=outer_graph)
        if roots
        else [None] * len(inputs)
    )
    results = []
    grads = iter(grads)
    for i in wrt:
        value: PerRank = [None] * ex.mesh.num_ranks
        for r in ranks:
            g = next(grads)
            value[r] = torch.zeros_like(leaves[i][r]) if g is None else g
        results.append(value)
    return results


def _hyper(op, name: str) -> float:
    return getattr(op, name).value.data


@per_rank(AdamOp)
def adam(op: AdamOp, rank: Rank, param, grad, exp_avg, exp_avg_sq, step):
    """torch.optim.Adam's single-tensor step (AdamW with `decoupled`), from the states
    before the step; returns the new parameter, moments and step count."""
    lr, beta1, beta2 = _hyper(op, "lr"), _hyper(op, "beta1"), _hyper(op, "beta2")
    eps, weight_decay = _hyper(op, "eps"), _hyper(op, "weight_decay")
    new_step = step + 1
    t = float(new_step)
    if weight_decay and op.decoupled is not None:
        param = param * (1 - lr * weight_decay)
    elif weight_decay:
        grad = grad + weight_decay * param
    exp_avg = exp_avg.lerp(grad, 1 - beta1)
    exp_avg_sq = exp_avg_sq * beta2 + (1 - beta2) * grad * grad
    step_size = lr / (1 - beta1**t)
    denom = exp_avg_sq.sqrt() / (1 - beta2**t) ** 0.5 + eps
    return param - step_size * (exp_avg / denom), exp_avg, exp_avg_sq, new_step


@per_rank(SgdOp)
def sgd(op: SgdOp, rank: Rank, param, grad, momentum_buffer=None):
    """torch.optim.SGD without dampening or Nesterov. A zero momentum buffer gives
    torch's first step (buffer = grad) exactly."""
    lr, weight_decay = _hyper(op, "lr"), _hyper(op, "weight_decay")
    if weight_decay:
        grad = grad + weight_decay * param
    if momentum_buffer is None:
        return param - lr * grad
    momentum_buffer = momentum_buffer * _hyper(op, "momentum") + grad
    return param - lr * momentum_buffer, momentum_buffer
