"""Actors from the scheduled IR: the Chakra emitter's node streams (one per rank class,
runtime/chakra/emit.py `build_programs`), taken in memory - no trace files - with the
cost model's times unrounded and every communicator and peer resolved on the network.

**Identical ranks run once, where that is exact.** Ranks of one class run one program;
they behave identically if every communication node takes the same time on each of
them and talks to the same classes. So the ranks are partitioned by that signature -
(class, per communication node: its time and the classes of its group's members or of
its peer) - and refined until stable, as partition refinement does: ranks left in one
part then have equal timelines by induction over the events (each collective starts at
the latest issue among its members' parts, each message arrives at its sender part's
time). One actor simulates each part. A network whose dimensions make a class's groups
unequal splits that class; in the worst case every rank is its own actor.
"""

from __future__ import annotations

from collections.abc import Sequence

from stagec.runtime.chakra.emit import COPY_CATEGORY
from stagec.runtime.chakra.ranks import RankSpace
from stagec.runtime.chakra.schema import NodeType
from stagec.runtime.sim.program import COLL, COMP, COPY, RECV, SEND, Actor, Collective, PointToPoint, SimProgram

_KIND = {
    NodeType.COMP_NODE: COMP,
    NodeType.COMM_COLL_NODE: COLL,
    NodeType.COMM_SEND_NODE: SEND,
    NodeType.COMM_RECV_NODE: RECV,
    NodeType.MEM_LOAD_NODE: COPY,
    NodeType.MEM_STORE_NODE: COPY,
}


def sim_program(program, *, trace_times: bool = False, roofline=None) -> SimProgram:
    """An emitter Program (one rank class) as a SimProgram; refs are
    ("coll", kind, size, patch, nanos) and ("send"|"recv", patch, size, tag).

    Compute takes the cost model's time unrounded, or with `trace_times` the whole
    microseconds its trace would hold (so a trace directory and the IR it came from
    simulate to the same nanosecond), or, with an enabled ASTRA-sim roofline, that
    roofline over the node's FLOPs and bytes, as ASTRA-sim times the trace's node.

    Built column by column from the emitter's per-static facts (a program holds 10^5
    nodes of a few hundred statics)."""
    statics = program.statics
    node_static = program.node_static
    # a COMP node of stg-offload's copy stream runs on the copy engine (emit.py `copy`)
    kinds = [COPY if st.type == NodeType.COMP_NODE and st.category == COPY_CATEGORY else _KIND[NodeType(st.type)]
             for st in statics]
    use_roofline = roofline is not None and roofline.enabled
    times = [roofline.compute_ns(st.num_ops, st.size) if use_roofline and k == COMP
             else st.duration * 1000 if trace_times else st.nanos for st, k in zip(statics, kinds)]
    sizes = [st.size for st in statics]
    flops = [st.num_ops for st in statics]
    out = SimProgram(program.name)
    out.kind = [kinds[s] for s in node_static]
    out.nanos = [times[s] for s in node_static]
    out.size = [sizes[s] for s in node_static]
    out.flops = [flops[s] for s in node_static]
    out.deps = [data + ctrl if ctrl else data for data, ctrl in zip(program.node_data, program.node_ctrl)]
    positions = getattr(program, "node_position", None)
    out.position = list(positions) if positions is not None and len(positions) == len(node_static) \
        else [-1] * len(node_static)
    out.positions = getattr(program, "positions", 0)

    # a label per distinct (static, context), numbered in order of first use
    labels: dict[tuple[int, int], int] = {}
    number = labels.setdefault
    out.label = [number(key, len(labels)) for key in zip(node_static, program.node_ctx)]
    names = [st.label for st in statics]
    suffixes = ["@" + c if c else "" for c in program.contexts]
    out.labels = [names[st] + suffixes[ctx] for st, ctx in labels]

    refs: dict[tuple, int] = {}
    comm = [-1] * len(node_static)
    tags = program.node_tag
    communicating = [k != COMP and k != COPY for k in kinds]
    for n, s in enumerate(node_static):
        if not communicating[s]:
            continue
        st = statics[s]
        if kinds[s] == COLL:
            key = ("coll", st.category, st.size, st.patch, times[s])
        else:
            key = (st.patch[0], st.patch, st.size, tags.get(n, 0))
        ref = refs.get(key)
        if ref is None:
            ref = refs[key] = len(out.refs)
            out.refs.append(key)
        comm[n] = ref
    out.comm = comm
    return out


