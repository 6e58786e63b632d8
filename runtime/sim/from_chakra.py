"""Actors from a Chakra trace directory - stagec's or another producer's - read as
ASTRA-sim reads it (../shared/CHAKRA.md, ../shared/ASTRA-SIM.md):

- `<prefix>.<rank>.et` per rank 0..N-1 and an optional `comm_group.json`; a
  collective's `pg_name` names a group there (none, or a name not there: every rank);
- a COMP node takes `duration_micros` x 1000 ns (0: 1 ns), or, when the system
  configuration enables the roofline, num_ops and tensor_size on it (a node with
  tensor_size 0 is then skipped, as ASTRA-sim skips it);
- COMM_COLL nodes take `comm_type` and `comm_size` (BROADCAST its duration, as
  ASTRA-sim replays it); send/recv `comm_src`, `comm_dst`, `comm_tag`, `comm_size`;
- MEM_LOAD/MEM_STORE nodes run on the copy engine for their duration; METADATA and
  INVALID nodes take no time.

Ranks whose files decode to the same program (the same nodes, times and sizes, in
the same order) share one SimProgram, and ranks that behave identically are merged into
one actor (merge.py). A directory `stagec trace` wrote has `<prefix>.ranks.json`: its
rank classes, each class's patch points (the groups and peers that differ between the
class's files) and every file's size and BLAKE2b digest. When every file is as
recorded there, one file per class is decoded and the others' groups and peers are
taken from it; otherwise (another producer's traces, a file changed since) every file
is decoded. A file that is not a well-formed trace is a `TraceReadError` naming the
file and the node.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable

from stagec.runtime.chakra.check import TraceDirError, find_trace_files, load_comm_groups
from stagec.runtime.chakra.schema import CommType, NodeType
from stagec.runtime.chakra.wire import WireError, decode_node, read_attrs, read_node_head, record_bounds
from stagec.runtime.sim.merge import merge_ranks
from stagec.runtime.sim.program import COLL, COMP, COPY, RECV, SEND, Actor, Collective, PointToPoint, SimProgram

_COLLECTIVE = {
    CommType.ALL_REDUCE: "all_reduce",
    CommType.ALL_GATHER: "all_gather",
    CommType.REDUCE_SCATTER: "reduce_scatter",
    CommType.ALL_TO_ALL: "all_to_all",
    CommType.BROADCAST: "broadcast",
}
_KIND = {
    NodeType.COMP_NODE: COMP, NodeType.COMM_COLL_NODE: COLL, NodeType.COMM_SEND_NODE: SEND,
    NodeType.COMM_RECV_NODE: RECV, NodeType.MEM_LOAD_NODE: COPY, NodeType.MEM_STORE_NODE: COPY,
    NodeType.METADATA_NODE: COMP, NodeType.INVALID_NODE: COMP,
}
_INT_ATTRS = ("comm_type", "comm_size", "comm_src", "comm_dst", "comm_tag", "num_ops", "tensor_size")


class TraceReadError(ValueError):
    """A trace directory or file the simulator cannot read; the message names it."""


def _attr_facts(buf: bytes, at: int, end: int) -> dict:
    attrs: list = []
    read_attrs(buf, at, end, attrs)
    return _facts(attrs)


def _facts(attrs) -> dict:
    """The attributes the simulator reads, first of each name (as ASTRA-sim reads them)."""
    facts: dict = {}
    for a in attrs:
        if a.name in facts:
            continue  # ASTRA-sim reads the first attribute of a name
        if a.name in _INT_ATTRS and isinstance(a.value, (int, bool)):
            facts[a.name] = int(a.value)
        elif a.name == "pg_name":
            facts[a.name] = str(a.value)
    return facts


def read_rank(path: str, rank: int, roofline=None) -> SimProgram:
    """One rank's trace file as a SimProgram; refs are ("coll", kind, size, pg_name,
    ns) and ("send"|"recv", peer, size, tag).

    The loop is written for speed (a trace directory can hold 10^7 nodes): what a
    node's type, attribute bytes and duration give is worked out once per distinct
    combination, which a trace repeats for every layer and micro-batch."""
    name = os.path.basename(path)
    try:
        with open(path, "rb") as stream:
            buf = stream.read()
    except OSError as error:
        raise TraceReadError(f"{path}: cannot read: {error.strerror or error}") from None
    program = SimProgram(name)
    labels: dict[bytes, int] = {}
    refs: dict[tuple, int] = {}
    decided: dict[tuple, tuple] = {}
    index_of: dict[int, int] = {}
    ids: list[int] = []
    raw_deps: list = []
    kinds, nanos_of, sizes, flops_of, comms, label_of = ([] for _ in range(6))
    read_head = read_node_head
    first = True
    try:
        for offset, start, end in record_bounds(buf):
            if first:
                first = False
                continue
            head = read_head(buf, start, end)
            if head is not None:
                nid, raw_name, ntype, data, ctrl, _, duration, attrs_at = head
                key = (ntype, duration, buf[attrs_at:end])
                numbers = decided.get(key)
                if numbers is None:
                    numbers = decided[key] = _decide(name, nid, ntype, duration, _attr_facts(buf, attrs_at, end),
                                                     rank, roofline, refs, program)
            else:
                node = decode_node(buf, start, end)
                nid, raw_name, ntype, data, ctrl, duration = (node.id, node.name.encode(), node.type, node.data_deps,
                                                              node.ctrl_deps, node.duration_micros)
                numbers = _decide(name, nid, ntype, duration, _facts(node.attrs), rank, roofline, refs, program)
            if nid in index_of:
                raise TraceReadError(f"{name}: node id {nid} appears twice (record at byte {offset})")
            label = labels.get(raw_name)
            if label is None:
                label = labels[raw_name] = len(program.labels)
                program.labels.append(raw_name.decode(errors="replace"))
            index_of[nid] = len(kinds)
            raw_deps.append((data, ctrl) if ctrl else data)
            ids.append(nid)
            kind, nanos, size, flops, ref = numbers
            kinds.append(kind)
            nanos_of.append(nanos)
            sizes.append(size)
            flops_of.append(flops)
            comms.append(ref)
            label_of.append(label)
    except WireError as error:
        raise TraceReadError(f"{name}: not a Chakra trace: {error}") from None
    deps = []
    append = deps.append
    try:
        for d in raw_deps:
            if d.__class__ is tuple:
                append(tuple(index_of[x] for x in (*d[0], *d[1])))
            else:
                append(tuple(index_of[x] for x in d))
    except KeyError as missing:
        nid = ids[len(deps)]
        raise TraceReadError(f"{name}: node {nid} depends on node {missing.args[0]}, which the file does not have") from None
    program.kind, program.deps, program.nanos, program.size = kinds, deps, nanos_of, sizes
    program.flops, program.comm, program.label, program.position = flops_of, comms, label_of, [-1] * len(kinds)
    return program


def _decide(name: str, nid: int, ntype: int, duration: int, facts: dict, rank: int, roofline, refs: dict,
            program: SimProgram) -> tuple:
    """(kind, ns, bytes, FLOPs, ref index) of a node."""
    kind = _KIND.get(ntype)
    if kind is None:
        raise TraceReadError(f"{name}: node {nid} has node type {ntype}, which Chakra does not define")
    nanos, size, flops, ref = _node_numbers(name, nid, ntype, kind, duration, facts, rank, roofline)
    index = -1
    if ref is not None:
        index = refs.get(ref)
        if index is None:
            index = refs[ref] = len(program.refs)
            program.refs.append(ref)
    return kind, nanos, size, flops, index


def _node_numbers(name: str, nid: int, ntype: int, kind: int, duration: int, facts: dict, rank: int, roofline):
    """(ns, bytes, FLOPs, ref) of one node."""
    if kind == COMP:
        if ntype != NodeType.COMP_NODE:
            return 0, 0, 0, None
        flops, size = facts.get("num_ops", 0), facts.get("tensor_size", 0)
        if roofline is not None and roofline.enabled:
            return roofline.compute_ns(flops, size), size, flops, None
        return max(1, duration * 1000), size, flops, None
    if kind == COPY:
        return max(1, duration * 1000), facts.get("tensor_size", 0), 0, None
    size = facts.get("comm_size")
    if size is None:
        raise TraceReadError(f"{name}: communication node {nid} has no comm_size")
    if kind == COLL:
        comm_type = facts.get("comm_type")
        what = _COLLECTIVE.get(comm_type)
        if what is None:
            raise TraceReadError(f"{name}: collective node {nid} has comm_type {comm_type}; ASTRA-sim and stagec "
                                 f"simulate {', '.join(c.name for c in _COLLECTIVE)}")
        return 0, size, 0, ("coll", what, size, facts.get("pg_name", ""), max(1, duration * 1000))
    src, dst = facts.get("comm_src", rank), facts.get("comm_dst")
    if kind == SEND:
        if src != rank or dst is None:
            raise TraceReadError(f"{name}: send node {nid} must have comm_src {rank} (this rank) and a comm_dst")
        return 0, size, 0, ("send", dst, size, facts.get("comm_tag", 0))
    src = facts.get("comm_src")
    if src is None or facts.get("comm_dst", rank) != rank:
        raise TraceReadError(f"{name}: recv node {nid} must have a comm_src and comm_dst {rank} (this rank)")
    return 0, size, 0, ("recv", src, size, facts.get("comm_tag", 0))


def _same_program(a: SimProgram, b: SimProgram) -> bool:
    return (a.kind == b.kind and a.nanos == b.nanos and a.size == b.size and a.deps == b.deps
            and a.comm == b.comm and a.flops == b.flops and a.label == b.label)


def _digest(path: str) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as stream:
        while chunk := stream.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def _with_values(program: SimProgram, refs: list[tuple]) -> SimProgram:
    """`program` with other groups and peers: the node arrays are shared."""
    return SimProgram(program.name, program.kind, program.deps, program.nanos, program.size, program.flops,
                      program.comm, refs, program.label, program.labels)


def _from_rank_classes(directory: str, prefix: str, files: dict, world: int, roofline,
                       progress) -> dict[int, SimProgram] | None:
    """Each rank's program from one decoded file per class, where `<prefix>.ranks.json`
    describes the directory's files as they are; None where it does not."""
    try:
        with open(os.path.join(directory, f"{prefix}.ranks.json"), encoding="utf-8") as stream:
            doc = json.load(stream)
        if doc.get("format") != "stagec rank classes" or doc.get("version") != 1 or doc.get("world") != world:
            return None
        recorded = doc["files"]
        for rank in range(world):
            size, digest = recorded[str(rank)]
            path = os.path.join(directory, files[rank][0])
            if os.path.getsize(path) != size or _digest(path) != digest:
                return None
        programs: dict[int, SimProgram] = {}
        for number, cls in enumerate(doc["classes"]):
            ranks, kinds, values = cls["ranks"], cls["patches"], cls["values"]
            rep = ranks[0]
            program = read_rank(os.path.join(directory, files[rep][0]), rep, roofline)
            slot: dict[tuple, int] = {}
            for k, kind in enumerate(kinds):
                key = (kind, values[str(rep)][k])
                other = slot.setdefault(key, k)
                if other != k and any(values[str(r)][k] != values[str(r)][other] for r in ranks):
                    return None  # two patch points look alike in the decoded file
            where = []
            for ref in program.refs:
                key = ("pg", int(ref[3])) if ref[0] == "coll" else (ref[0], ref[1])
                if key not in slot:
                    return None
                where.append(slot[key])
            for r in ranks:
                row = values[str(r)]
                refs = [(*ref[:3], str(row[k]), ref[4]) if ref[0] == "coll" else (ref[0], row[k], *ref[2:])
                        for ref, k in zip(program.refs, where)]
                programs[r] = program if r == rep else _with_values(program, refs)
            if progress is not None:
                progress(number + 1, len(doc["classes"]))
        return programs if len(programs) == world else None
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None


