"""A simulation as a timeline in the Chrome trace event format, which Perfetto
(ui.perfetto.dev, its trace processor) and chrome://tracing open.

One process per simulated actor (pid = its rank; the name lists the ranks it stands
for), or per rank asked for (`stagec simulate --timeline-ranks`), one thread (track) per engine - compute, communication, copy - and one complete
("X") slice per node: its name is the node's label, its args the node's kind, bytes,
FLOPs, and a collective's group and member count or a message's peer and tag. Memory
in use is a counter track per actor when the simulation has a memory timeline. Times
are microseconds with nanosecond decimals, as the format's `ts`/`dur` are.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from stagec.runtime.sim.engine import ActorTimes
from stagec.runtime.sim.program import COLL, COMP, COPY, ENGINE, ENGINES, KIND_NAMES, Actor, Collective



def _ranks_name(ranks: Sequence[int]) -> str:
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    return f"rank {ranks[0]} (for {len(ranks)} ranks: {', '.join(map(str, ranks[:4]))}{', ...' if len(ranks) > 4 else ''})"


def _us(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


def timeline_events(actor: Actor, times: ActorTimes, memory: Sequence[tuple[int, int]] | None = None,
                    rank: int | None = None):
    """The JSON text of each event of one actor: as the ranks it stands for, or as one of
    them (`rank`: its own process; the group and peer args are the representative's, so
    only its slices carry them)."""
    pid = actor.rank if rank is None else rank
    name = _ranks_name(actor.ranks) if rank is None else f"rank {rank}"
    yield json.dumps({"ph": "M", "pid": pid, "name": "process_name", "args": {"name": name}})
    yield json.dumps({"ph": "M", "pid": pid, "name": "process_sort_index", "args": {"sort_index": pid}})
    for engine, name in enumerate(ENGINES):
        yield json.dumps({"ph": "M", "pid": pid, "tid": engine + 1, "name": "thread_name", "args": {"name": name}})
    program = actor.program
    labels = [json.dumps(label) for label in program.labels]
    start, end = times.start, times.end
    resolved = actor.comm
    for n, kind in enumerate(program.kind):
        s = start[n]
        if s < 0:
            continue
        if kind == COMP:
            args = f'{{"kind":"compute","flops":{program.flops[n]},"bytes":{program.size[n]}}}'
        elif kind == COPY:
            args = f'{{"kind":"copy","bytes":{program.size[n]}}}'
        elif rank is not None and rank != actor.rank:
            args = f'{{"kind":"{KIND_NAMES[kind]}","bytes":{program.size[n]}}}'
        else:
            r = resolved[program.comm[n]]
            if kind == COLL and isinstance(r, Collective):
                args = (f'{{"kind":"{r.what[0]}","bytes":{program.size[n]},"group":"{r.group}",'
                        f'"members":{len(r.members) if len(actor.ranks) == 1 else -1}}}')
            else:
                args = f'{{"kind":"{KIND_NAMES[kind]}","bytes":{program.size[n]},"peer":{r.peer_rank},"tag":{r.tag}}}'
        yield (f'{{"ph":"X","pid":{pid},"tid":{ENGINE[kind] + 1},"name":{labels[program.label[n]]},'
               f'"ts":{_us(s)},"dur":{_us(end[n] - s)},"args":{args}}}')
    for t, used in memory or ():
        yield f'{{"ph":"C","pid":{pid},"name":"memory","ts":{_us(t)},"args":{{"bytes":{used}}}}}'


def write_timeline(path: str, actors: Sequence[Actor], times: Sequence[ActorTimes],
                   memory: Sequence[Sequence[tuple[int, int]] | None] | None = None,
                   metadata: dict | None = None, ranks: Sequence[int] | None = None) -> None:
    """The timeline written to a temporary name and renamed: one process per actor (the
    ranks that behave identically as one), or, with `ranks`, one per listed rank."""
    temporary = f"{path}.tmp{os.getpid()}"
    memory = memory or [None] * len(actors)
    try:
        with open(temporary, "w") as out:
            out.write('{"displayTimeUnit":"ns","otherData":')
            out.write(json.dumps(metadata or {}))
            out.write(',"traceEvents":[\n')
            first = True
            wanted = None if ranks is None else set(ranks)
            for actor, t, mem in zip(actors, times, memory):
                shown = [None] if wanted is None else [r for r in actor.ranks if r in wanted]
                for rank in shown:
                    for event in timeline_events(actor, t, mem, rank):
                        if not first:
                            out.write(",\n")
                        out.write(event)
                        first = False
            out.write("\n]}\n")
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