class _Resolver:
    """Communicators and peers of ranks on one network, with their times, cached."""

    def __init__(self, space: RankSpace, network):
        self.space = space
        self.network = network
        self._coll: dict[tuple, int] = {}
        self._p2p: dict[tuple, int] = {}

    def collective(self, rank: int, ref: tuple) -> tuple[int, list[int], int]:
        """(group id, members, ns) of collective `ref` on `rank`."""
        _, kind, size, patch, nanos = ref
        _, axes, among = patch
        gid = self.space.group_id(rank, axes, among)
        key = (kind, size, gid)
        time = self._coll.get(key)
        members = self.space.members(gid)
        if time is None:
            # Broadcast: ASTRA-sim takes a broadcast node's duration as given.
            time = nanos if kind == "broadcast" else self.network.collective_ns(kind, size, members)
            self._coll[key] = time
        return gid, members, time

    def point_to_point(self, rank: int, ref: tuple) -> tuple[int, int]:
        """(peer rank, ns of the message) of send/recv `ref` on `rank`."""
        role, (_, axis, coordinate), size, _ = ref
        peer = self.space.peer(rank, axis, coordinate)
        src, dst = (rank, peer) if role == "send" else (peer, rank)
        key = (src, dst, size)
        time = self._p2p.get(key)
        if time is None:
            time = self._p2p[key] = self.network.p2p_ns(src, dst, size)
        return peer, time


def _resolution_keys(program: SimProgram) -> list[tuple]:
    """The refs that differ in what they resolve to (a p2p ref's tag does not)."""
    seen = {}
    for ref in program.refs:
        key = ref if ref[0] == "coll" else ref[:3]
        seen.setdefault(key, None)
    return list(seen)


def rank_parts(programs: Sequence[SimProgram], ranks_of: Sequence[Sequence[int]], resolver: _Resolver) -> list[list[int]]:
    """The ranks partitioned into parts of identical behaviour (module docstring)."""
    program_of = {r: i for i, ranks in enumerate(ranks_of) for r in ranks}
    part = dict(program_of)
    keys = [_resolution_keys(p) for p in programs]
    ordered = sorted(program_of)
    count = len(ranks_of)
    while True:
        group_parts: dict[int, frozenset[int]] = {}
        signatures: dict[tuple, list[int]] = {}
        for r in ordered:
            facts = [part[r]]
            for key in keys[program_of[r]]:
                if key[0] == "coll":
                    gid, members, time = resolver.collective(r, key)
                    classes = group_parts.get(gid)
                    if classes is None:
                        classes = group_parts[gid] = frozenset(part[m] for m in members)
                    facts.append((time, classes))
                else:
                    peer, time = resolver.point_to_point(r, key + (0,))
                    facts.append((time, part[peer]))
            signatures.setdefault(tuple(facts), []).append(r)
        if len(signatures) == count:
            return list(signatures.values())
        count = len(signatures)
        part = {r: i for i, rs in enumerate(signatures.values()) for r in rs}


def _channel(axes) -> str:
    """The strategy axes a communicator spans, as the user names them: stg-shard's
    tp_kv x tp_q split of a GQA model's tp is tp."""
    names: list[str] = []
    for a in axes:
        name = "tp" if a.startswith("tp_") else a
        if name not in names:
            names.append(name)
    return ",".join(names)


def build_actors(programs: Sequence, space: RankSpace, network, *, merge: bool = True,
                 trace_times: bool = False) -> list[Actor]:
    """One actor per part of identically behaving ranks of the emitter's `programs`
    (every rank its own actor without `merge`)."""
    roofline = getattr(network, "roofline", None)
    sims = [sim_program(p, trace_times=trace_times, roofline=roofline) for p in programs]
    ranks_of = [list(p.ranks) for p in programs]
    resolver = _Resolver(space, network)
    parts = rank_parts(sims, ranks_of, resolver) if merge else [[r] for rs in ranks_of for r in rs]
    parts.sort(key=min)
    part_of = {r: i for i, rs in enumerate(parts) for r in rs}
    program_of = {r: i for i, ranks in enumerate(ranks_of) for r in ranks}
    actors = []
    for index, ranks in enumerate(parts):
        rep = ranks[0]
        program = sims[program_of[rep]]
        actor = Actor(index, program, sorted(ranks))
        for ref in program.refs:
            if ref[0] == "coll":
                gid, members, time = resolver.collective(rep, ref)
                classes = frozenset(part_of[m] for m in members)
                _, axes, among = ref[3]
                actor.comm.append(Collective((frozenset(axes), among, classes), classes, time, str(gid),
                                             (ref[1], ref[2]), _channel(a for a in space.axes if a in axes)))
            else:
                peer, time = resolver.point_to_point(rep, ref)
                actor.comm.append(PointToPoint(part_of[peer], ref[3], time, peer, _channel([ref[1][1]])))
        actors.append(actor)
    return actors
