"""Micro-batch schedules: the order in which a pipeline stage runs the forward and
backward of each micro-batch (docs/pipeline.md).

- GPipe (Huang et al. 2019): every forward, then every backward, last micro-batch
  first: F0 .. F(M-1), B(M-1) .. B0. A stage holds the activations of all M
  micro-batches at its peak.
- 1F1B, PipeDream-flush (Narayanan et al. 2021, Megatron-LM's default): stage k of
  pp runs w = min(pp - k - 1, M) warm-up forwards, then M - w times one forward and
  one backward, then the w backwards left. A stage holds at most w + 1 <= pp - k
  micro-batches' activations.

- Interleaved 1F1B (Narayanan et al. 2021 §2.2, Megatron-LM's
  `forward_backward_pipelining_with_interleaving`): each of the pp ranks holds v model
  chunks, chunk c of rank k being virtual stage c*pp + k. A rank's calls are numbered
  0 .. M*v - 1 per direction; call j runs chunk (j mod pp*v) // pp (counted from the
  last chunk for a backward) on micro-batch (j // (pp*v)) * pp + j mod pp, so groups
  of pp micro-batches go through chunk 0, then chunk 1, ... Rank k runs
  w = min((pp - k - 1) * 2 + (v - 1) * pp, M*v) warm-up forwards - all M*v when
  M = pp - then M*v - w times (F, B), then the w backwards left. M must be a multiple
  of pp.

All end with a flush: the optimizer step runs after every backward of the step.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

SCHEDULES = ("1f1b", "gpipe", "interleaved-1f1b")


class Step(NamedTuple):
    """One call of a stage's schedule: the forward ("F") or backward ("B") of a
    micro-batch, on the rank's model chunk `chunk` (0 but under interleaving)."""

    kind: Literal["F", "B"]
    micro_batch: int
    chunk: int = 0

    def __str__(self) -> str:
        return f"{self.kind}{self.micro_batch}" if self.chunk == 0 else f"{self.kind}{self.micro_batch}.{self.chunk}"


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


def interleaved_warmup(rank: int, ranks: int, chunks: int, micro_batches: int) -> int:
    """The warm-up forwards of `rank` under interleaved 1F1B (module doc)."""
    total = micro_batches * chunks
    if micro_batches == ranks:
        return total
    return min((ranks - rank - 1) * 2 + (chunks - 1) * ranks, total)


def interleaved_one_f_one_b(rank: int, ranks: int, chunks: int, micro_batches: int) -> list[Step]:
    """Megatron-LM's interleaved schedule of `rank` (module doc); `micro_batches` must
    be a multiple of `ranks`."""
    if micro_batches % ranks:
        raise ValueError(f"interleaved 1F1B needs a multiple of pp = {ranks} micro-batches, not {micro_batches}")
    group = ranks * chunks

    def call(kind: Literal["F", "B"], j: int) -> Step:
        chunk = (j % group) // ranks
        return Step(kind, (j // group) * ranks + j % ranks, chunk if kind == "F" else chunks - 1 - chunk)

    total = micro_batches * chunks
    warmup = interleaved_warmup(rank, ranks, chunks, micro_batches)
    steps = [call("F", j) for j in range(warmup)]
    for j in range(total - warmup):
        steps += [call("F", warmup + j), call("B", j)]
    return steps + [call("B", j) for j in range(total - warmup, total)]


def schedule(name: str, stage: int, stages: int, micro_batches: int, chunks: int = 1) -> list[Step]:
    """The calls of stage (rank) `stage` of `stages` under the schedule `name`; `chunks`
    model chunks per rank (interleaved-1f1b only)."""
    if name == "interleaved-1f1b":
        return interleaved_one_f_one_b(stage, stages, chunks, micro_batches)
    if name == "gpipe":
        return gpipe(micro_batches)
    if name == "1f1b":
        return one_f_one_b(stage, stages, micro_batches)
    raise ValueError(f"unknown schedule {name!r} (expected one of {', '.join(SCHEDULES)})")


def in_flight(steps: list[Step]) -> int:
    """The most (chunk, micro-batch) pairs whose forward has run and whose backward has
    not: micro-batches in flight, counted once per model chunk holding them."""
    live = peak = 0
    for step in steps:
        live += 1 if step.kind == "F" else -1
        peak = max(peak, live)
    return peak
