"""Memory over simulated time: the memory analysis's timeline (passes/analysis/memory.py,
the same one `stagec stats` reports) placed at the simulated times of its ops.

The analysis gives the bytes in use at each position of a rank class's schedule (its
leaf ops in execution order, loops unrolled); the emitter numbers each node with the
position of the op it comes from (emit.py `node_position`). A position's time is the
start of its node, or, for an op that makes no node (a view, a release, a state
read), the start of the latest node before it - so the peak over the simulation is
the analysis's peak exactly, and the series shows when it happens.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass
class MemoryUsage:
    peak_bytes: int
    series: list[tuple[int, int]]  # (ns, bytes in use), at each change


def _series(actor, times, totals: np.ndarray, iterations: int) -> list[tuple[int, int]]:
    program = actor.program
    length = len(totals)
    if not length or program.positions != length:
        return []
    count = length * iterations
    first = np.full(count, -1, dtype=np.int64)
    position = np.asarray(program.position, dtype=np.int64)
    start = np.frombuffer(times.start, dtype=np.int64)
    ok = (position >= 0) & (position < count)
    order = np.argsort(-start[ok], kind="stable")  # the earliest start wins where positions repeat
    first[position[ok][order]] = start[ok][order]
    at = np.maximum.accumulate(np.maximum(first, 0))
    used = np.tile(totals, iterations)
    keep = np.concatenate(([True], (used[1:] != used[:-1]) | (at[1:] != at[:-1])))
    return list(zip(at[keep].tolist(), used[keep].tolist()))


def memory_of(module, bindings: Mapping[str, int], actors: Sequence, times: Sequence, iterations: int) -> list[MemoryUsage | None]:
    """Peak and series per actor; None for an actor the analysis cannot account."""
    from stagec.passes.analysis.accounting import account

    try:
        result = account(module, bindings)
    except Exception:  # noqa: BLE001 - AccountingError and sizes it cannot evaluate: no memory report
        return [None] * len(actors)
    class_of = {}
    for rc in result.rank_classes:
        for r in rc.ranks:
            class_of[r] = rc
    out: list[MemoryUsage | None] = []
    for actor, t in zip(actors, times):
        rc = class_of.get(actor.rank)
        if rc is None:
            out.append(None)
            continue
        totals = rc.memory.timeline.totals()
        out.append(MemoryUsage(rc.memory.peak_bytes, _series(actor, t, totals, iterations)))
    return out
