"""Micro-batch schedules: the order in which a pipeline stage runs the forward and
backward of each micro-batch (docs/pipeline.md).

- GPipe (Huang et al. 2019): every forward, then every backward, last micro-batch
  first: F0 .. F(M-1), B(M-1) .. B0. A stage holds the activations of all M
  micro-batches at its peak.
- 1F1B, PipeDream-flush (Narayanan et al. 2021, Megatron-LM's default): stage k of
  pp runs w = min(pp - k - 1, M) warm-up forwards, then M - w times one forward and
  one backward, then the w backwards left. A stage holds at most w + 1 <= pp - k
  micro-batches' activations.

Both end with a flush: the optimizer step runs after every backward of the step.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

SCHEDULES = ("1f1b", "gpipe")


class Step(NamedTuple):
    """One call of a stage's schedule: the forward ("F") or backward ("B") of a
    micro-batch."""

    kind: Literal["F", "B"]
    micro_batch: int

    def __str__(self) -> str:
        return f"{self.kind}{self.micro_batch}"


def gpipe(micro_batches: int) -> list[Step]:
    return [Step("F", i) for i in range(micro_batches)] + [
        Step("B", i) for i in reversed(range(micro_batches))
    ]


def one_f_one_b(stage: int, stages: int, micro_batches: int) -> list[Step]:
    warmup = min(stages - stage - 1, micro_batches)
    steps = [Step("F", i) for i in range(warmup)]
    for i in range(micro_batches - warmup):
        steps += [Step("F", warmup + i), Step("B", i)]
    steps += [Step("B", i) for i in range(micro_batches - warmup, micro_batches)]
    return steps


def schedule(name: str, stage: int, stages: int, micro_batches: int) -> list[Step]:
    """The calls of stage `stage` of `stages` under the schedule `name`."""
    if name == "gpipe":
        return gpipe(micro_batches)
    if name == "1f1b":
        return one_f_one_b(stage, stages, micro_batches)
    raise ValueError(f"unknown schedule {name!r} (expected one of {', '.join(SCHEDULES)})")


def in_flight(steps: list[Step]) -> int:
    """The most micro-batches whose forward has run and whose backward has not."""
    live = peak = 0
    for step in steps:
        live += 1 if step.kind == "F" else -1
        peak = max(peak, live)
    return peak