def read_trace_dir(directory: str, network, *, prefix: str | None = None, merge: bool = True,
                   progress: Callable[[int, int], None] | None = None) -> tuple[list[Actor], int, dict]:
    """(actors, world, groups) of a trace directory: one actor per part of identically
    behaving ranks (one per rank without `merge`)."""
    try:
        prefix, files = find_trace_files(directory, prefix)
    except TraceDirError as error:
        raise TraceReadError(str(error)) from None
    world = max(files) + 1
    missing = [r for r in range(world) if r not in files]
    if missing:
        raise TraceReadError(f"{directory}: ranks are not 0..{world - 1} contiguous (no {prefix}.{missing[0]}.et)")
    if world > network.world:
        raise TraceReadError(f"{directory}: {world} ranks, but the network has {network.world} NPUs")
    groups, defects = load_comm_groups(os.path.join(directory, "comm_group.json"), world)
    if defects:
        raise TraceReadError(f"{directory}: {defects[0]}")
    groups = groups or {}
    everyone = tuple(range(world))
    members_of = {key: tuple(sorted(m)) for key, m in groups.items()}
    roofline = getattr(network, "roofline", None)
    by_rank = _from_rank_classes(directory, prefix, files, world, roofline, progress)
    actors: list[Actor] = []
    if by_rank is not None:
        actors = [Actor(rank, by_rank[rank], [rank]) for rank in range(world)]
    else:
        programs: list[SimProgram] = []
        for rank in range(world):
            program = read_rank(os.path.join(directory, files[rank][0]), rank, roofline)
            shared = next((p for p in programs if _same_program(p, program)), None)
            if shared is not None:
                program = shared if shared.refs == program.refs else _with_values(shared, program.refs)
            else:
                programs.append(program)
            actors.append(Actor(rank, program, [rank]))
            if progress is not None:
                progress(rank + 1, world)
    cache: dict[tuple, int] = {}
    for actor in actors:
        rank = actor.rank
        for ref in actor.program.refs:
            if ref[0] == "coll":
                _, what, size, pg, nanos = ref
                members = members_of.get(pg, everyone)
                if rank not in members:
                    raise TraceReadError(f"{directory}: rank {rank} issues a collective on group '{pg}', "
                                         f"which does not hold it (comm_group.json: {list(members)})")
                key = (what, size, members)
                time = cache.get(key)
                if time is None:
                    time = cache[key] = nanos if what == "broadcast" else network.collective_ns(what, size, members)
                actor.comm.append(Collective(pg if pg in members_of else "all", frozenset(members), time,
                                             pg or "all", (what, size), f"group {pg}" if pg in members_of else "all"))
            else:
                role, peer, size, tag = ref
                if not 0 <= peer < world:
                    raise TraceReadError(f"{directory}: rank {rank} has a {role} with rank {peer}, outside 0..{world - 1}")
                src, dst = (rank, peer) if role == "send" else (peer, rank)
                key = (src, dst, size)
                time = cache.get(key)
                if time is None:
                    time = cache[key] = network.p2p_ns(src, dst, size)
                actor.comm.append(PointToPoint(peer, tag, time, peer, "p2p"))
    return (merge_ranks(actors) if merge else actors), world, members_of
