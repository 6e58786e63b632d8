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
the same order) share one SimProgram; every rank is an actor of its own. A file that
is not a well-formed trace is a `TraceReadError` naming the file and the node.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from stagec.runtime.chakra.check import TraceDirError, find_trace_files, load_comm_groups
from stagec.runtime.chakra.schema import CommType, NodeType
from stagec.runtime.chakra.wire import WireError, decode_node, read_attrs, read_node_head, record_bounds
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
    ns) and ("send"|"recv", peer, size, tag)."""
    name = os.path.basename(path)
    try:
        with open(path, "rb") as stream:
            buf = stream.read()
    except OSError as error:
        raise TraceReadError(f"{path}: cannot read: {error.strerror or error}") from None
    program = SimProgram(name)
    labels: dict[bytes, int] = {}
    refs: dict[tuple, int] = {}
    facts_of: dict[bytes, dict] = {}
    index_of: dict[int, int] = {}
    raw_deps: list = []
    first = True
    try:
        for offset, start, end in record_bounds(buf):
            if first:
                first = False
                continue
            head = read_node_head(buf, start, end)
            if head is not None:
                nid, raw_name, ntype, data, ctrl, _, duration, attrs_at = head
                key = buf[attrs_at:end]
                facts = facts_of.get(key)
                if facts is None:
                    facts = facts_of[key] = _attr_facts(buf, attrs_at, end)
            else:
                node = decode_node(buf, start, end)
                nid, raw_name, ntype, data, ctrl, duration = (node.id, node.name.encode(), node.type, node.data_deps,
                                                              node.ctrl_deps, node.duration_micros)
                facts = {}
                for a in node.attrs:
                    if a.name not in facts and (a.name == "pg_name" or isinstance(a.value, (int, bool))):
                        facts[a.name] = str(a.value) if a.name == "pg_name" else int(a.value)
            if nid in index_of:
                raise TraceReadError(f"{name}: node id {nid} appears twice (record at byte {offset})")
            kind = _KIND.get(ntype)
            if kind is None:
                raise TraceReadError(f"{name}: node {nid} has node type {ntype}, which Chakra does not define")
            label = labels.get(raw_name)
            if label is None:
                label = labels[raw_name] = len(program.labels)
                program.labels.append(raw_name.decode(errors="replace"))
            nanos, size, flops, ref = _node_numbers(name, nid, ntype, kind, duration, facts, rank, roofline)
            if ref is not None:
                index = refs.get(ref)
                if index is None:
                    index = refs[ref] = len(program.refs)
                    program.refs.append(ref)
            else:
                index = -1
            index_of[nid] = len(program.kind)
            raw_deps.append((nid, data, ctrl))
            program.add(kind, (), nanos=nanos, size=size, flops=flops, comm=index, label=label)
    except WireError as error:
        raise TraceReadError(f"{name}: not a Chakra trace: {error}") from None
    for i, (nid, data, ctrl) in enumerate(raw_deps):
        try:
            program.deps[i] = tuple(index_of[d] for d in (*data, *ctrl))
        except KeyError as missing:
            raise TraceReadError(f"{name}: node {nid} depends on node {missing.args[0]}, which the file does not have") from None
    return program


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


def read_trace_dir(directory: str, network, *, prefix: str | None = None,
                   progress: Callable[[int, int], None] | None = None) -> tuple[list[Actor], int, dict]:
    """(actors, world, groups) of a trace directory, one actor per rank."""
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
    programs: list[SimProgram] = []
    actors: list[Actor] = []
    for rank in range(world):
        program = read_rank(os.path.join(directory, files[rank][0]), rank, roofline)
        shared = next((p for p in programs if _same_program(p, program)), None)
        if shared is not None and shared.refs == program.refs:
            program = shared
        elif shared is not None:
            shared_copy = SimProgram(program.name, shared.kind, shared.deps, shared.nanos, shared.size, shared.flops,
                                     shared.comm, program.refs, shared.label, shared.labels)
            program = shared_copy
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
                                             pg or "all", (what, size)))
            else:
                role, peer, size, tag = ref
                if not 0 <= peer < world:
                    raise TraceReadError(f"{directory}: rank {rank} has a {role} with rank {peer}, outside 0..{world - 1}")
                src, dst = (rank, peer) if role == "send" else (peer, rank)
                actor.comm.append(PointToPoint(peer, tag, network.p2p_ns(src, dst, size), peer))
    return actors, world, members_of
