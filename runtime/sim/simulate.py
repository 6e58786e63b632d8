"""Simulate a job end to end: a scheduled module or a trace directory in, a report (and
optionally a Perfetto timeline) out. The tools and `stagec dse` call these."""

from __future__ import annotations

from collections.abc import Mapping

from stagec.runtime.sim.engine import simulate
from stagec.runtime.sim.gc_paused import gc_paused
from stagec.runtime.sim.report import SimReport, build_report


def _progress(progress, what: str):
    return progress.task(what) if progress is not None else None


def simulate_module(module, network, bindings: Mapping[str, int], *, cost=None, options=None,
                    timeline: str | None = None, progress=None, memory: bool = True, fork: bool = True,
                    hardware=None, timeline_ranks=None, outer_stages: bool = False) -> SimReport:
    """Simulate `module` (scheduled IR, sizes bound by `bindings`) on `network`; the
    memory analysis runs beside it in a forked process unless `fork` is off; with a
    `hardware` description the reserved peak is reported too; `outer_stages` analyses
    the memory of a pipeline's first and last stage only (memory.py: they bound the
    others; the inner stages' memory is then not reported)."""
    from stagec.runtime.chakra.emit import EmitOptions, build_programs
    from stagec.runtime.sim.from_ir import build_actors
    from stagec.runtime.sim.memory import MemoryAnalysis, memory_of

    options = options or EmitOptions()
    # the memory analysis's workers fork inside, and inherit the paused collector
    with gc_paused():
        analysis = MemoryAnalysis(module, bindings, hardware=hardware, background=fork,
                                  outer_stages=outer_stages) if memory else None
        try:
            programs, space = build_programs(module, bindings, cost=cost, options=options)
            actors = build_actors(programs, space, network)
            times = simulate(actors, progress=_progress(progress, "simulating"))
        except BaseException:
            if analysis is not None:
                analysis.abandon()
            raise
        usage = memory_of(analysis.result(), actors, times, options.iterations) if memory else None
    peaks = [(u.peak_bytes, u.reserved_bytes) if u is not None else None for u in usage] if usage else None
    report = build_report(actors, times, world=max(space.world, 1), iterations=options.iterations, peaks=peaks,
                          network=network.describe(), source="scheduled IR")
    if timeline:
        from stagec.runtime.sim.timeline import write_timeline

        series = [u.series if u is not None else None for u in usage] if usage else None
        write_timeline(timeline, actors, times, series, {"source": "stagec simulate", "network": network.describe()},
                       timeline_ranks_of(timeline_ranks, space.world))
    return report


def timeline_ranks_of(wanted, world: int):
    """--timeline-ranks: None (one process per set of identical ranks), "all", or ranks
    (each one of the job's: a rank it does not have would leave the timeline empty)."""
    if wanted == "all":
        return list(range(max(world, 1)))
    beyond = sorted(r for r in wanted or () if r >= max(world, 1))
    if beyond:
        from stagec.runtime.sim.engine import SimulationError

        last = max(world, 1) - 1
        raise SimulationError(f"--timeline-ranks: the job's ranks are {f'0-{last}' if last else '0'}; it has no rank "
                              f"{', '.join(map(str, beyond[:4]))}{', ...' if len(beyond) > 4 else ''}")
    return wanted


def simulate_trace_dir(directory: str, network, *, prefix: str | None = None, timeline: str | None = None,
                       progress=None, timeline_ranks=None) -> SimReport:
    """Simulate the Chakra traces in `directory` on `network`."""
    from stagec.runtime.sim.from_chakra import read_trace_dir

    with gc_paused():
        actors, world, _ = read_trace_dir(directory, network, prefix=prefix,
                                          progress=_progress(progress, "reading traces"))
        times = simulate(actors, progress=_progress(progress, "simulating"))
    report = build_report(actors, times, world=world, iterations=1, network=network.describe(), source=directory)
    if timeline:
        from stagec.runtime.sim.timeline import write_timeline

        write_timeline(timeline, actors, times, None, {"source": directory, "network": network.describe()},
                       timeline_ranks_of(timeline_ranks, world))
    return report
