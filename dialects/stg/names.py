"""The names a training program relies on by convention (docs/training-ir.md): its
functions, the kinds of its phases and the roles of a parameter's states. Passes,
analyses and backends find parts of the program by these names, so they are spelled
once, here.
"""

from __future__ import annotations

from enum import auto

from xdsl.utils.str_enum import StrEnum

__all__ = [
    "DECODE_FUNCTION",
    "EXP_AVG",
    "EXP_AVG_SQ",
    "FORWARD_FUNCTION",
    "GRAD",
    "MASTER",
    "MOMENTUM",
    "STEP",
    "TRAIN_STEP_FUNCTION",
    "PREFILL_FUNCTION",
    "Phase",
    "PhaseKind",
]

# func.func @forward() -> loss: the model's forward program (a template or the torch import).
FORWARD_FUNCTION = "forward"
# func.func @train_step(): forward, backward and optimizer phases (stg-autodiff).
TRAIN_STEP_FUNCTION = "train_step"
# func.func @prefill() / @decode() -> next-token logits: inference steps (docs/inference.md).
PREFILL_FUNCTION = "prefill"
DECODE_FUNCTION = "decode"


class Phase(StrEnum):
    """What program a model becomes: a training step, or an inference step (a prefill
    over the prompt, a decode step of one token per sequence over the KV cache)."""

    TRAIN = auto()
    PREFILL = auto()
    DECODE = auto()


class PhaseKind(StrEnum):
    """`stg.phase forward { ... }`: which part of the step a phase is."""

    FORWARD = auto()
    BACKWARD = auto()
    RECOMPUTE = auto()
    OPTIMIZER = auto()


# The states a parameter W owns (`stg.optimizer_state "exp_avg" of "W"`).
GRAD = "grad"  # the gradient, summed over micro-batches
MASTER = "master"  # the fp32 master weight under mixed precision
EXP_AVG = "exp_avg"  # Adam's first moment
EXP_AVG_SQ = "exp_avg_sq"  # Adam's second moment
STEP = "step"  # Adam's step count
MOMENTUM = "momentum"  # SGD's momentum buffer
