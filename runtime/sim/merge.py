"""Ranks that behave identically, simulated once: rank-level actors merged into parts.
(For the scheduled IR, from_ir.py refines the same partition over each class's
distinct communicators and peers without building an actor per rank first, which a
32,768-rank job could not afford; trace directories have an actor per rank anyway.)

A part is a set of ranks with one program whose communication nodes take the same
times and talk to the same parts (partition refinement, as from_ir.py does for rank
classes); each part's actors have equal timelines by induction over the events, so
one actor per part is exact. Two details make the merged actors match as the ranks
do:

- a message goes to its peer's part, matched there by (sender part, tag);
- a collective over members of several parts is matched by its communicator, so the
  parts' representatives must be members of one group: they are chosen along the
  groups (a part reached through a group is represented by its member there). If
  two groups want different representatives of one part, the ranks are not merged.
"""

from __future__ import annotations

from collections.abc import Sequence

from stagec.runtime.sim.program import Actor, Collective, PointToPoint


def _parts(actors: Sequence[Actor]) -> list[list[int]]:
    part = {a.rank: id(a.program.kind) for a in actors}  # one node stream, whatever its refs
    count = len(set(part.values()))
    while True:
        member_parts: dict[object, frozenset] = {}
        signatures: dict[tuple, list[int]] = {}
        for a in actors:
            facts = [part[a.rank]]
            for c in a.comm:
                if isinstance(c, Collective):
                    classes = member_parts.get(c.key)
                    if classes is None:
                        classes = member_parts[c.key] = frozenset(part[m] for m in c.members)
                    facts.append((c.nanos, classes, c.what))
                else:
                    facts.append((c.nanos, part[c.peer], c.tag))
            signatures.setdefault(tuple(facts), []).append(a.rank)
        if len(signatures) == count:
            return list(signatures.values())
        count = len(signatures)
        part = {r: i for i, rs in enumerate(signatures.values()) for r in rs}


def _representatives(actors: Sequence[Actor], parts: list[list[int]]) -> dict[int, int] | None:
    """part -> its representative rank, chosen along multi-part groups; None where two
    groups disagree."""
    part_of = {r: i for i, rs in enumerate(parts) for r in rs}
    by_rank = {a.rank: a for a in actors}
    rep: dict[int, int] = {}
    for start in range(len(parts)):
        if start in rep:
            continue
        rep[start] = min(parts[start])
        todo = [start]
        while todo:
            p = todo.pop()
            for c in by_rank[rep[p]].comm:
                if not isinstance(c, Collective):
                    continue
                for m in c.members:
                    q = part_of[m]
                    if q == p:
                        continue
                    if q not in rep:
                        rep[q] = m
                        todo.append(q)
                    elif not any(part_of[x] == q and x == rep[q] for x in c.members):
                        return None
    return rep


def merge_ranks(actors: Sequence[Actor]) -> list[Actor]:
    """One actor per part of identically behaving ranks (every actor stands for one
    rank, indexed by rank, its comm resolved with rank members and peers); the
    actors unchanged where representatives cannot be chosen consistently."""
    parts = _parts(actors)
    if len(parts) == len(actors):
        return list(actors)
    rep = _representatives(actors, parts)
    if rep is None:
        return list(actors)
    part_of = {r: i for i, rs in enumerate(parts) for r in rs}
    by_rank = {a.rank: a for a in actors}
    merged = []
    for p, ranks in enumerate(parts):
        source = by_rank[rep[p]]
        actor = Actor(p, source.program, sorted(ranks), representative=rep[p])
        for c in source.comm:
            if isinstance(c, Collective):
                members = frozenset(part_of[m] for m in c.members)
                actor.comm.append(Collective(c.key, members, c.nanos, c.group, c.what, c.channel))
            else:
                actor.comm.append(PointToPoint(part_of[c.peer], c.tag, c.nanos, c.peer_rank, c.channel))
        merged.append(actor)
    return merged
