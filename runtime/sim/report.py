"""What a simulation reports, per actor and for the job (docs/simulator.md "Report").

Per actor (one rank, or the ranks it stands for), over [0, finish]:
- compute: time its compute engine runs a node;
- communication: time a transfer of its runs - a collective from its last member's
  issue to its end, a send, a recv from its message's departure (time the engine is
  held waiting for the other members or for the sender counts as idle: it is the
  peers' lateness, a pipeline bubble, not the network's time);
- exposed communication: communication while the compute engine is idle (what the
  step waits for), and overlap ratio = 1 - exposed / communication;
- copy: the host-device copy engine's time, exposed copy the part while neither of
  the others runs;
- idle: none of the engines runs (a pipeline bubble, a wait for a peer's compute).
compute + exposed communication + exposed copy + idle = finish.

The iteration time is the latest finish over the ranks divided by the iterations
simulated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from stagec.runtime.sim.engine import ActorTimes
from stagec.runtime.sim.program import COLL, ENGINE, RECV, SEND, Actor


@dataclass(frozen=True)
class ActorReport:
    ranks: tuple[int, ...]
    finish_ns: int
    compute_ns: int
    communication_ns: int
    exposed_communication_ns: int
    copy_ns: int
    exposed_copy_ns: int
    idle_ns: int
    nodes: int
    peak_memory_bytes: int | None = None  # live tensors (`stagec stats`'s live peak)
    reserved_memory_bytes: int | None = None  # as a real run reserves it (`stagec stats`'s reserved peak)
    # transfer time summed per channel (mesh axes of a collective, "pp" for pipeline
    # messages; a trace's groups) and per collective kind: where communication goes,
    # overlapping transfers each counted whole
    transfer_by_channel: dict[str, int] = field(default_factory=dict)
    transfer_by_kind: dict[str, int] = field(default_factory=dict)

    @property
    def overlap_ratio(self) -> float:
        if not self.communication_ns:
            return 0.0
        return 1.0 - self.exposed_communication_ns / self.communication_ns

    def to_json(self) -> dict:
        return {
            "ranks": list(self.ranks), "finish_ns": self.finish_ns, "compute_ns": self.compute_ns,
            "communication_ns": self.communication_ns, "exposed_communication_ns": self.exposed_communication_ns,
            "overlap_ratio": round(self.overlap_ratio, 6), "copy_ns": self.copy_ns,
            "exposed_copy_ns": self.exposed_copy_ns, "idle_ns": self.idle_ns, "nodes": self.nodes,
            "peak_memory_bytes": self.peak_memory_bytes, "reserved_memory_bytes": self.reserved_memory_bytes,
            "transfer_by_channel_ns": self.transfer_by_channel, "transfer_by_kind_ns": self.transfer_by_kind,
        }


@dataclass
class SimReport:
    world: int
    iterations: int
    actors: list[ActorReport]
    network: str = ""
    source: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def finish_ns(self) -> int:
        return max((a.finish_ns for a in self.actors), default=0)

    @property
    def iteration_ns(self) -> float:
        return self.finish_ns / self.iterations

    @property
    def peak_memory_bytes(self) -> int | None:
        peaks = [a.peak_memory_bytes for a in self.actors if a.peak_memory_bytes is not None]
        return max(peaks) if peaks else None

    @property
    def reserved_memory_bytes(self) -> int | None:
        peaks = [a.reserved_memory_bytes for a in self.actors if a.reserved_memory_bytes is not None]
        return max(peaks) if peaks else None

    def to_json(self) -> dict:
        return {
            "source": self.source, "world": self.world, "iterations": self.iterations,
            "iteration_ns": self.iteration_ns, "finish_ns": self.finish_ns,
            "peak_memory_bytes": self.peak_memory_bytes, "reserved_memory_bytes": self.reserved_memory_bytes,
            "network": self.network,
            "ranks": [a.to_json() for a in self.actors], **self.extra,
        }


def engine_coverage(actor: Actor, times: ActorTimes) -> np.ndarray:
    """Time (ns) in each of the 8 states of the three engines (bit e: engine e busy),
    from 0 to the actor's finish."""
    program = actor.program
    start = np.frombuffer(times.start, dtype=np.int64)
    end = np.frombuffer(times.end, dtype=np.int64)
    engine = np.asarray(ENGINE, dtype=np.int64)[np.asarray(program.kind, dtype=np.int64)]
    kind = np.asarray(program.kind, dtype=np.int64)
    transfer = np.zeros(len(kind), dtype=np.int64)
    if actor.comm:
        ref = np.asarray(program.comm, dtype=np.int64)
        per_ref = np.asarray([r.nanos for r in actor.comm], dtype=np.int64)
        transfer = np.where(ref >= 0, per_ref[np.maximum(ref, 0)], 0)
    waits = (kind == COLL) | (kind == RECV)
    start = np.where(waits, np.maximum(start, end - transfer), start)
    ran = end >= 0
    start, end, engine = start[ran], end[ran], engine[ran]
    t = np.concatenate((start, end, [0, times.finish]))
    delta = np.concatenate((np.ones_like(start), -np.ones_like(end), [0, 0]))
    which = np.concatenate((engine, engine, [0, 0]))
    order = np.lexsort((delta, t))  # at one instant, ends before starts
    t, delta, which = t[order], delta[order], which[order]
    state = np.zeros(len(t), dtype=np.int64)
    for e in range(3):
        active = np.cumsum(np.where(which == e, delta, 0)) > 0
        state |= active.astype(np.int64) << e
    durations = np.diff(t)
    return np.bincount(state[:-1], weights=durations, minlength=8).astype(np.int64)


def _transfers(actor: Actor, times: ActorTimes) -> tuple[dict[str, int], dict[str, int]]:
    program = actor.program
    by_channel: dict[str, int] = {}
    by_kind: dict[str, int] = {}
    start, end = times.start, times.end
    for n, ref in enumerate(program.comm):
        if ref < 0 or end[n] < 0:
            continue
        r = actor.comm[ref]
        kind = program.kind[n]
        time = end[n] - max(start[n], end[n] - r.nanos) if kind in (COLL, RECV) else end[n] - start[n]
        what = r.what[0] if kind == COLL else ("send" if kind == SEND else "recv")
        by_channel[r.channel] = by_channel.get(r.channel, 0) + time
        by_kind[what] = by_kind.get(what, 0) + time
    return by_channel, by_kind


def actor_report(actor: Actor, times: ActorTimes, peaks: tuple[int, int | None] | None = None) -> ActorReport:
    c = engine_coverage(actor, times)
    by_channel, by_kind = _transfers(actor, times)
    compute = int(c[1] + c[3] + c[5] + c[7])
    communication = int(c[2] + c[3] + c[6] + c[7])
    exposed = int(c[2] + c[6])
    copy = int(c[4] + c[5] + c[6] + c[7])
    exposed_copy = int(c[4])
    return ActorReport(
        tuple(actor.ranks), times.finish, compute, communication, exposed, copy, exposed_copy, int(c[0]),
        len(actor.program), *(peaks or (None, None)), by_channel, by_kind,
    )


def build_report(actors: Sequence[Actor], times: Sequence[ActorTimes], *, world: int, iterations: int,
                 peaks: Sequence[tuple[int, int | None] | None] | None = None, network: str = "", source: str = "") -> SimReport:
    peaks = peaks or [None] * len(actors)
    return SimReport(world, iterations, [actor_report(a, t, p) for a, t, p in zip(actors, times, peaks)],
                     network, source)
