"""The event loop: actors' programs run on their engines in simulated nanoseconds.

Rules (docs/simulator.md "Semantics"), ASTRA-sim's where it has one
(../shared/ASTRA-SIM.md, its Workload.cc and HardwareResource.cc):

- A node is ready when every node it depends on has finished. Each actor has three
  engines - compute, communication, copy - each running one node at a time; when an
  engine is free it takes the ready node of lowest id (ASTRA-sim issues its
  dependency-free nodes in id order, each if its resource is free). Compute and
  communication of one rank overlap; two communication nodes of one rank do not.
- A collective is matched across its members by its communicator and its order of
  issue there; it starts when the last member has issued it and ends `nanos` later
  on every member (each member's engine is held from its own issue).
- A send holds its engine for the message's time and the message arrives when the
  send ends; a recv ends when its message has arrived, or when it is posted if the
  message came first. Messages match by (sender, receiver, tag), in order.
- Events at the same time run in the order they were made.

A program that cannot finish (a recv nobody sends, members that issue collectives in
different orders) ends in `Deadlock` naming what each stuck actor waits for.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from heapq import heappop, heappush

from stagec.runtime.sim.program import COLL, COMP, COPY, ENGINE, KIND_NAMES, RECV, SEND, Actor, Collective, PointToPoint


class SimulationError(ValueError):
    """A program the simulator cannot run; the message says which node and why."""


class Deadlock(SimulationError):
    pass


@dataclass
class ActorTimes:
    """When each node of one actor started and ended (ns); -1 for a node never run."""

    start: array
    end: array
    finish: int


def simulate(actors: Sequence[Actor], *, progress: Callable[[int, int], None] | None = None) -> list[ActorTimes]:
    """Run every actor's program to its end; each node's start and end time."""
    n_actors = len(actors)
    programs = [a.program for a in actors]
    # per node: its successors and its engine, once per program (the actors of a rank
    # class share one); the loop below runs once per node of every actor
    tables: dict[int, tuple[list[list[int]], list[int]]] = {}
    for p in programs:
        if id(p) not in tables:
            tables[id(p)] = (p.successors(), [ENGINE[k] for k in p.kind])
    succs = [tables[id(p)][0] for p in programs]
    engine_of = [tables[id(p)][1] for p in programs]
    starts = [array("q", [-1]) * len(p) for p in programs]
    ends = [array("q", [-1]) * len(p) for p in programs]
    remaining = [[len(d) for d in p.deps] for p in programs]
    ready = [([], [], []) for _ in range(n_actors)]
    busy = [[False, False, False] for _ in range(n_actors)]
    ordinals: list[dict] = [{} for _ in range(n_actors)]
    pending: dict[tuple, list] = {}  # (key, ordinal) -> [arrived, latest issue, [(actor, node)]]
    arrived: dict[tuple, deque] = {}  # (src actor, dst actor, tag) -> arrival times
    waiting: dict[tuple, deque] = {}  # (src actor, dst actor, tag) -> (actor, node) of posted recvs
    events: list = []
    seq = 0
    total = sum(len(p) for p in programs)
    done = 0
    step = max(1, total // 200)

    def issue(a: int, t: int) -> None:
        nonlocal seq
        program = programs[a]
        kinds = program.kind
        engines = busy[a]
        for engine, queue in enumerate(ready[a]):
            if engines[engine] or not queue:
                continue
            node = heappop(queue)
            engines[engine] = True
            starts[a][node] = t
            kind = kinds[node]
            if kind == COMP or kind == COPY:
                seq += 1
                heappush(events, (t + program.nanos[node], seq, a, node))
            elif kind == COLL:
                c: Collective = actors[a].comm[program.comm[node]]
                counter = ordinals[a]
                ordinal = counter.get(c.key, 0)
                counter[c.key] = ordinal + 1
                slot = pending.get((c.key, ordinal))
                if slot is None:
                    slot = pending[(c.key, ordinal)] = [0, t, [], c.what]
                elif slot[3] != c.what:
                    raise SimulationError(_mismatch(actors, slot, a, node, c, ordinal))
                slot[0] += 1
                slot[1] = max(slot[1], t)
                slot[2].append((a, node))
                if slot[0] == len(c.members):
                    del pending[(c.key, ordinal)]
                    finish = slot[1] + c.nanos
                    for member, member_node in slot[2]:
                        seq += 1
                        heappush(events, (finish, seq, member, member_node))
            elif kind == SEND:
                m: PointToPoint = actors[a].comm[program.comm[node]]
                seq += 1
                heappush(events, (t + m.nanos, seq, a, node))
            else:  # RECV
                m = actors[a].comm[program.comm[node]]
                key = (m.peer, a, m.tag)
                queue_in = arrived.get(key)
                if queue_in:
                    queue_in.popleft()
                    seq += 1
                    heappush(events, (t, seq, a, node))
                else:
                    waiting.setdefault(key, deque()).append((a, node))

    for a in range(n_actors):
        queues = ready[a]
        engine = engine_of[a]
        for node, count in enumerate(remaining[a]):
            if count == 0:
                heappush(queues[engine[node]], node)
        issue(a, 0)

    while events:
        t, _, a, node = heappop(events)
        engine = engine_of[a]
        ends[a][node] = t
        busy[a][engine[node]] = False
        if engine[node] == 1 and programs[a].kind[node] == SEND:
            m = actors[a].comm[programs[a].comm[node]]
            key = (a, m.peer, m.tag)
            posted = waiting.get(key)
            if posted:
                receiver, recv_node = posted.popleft()
                seq += 1
                heappush(events, (t, seq, receiver, recv_node))
            else:
                arrived.setdefault(key, deque()).append(t)
        rem = remaining[a]
        queues = ready[a]
        for s in succs[a][node]:
            rem[s] -= 1
            if rem[s] == 0:
                heappush(queues[engine[s]], s)
        issue(a, t)
        done += 1
        if progress is not None and done % step == 0:
            progress(done, total)

    if progress is not None:
        progress(total, total)
    if done < total:
        raise Deadlock(_stuck(actors, starts, ends, remaining))
    return [ActorTimes(starts[a], ends[a], max(ends[a], default=0)) for a in range(n_actors)]


def _mismatch(actors: Sequence[Actor], slot: list, a: int, node: int, c: Collective, ordinal: int) -> str:
    first_actor, first_node = slot[2][0]
    first = actors[first_actor]
    label = actors[a].program.labels[actors[a].program.label[node]]
    first_label = first.program.labels[first.program.label[first_node]]
    return (f"collective {ordinal + 1} on group {c.group} differs between its members: rank {first.rank} issues "
            f"'{first_label}' ({slot[3][0]}, {slot[3][1]} bytes), rank {actors[a].rank} '{label}' "
            f"({c.what[0]}, {c.what[1]} bytes); every member must issue a group's collectives in one order")


def _stuck(actors: Sequence[Actor], starts, ends, remaining) -> str:
    lines = []
    for a, actor in enumerate(actors):
        program = actor.program
        running = [n for n in range(len(program)) if starts[a][n] >= 0 and ends[a][n] < 0]
        if not running and all(e >= 0 for e in ends[a]):
            continue
        who = f"rank {actor.rank}" + (f" (and {len(actor.ranks) - 1} like it)" if len(actor.ranks) > 1 else "")
        if running:
            for n in running[:2]:
                lines.append(f"{who} waits in {KIND_NAMES[program.kind[n]]} node {n} "
                             f"'{program.labels[program.label[n]]}'{_waits_for(actor, n, actors)}")
        else:
            first = next(n for n in range(len(program)) if ends[a][n] < 0)
            lines.append(f"{who} never runs node {first} '{program.labels[program.label[first]]}'")
        if len(lines) >= 8:
            break
    return "the program cannot finish (deadlock):\n  " + "\n  ".join(lines)


def _waits_for(actor: Actor, node: int, actors: Sequence[Actor]) -> str:
    resolved = actor.comm[actor.program.comm[node]] if actor.program.comm[node] >= 0 else None
    if isinstance(resolved, Collective):
        return f" for the other members of group {resolved.group}"
    if isinstance(resolved, PointToPoint):
        kind = actor.program.kind[node]
        return f" for a message {'from' if kind == RECV else 'to'} rank {resolved.peer_rank} (tag {resolved.tag})"
    return ""
