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

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass
class MemoryUsage:
    peak_bytes: int  # the live tensors' peak: `stagec stats`'s live peak
    reserved_bytes: int | None  # what a real run reserves: `stagec stats`'s reserved peak
    series: list[tuple[int, int]]  # (ns, live bytes), at each change


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


def _programs(module, bindings: Mapping[str, int], outer_stages: bool):
    """(evaluator, [(function, ranks)]) of the module's rank classes, as
    passes/analysis/accounting.py `account` finds them."""
    from stagec.passes.analysis.accounting import find_function, mesh_ops, module_bindings, world_ranks
    from stagec.passes.analysis.calls import ranks_at, stage_programs
    from stagec.passes.analysis.liveness import Evaluator

    ev = Evaluator(module_bindings(module, bindings))
    stages = stage_programs(module)
    if stages:
        mesh = next(iter(mesh_ops(module)), None)
        if outer_stages:
            first = min(stages, key=lambda p: p.coordinates["pp"])
            last = max(stages, key=lambda p: p.coordinates["pp"])
            stages = [first] if first is last else [first, last]
        return ev, [(p.function, ranks_at(mesh, p.coordinates, ev)) for p in stages]
    return ev, [(find_function(module), world_ranks(module, ev))]


def _class_timeline(fn, ranks, ev, hardware) -> tuple:
    from stagec.passes.analysis.calls import inline_calls
    from stagec.passes.analysis.memory import analyze_memory

    report = analyze_memory(inline_calls(fn), ev)
    reserved = None
    if hardware is not None:
        from stagec.passes.analysis.reserved import reserved_memory

        reserved = reserved_memory(report, hardware).peak_bytes
    return tuple(ranks), report.peak_bytes, reserved, report.timeline.totals()


def class_timelines(module, bindings: Mapping[str, int], hardware=None, *, outer_stages: bool = False) -> list[tuple]:
    """(ranks, live peak, reserved peak or None, live bytes per schedule position) of
    each rank class, as passes/analysis/accounting.py `account` and `stagec stats`
    find them (the memory part only); the reserved peak (passes/analysis/reserved.py)
    needs `hardware`.

    `outer_stages`: of a pipeline, only the first and the last stage, which bound the
    others: stg-pipeline gives every stage the same number of layers, an inner stage
    holds no embedding and no head, and under both schedules it keeps at most as many
    micro-batches in flight as the first stage (1F1B: pp - k at stage k), so its peak is
    at most the first stage's (tests/unit/sim/test_dse.py checks it). `stagec dse`
    wants each strategy's largest peak only."""
    ev, programs = _programs(module, bindings, outer_stages)
    return [_class_timeline(fn, ranks, ev, hardware) for fn, ranks in programs]


def safe_class_timelines(module, bindings, hardware=None, outer_stages: bool = False):
    """class_timelines, or None where the analysis cannot account the module (the
    report then says n/a; the simulation does not depend on it)."""
    try:
        return class_timelines(module, bindings, hardware, outer_stages=outer_stages)
    except Exception:  # noqa: BLE001 - AccountingError and sizes it cannot evaluate
        return None


_FORKED: dict = {}


def _forked_class(index: int):
    """One rank class's timeline in a forked worker (the module is the parent's)."""
    ev, programs, hardware = _FORKED["ev"], _FORKED["programs"], _FORKED["hardware"]
    fn, ranks = programs[index]
    try:
        return _class_timeline(fn, ranks, ev, hardware)
    except Exception:  # noqa: BLE001 - as safe_class_timelines: no memory report
        return None


class MemoryAnalysis:
    """The memory analysis of a module, started in forked worker processes where the
    platform forks - one rank class per task, as many workers as cores - so that it runs
    beside emission and simulation (it takes about as long on a large job), else run
    when asked for."""

    def __init__(self, module, bindings: Mapping[str, int], *, hardware=None, background: bool = True,
                 outer_stages: bool = False):
        self.module, self.bindings, self.hardware = module, dict(bindings), hardware
        self.outer_stages = outer_stages
        self.pool = self.pending = self._context = None
        self.failed = False  # the analysis cannot account the module
        if not background or not hasattr(os, "fork"):
            return
        try:
            ev, programs = _programs(module, self.bindings, outer_stages)
        except Exception:  # noqa: BLE001 - the analysis cannot account it: result() says so
            self.failed = True
            return
        from stagec.runtime.workers import quiet_pool

        _FORKED.update(ev=ev, programs=programs, hardware=hardware)
        try:
            self._context = quiet_pool(max(1, min(len(programs), os.cpu_count() or 1)))
            self.pool = self._context.__enter__()
            self.pending = [self.pool.apply_async(_forked_class, (i,)) for i in range(len(programs))]
        finally:
            _FORKED.clear()

    def result(self):
        if self.failed:
            return None
        if self.pending is None:
            return safe_class_timelines(self.module, self.bindings, self.hardware, self.outer_stages)
        try:
            results = [p.get() for p in self.pending]
        finally:
            self.abandon()
        return None if any(r is None for r in results) else results

    def abandon(self) -> None:
        if self._context is not None:
            context, self._context = self._context, None
            context.__exit__(None, None, None)


def memory_of(classes, actors: Sequence, times: Sequence, iterations: int) -> list[MemoryUsage | None]:
    """Peak and series per actor, from class_timelines' result; None for an actor the
    analysis could not account."""
    if classes is None:
        return [None] * len(actors)
    class_of = {r: (peak, reserved, totals) for ranks, peak, reserved, totals in classes for r in ranks}
    out: list[MemoryUsage | None] = []
    for actor, t in zip(actors, times):
        found = class_of.get(actor.rank)
        if found is None:
            out.append(None)
            continue
        peak, reserved, totals = found
        out.append(MemoryUsage(peak, reserved, _series(actor, t, totals, iterations)))
    return out
