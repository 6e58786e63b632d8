"""Checks of a Chakra trace directory: what ASTRA-sim would crash on, and what it would
silently get wrong while exiting 0 (../shared/CHAKRA.md, docs/chakra.md).

    report = check_trace("out/")            # every <prefix>.<rank>.et and comm_group.json
    assert report.ok, "\\n".join(report.defects)

Two phases, so that 32K ranks check in minutes in well under 1 GB:
1. per file (a process pool over files): decode every record, check framing, node ids,
   dependencies (present, acyclic), node types, attribute types and the attributes each
   node kind needs, communicator groups; reduce the file to a compact `FileSummary`:
   counts, its sends and recvs, and a digest of its collective sequence per group;
2. across ranks, on the summaries only: rank numbering, send/recv pairing, identical
   collective sequences in each group. Only where sequences differ are the files of the
   ranks concerned read again, to say where they differ.

Every defect is one line `FILE: node ID 'NAME': what is wrong, what would be right`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from stagec.runtime.chakra.schema import (
    FLOAT_ATTR_FIELDS,
    INTEGER_ATTR_FIELDS,
    UNSUPPORTED_COMM_TYPES,
    AttrField,
    CommType,
    NodeType,
)
from stagec.runtime.chakra.wire import (
    DecodedAttr,
    WireError,
    decode_metadata,
    decode_node,
    read_attrs,
    read_node_head,
    record_bounds,
)

COMM_GROUP_FILE = "comm_group.json"
ALL_RANKS_GROUP = "0"  # pg_name "" or "0": every rank

_TRACE_NAME = re.compile(r"^(?P<prefix>.+)\.(?P<rank>\d+)\.et$")

# Attributes ASTRA-sim reads as integers (any integer kind or bool converts; a float crashes it).
INTEGER_ATTRS = frozenset(
    {"is_cpu_op", "num_ops", "tensor_size", "comm_type", "comm_size", "comm_priority", "comm_src", "comm_dst", "comm_tag"}
)
REQUIRED_ATTRS = {
    NodeType.COMM_COLL_NODE: ("comm_type", "comm_size"),
    NodeType.COMM_SEND_NODE: ("comm_dst", "comm_tag", "comm_size"),
    NodeType.COMM_RECV_NODE: ("comm_src", "comm_tag", "comm_size"),
}
_COMM_NODES = frozenset({NodeType.COMM_COLL_NODE, NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE})
_NODE_TYPE_NAMES = {int(t): t.name for t in NodeType}
_COMM_TYPE_NAMES = {int(t): t.name for t in CommType}
_KIND_NAMES = {int(f): f.name.lower() for f in AttrField}
_SIMULATED = ", ".join(t.name for t in CommType if t not in UNSUPPORTED_COMM_TYPES)

_SEQ_ITEM = struct.Struct("<iq")  # (comm_type, comm_size) in a collective-sequence digest


class TraceDirError(ValueError):
    """The directory cannot be checked at all (missing, no trace files, ambiguous
    prefix): a usage error, not a defect of a trace."""


# -- results ---------------------------------------------------------------------------------


@dataclass(slots=True)
class FileSummary:
    """What phase 2 needs of one rank's file, and its counts."""

    file: str
    rank: int
    defects: list[str] = field(default_factory=list)
    complete: bool = True  # every record was framed correctly (else cross-rank checks skip it)
    counts: tuple = ()  # canonical ((key, value), ...) for the report, see _stats_items
    sends: list[tuple[int, int, int, int, int, str]] = field(default_factory=list)  # (src, dst, tag, size, id, name)
    recvs: list[tuple[int, int, int, int, int, str]] = field(default_factory=list)
    collectives: dict[str, tuple[int, bytes]] = field(default_factory=dict)  # group -> (count, digest)
    sequence: list[tuple[int, str, int, int]] = field(default_factory=list)  # see check_file's keep_group


@dataclass
class CheckReport:
    """The outcome of check_trace: `defects` (empty when the trace is fine) and per-rank
    counts, `ranks[r]` = {"nodes": N, "COMP_NODE": N, ..., "ALL_GATHER": {"count": C,
    "bytes": B}, ..., "SEND": {...}, "RECV": {...}}; a key appears when its count is
    not zero."""

    directory: str
    prefix: str
    ranks: dict[int, dict] = field(default_factory=dict)
    defects: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.defects

    def to_json(self) -> dict:
        return {"ranks": {str(r): self.ranks[r] for r in sorted(self.ranks)}}


# -- discovery -------------------------------------------------------------------------------


def find_trace_files(directory: str, prefix: str | None = None) -> tuple[str, dict[int, list[str]]]:
    """(prefix, rank -> file names) of `<prefix>.<rank>.et` in `directory`; the prefix is
    detected when only one is there. Several names of one rank (`t.1.et`, `t.01.et`) are
    kept, for the rank check to report."""
    if not os.path.isdir(directory):
        raise TraceDirError(f"'{directory}' is not a directory")
    by_prefix: dict[str, dict[int, list[str]]] = {}
    for name in os.listdir(directory):
        match = _TRACE_NAME.match(name)
        if match and os.path.isfile(os.path.join(directory, name)):
            by_prefix.setdefault(match["prefix"], {}).setdefault(int(match["rank"]), []).append(name)
    if prefix is None:
        if not by_prefix:
            raise TraceDirError(f"no trace files <prefix>.<rank>.et in '{directory}'")
        if len(by_prefix) > 1:
            raise TraceDirError(
                f"traces of several prefixes in '{directory}' ({', '.join(sorted(by_prefix))}): choose one with --prefix"
            )
        prefix = next(iter(by_prefix))
    elif prefix not in by_prefix:
        found = f" (found: {', '.join(sorted(by_prefix))})" if by_prefix else ""
        raise TraceDirError(f"no trace files {prefix}.<rank>.et in '{directory}'{found}")
    files = by_prefix[prefix]
    for names in files.values():
        names.sort()
    return prefix, files


def _check_ranks(prefix: str, files: Mapping[int, list[str]]) -> list[str]:
    defects = []
    for rank in sorted(files):
        if len(files[rank]) > 1:
            defects.append(
                f"{', '.join(files[rank])}: several files of rank {rank}; keep one, named {prefix}.{rank}.et"
            )
        elif files[rank][0] != f"{prefix}.{rank}.et":
            defects.append(f"{files[rank][0]}: rank {rank} is written with leading zeros; name it {prefix}.{rank}.et")
    count = max(files) + 1
    missing = [r for r in range(count) if r not in files]
    if missing:
        shown = ", ".join(f"{prefix}.{r}.et" for r in missing[:20]) + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
        defects.append(
            f"{prefix}.*.et: ranks are not 0..{count - 1} contiguous: missing {shown}; "
            "ASTRA-sim takes one file per rank 0..N-1"
        )
    return defects


def load_comm_groups(path: str, ranks: int) -> tuple[dict[str, frozenset[int]] | None, list[str]]:
    """(group name -> members, defects) of a comm_group.json; (None, []) when absent."""
    name = os.path.basename(path)
    if not os.path.exists(path):
        return None, []
    try:
        with open(path, encoding="utf-8") as stream:
            doc = json.load(stream)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        return {}, [f"{name}: not readable as JSON ({error}); it must be an object like {{\"1\": [0, 1]}}"]
    if not isinstance(doc, dict):
        return {}, [f"{name}: a JSON {type(doc).__name__}; it must be an object of groups like {{\"1\": [0, 1]}}"]
    groups: dict[str, frozenset[int]] = {}
    defects = []
    for key, members in doc.items():
        if not (key.isdigit() and key == str(int(key)) and int(key) > 0):
            defects.append(f"{name}: group key '{key}' is not an integer > 0 written as a string (e.g. \"1\"); "
                           "group 0 (all ranks) is implicit")
            continue
        if not isinstance(members, list) or not all(isinstance(m, int) and not isinstance(m, bool) for m in members):
            defects.append(f"{name}: group '{key}' is {json.dumps(members)[:80]}; it must be a list of rank numbers")
            continue
        bad = sorted({m for m in members if not 0 <= m < ranks})
        if bad:
            defects.append(f"{name}: group '{key}' names ranks {bad} outside 0..{ranks - 1}")
        repeated = sorted(m for m, c in Counter(members).items() if c > 1)
        if repeated:
            defects.append(f"{name}: group '{key}' lists ranks {repeated} more than once")
        if not members:
            defects.append(f"{name}: group '{key}' is empty")
        groups[key] = frozenset(members)
    return groups, defects


# -- phase 1: one file ------------------------------------------------------------------------


@dataclass(slots=True)
class _Context:
    """What a worker needs besides its file: the rank count and communicator groups."""

    ranks: int
    groups: dict[str, frozenset[int]] | None  # None: no comm_group.json


def _kind(a: DecodedAttr) -> str:
    return f"{_KIND_NAMES.get(a.field, 'no value')} (field {a.field})"


def _int_value(a: DecodedAttr) -> int:
    return int(a.value)  # bool and every integer kind


def _lenient_int(a: DecodedAttr) -> int | None:
    """An integer attribute's value; a float holding a whole number counts as that
    number (its type is a defect of its own); anything else is None."""
    if a.field in INTEGER_ATTR_FIELDS:
        return int(a.value)
    if a.field in FLOAT_ATTR_FIELDS and isinstance(a.value, float) and a.value.is_integer():
        return int(a.value)
    return None


def _metadata_problem(buf: bytes, start: int, end: int) -> str | None:
    """What is wrong with record 0 as a GlobalMetadata, or None."""
    try:
        meta = decode_metadata(buf, start, end)
        if not meta.unknown_tags and meta.version:
            return None
    except (WireError, IndexError):
        meta = None
    try:
        node = decode_node(buf, start, end)
        if node.type in _NODE_TYPE_NAMES and (node.id or node.name):
            return f"is a {_NODE_TYPE_NAMES[node.type]} (node {node.id} '{node.name}'), which readers drop"
    except (WireError, IndexError):
        pass
    if meta is None:
        return "is not a well-formed GlobalMetadata message"
    return f"is not a GlobalMetadata (fields {sorted({t >> 3 for t in meta.unknown_tags})}, version '{meta.version}')"


# What a node's type and attributes mean for the checks: kinds of _Profile.
_OTHER, _COLLECTIVE, _SEND, _RECV = 0, 1, 2, 3


@dataclass(slots=True, frozen=True)
class _Profile:
    """A node's type and attributes, judged once: every node of a file with the same
    type and attribute bytes shares it (a trace repeats a few dozen of them)."""

    defects: tuple[str, ...] = ()  # what follows "FILE: node ID 'NAME': "
    kind: int = _OTHER  # counted and matched only when its attributes are usable
    group: str = ""  # a collective's communicator group ("0": all ranks)
    comm_type: int = 0
    size: int = 0
    peer: int = 0  # a send's comm_dst, a recv's comm_src
    tag: int = 0


def _profile(ntype: int, attr_list: list[DecodedAttr], rank: int, context: _Context) -> _Profile:
    """The defects of a node of type `ntype` with these attributes on `rank`, and what
    the cross-rank checks need of it."""
    if ntype == NodeType.METADATA_NODE:
        return _Profile(("METADATA_NODE; ASTRA-sim aborts on it: never emit one",))
    if ntype == NodeType.INVALID_NODE or ntype not in _NODE_TYPE_NAMES:
        what = "INVALID_NODE (type 0)" if ntype == 0 else f"unknown node type {ntype}"
        return _Profile((f"{what}; a node is a COMP, COMM_COLL, COMM_SEND, COMM_RECV, MEM_LOAD or MEM_STORE node",))

    # Attributes by name, first match wins (as ASTRA-sim looks them up).
    attrs: dict[str, DecodedAttr] = {}
    for a in attr_list:
        if a.name not in attrs:
            attrs[a.name] = a
    defects = _attribute_type_defects(attrs)
    if ntype not in _COMM_NODES:
        return _Profile(tuple(defects))
    size = _comm_size(ntype, attrs, defects)
    if size is None:
        return _Profile(tuple(defects))
    if ntype == NodeType.COMM_COLL_NODE:
        return _collective_profile(attrs, size, rank, context, defects)
    return _point_to_point_profile(ntype, attrs, size, rank, context, defects)


def _attribute_type_defects(attrs: Mapping[str, DecodedAttr]) -> list[str]:
    """Attributes of a kind ASTRA-sim does not read as they are meant."""
    defects = []
    for name, a in attrs.items():
        if name in INTEGER_ATTRS:
            if a.field not in INTEGER_ATTR_FIELDS:
                why = "crashes on a float there" if a.field in FLOAT_ATTR_FIELDS else "reads only an integer there"
                defects.append(f"attribute '{name}' is {_kind(a)} = {a.value!r}; ASTRA-sim {why}: write an int64 (field 9)")
        elif name == "pg_name":
            if a.field != AttrField.STRING:
                defects.append(f"attribute 'pg_name' is {_kind(a)} = {a.value!r}; ASTRA-sim reads only a string (else it "
                               f"silently uses the wrong group): write \"{a.value}\" as a string (field 29)")
        elif name == "involved_dim":
            if a.field != AttrField.BOOL_LIST:
                defects.append(f"attribute 'involved_dim' is {_kind(a)}; it must be a bool list (field 28)")
    return defects


def _comm_size(ntype: int, attrs: Mapping[str, DecodedAttr], defects: list[str]) -> int | None:
    """A communication node's comm_size, after the checks every kind shares (is_cpu_op,
    the attributes it needs); None when it is not usable (defects says why, or an
    earlier defect does)."""
    type_name = _NODE_TYPE_NAMES[ntype]
    is_cpu = attrs.get("is_cpu_op")
    if is_cpu is not None and is_cpu.field in INTEGER_ATTR_FIELDS and is_cpu.value:
        defects.append(f"is_cpu_op is true on a {type_name}; ASTRA-sim aborts: set it false or leave it out")
    missing = [n for n in REQUIRED_ATTRS[ntype] if n not in attrs]
    if missing:
        defects.append(f"{type_name} without {', '.join(repr(m) for m in missing)}; it needs "
                       f"{', '.join(REQUIRED_ATTRS[ntype])} (integers)")
        return None
    # Beyond here an attribute of the wrong type (reported already) still counts when
    # it holds a whole number, so that one defect does not show up again as a sequence
    # or pairing mismatch on other ranks.
    size = _lenient_int(attrs["comm_size"])
    if size is None:
        return None
    if size < 0:
        defects.append(f"comm_size {size} is negative; it is a size in bytes")
        return None
    if size >= 1 << 63:
        defects.append(f"comm_size {size} does not fit an int64; it is a size in bytes")
        return None
    return size


def _collective_profile(attrs: Mapping[str, DecodedAttr], size: int, rank: int, context: _Context,
                        defects: list[str]) -> _Profile:
    comm_type = _lenient_int(attrs["comm_type"])
    if comm_type is None:
        return _Profile(tuple(defects))
    if comm_type not in _COMM_TYPE_NAMES:
        defects.append(f"comm_type {comm_type} is not a CollectiveCommType; use one ASTRA-sim simulates: {_SIMULATED}")
        return _Profile(tuple(defects))
    if comm_type in UNSUPPORTED_COMM_TYPES:
        defects.append(f"comm_type {_COMM_TYPE_NAMES[comm_type]} ({comm_type}); ASTRA-sim aborts on it: use one it "
                       f"simulates ({_SIMULATED})")
    pg = attrs.get("pg_name")
    if pg is not None and pg.field != AttrField.STRING:
        return _Profile(tuple(defects))  # reported above; which group ASTRA-sim takes is anyone's guess
    group = ALL_RANKS_GROUP if pg is None or pg.value in ("", ALL_RANKS_GROUP) else pg.value
    problem = _group_defect(group, rank, context.groups)
    if problem:
        defects.append(problem)
        return _Profile(tuple(defects))
    return _Profile(tuple(defects), _COLLECTIVE, group, comm_type, size)


def _group_defect(group: str, rank: int, groups: Mapping[str, frozenset[int]] | None) -> str | None:
    """Why a collective on `group` cannot complete on `rank`, or None."""
    if group == ALL_RANKS_GROUP:
        return None
    if groups is None:
        return (f"pg_name '{group}' but there is no {COMM_GROUP_FILE}; write {COMM_GROUP_FILE} with group '{group}', "
                "or use \"\" for all ranks")
    if group not in groups:
        known = ", ".join(sorted(groups, key=lambda k: (len(k), k))[:10]) or "none"
        return (f"pg_name '{group}' is not a group of {COMM_GROUP_FILE} (groups: {known}); use one of them, or \"\" "
                "for all ranks")
    if rank not in groups[group]:
        return (f"rank {rank} is not a member of group '{group}' {sorted(groups[group])[:16]} ({COMM_GROUP_FILE}); "
                "a rank joins only its own groups' collectives")
    return None


def _point_to_point_profile(ntype: int, attrs: Mapping[str, DecodedAttr], size: int, rank: int, context: _Context,
                            defects: list[str]) -> _Profile:
    tag = _lenient_int(attrs["comm_tag"])
    if ntype == NodeType.COMM_SEND_NODE:
        peer = _lenient_int(attrs["comm_dst"])
        src = attrs.get("comm_src")
        own = None if src is None else _lenient_int(src)
        if own is not None and own != rank:
            defects.append(f"comm_src {own} on a send of rank {rank}; it must be the sender's own rank {rank}, or left out")
        peer_name = "comm_dst"
    else:
        peer = _lenient_int(attrs["comm_src"])
        peer_name = "comm_src"
    if tag is None or peer is None:
        return _Profile(tuple(defects))
    if tag < 0:
        defects.append(f"comm_tag {tag} is negative; tags must be >= 0")
    if not 0 <= peer < context.ranks or peer == rank:
        defects.append(f"{peer_name} {peer} is not another rank (ranks 0..{context.ranks - 1}, this is rank {rank})")
        return _Profile(tuple(defects))
    return _Profile(tuple(defects), _SEND if ntype == NodeType.COMM_SEND_NODE else _RECV, size=size, peer=peer, tag=tag)


class _FileScan:
    """Phase 1 over one rank's file, in named steps: `read` frames the records and
    checks each node as it comes, `finish` does what needs every node (missing deps,
    cycles) and fills the summary.

    The record loop is written for speed (a file can hold 10^5 nodes, a trace 10^8):
    a node's head fields are read by wire.read_node_head, its attribute bytes - which
    a trace repeats - are judged once per file (_Profile), and what is rare (a defect,
    a duplicate id, a collective, send or recv) is a call of its own. A node laid out
    differently (fields after its attributes, unknown fields) or malformed goes
    through the general decoder, which names the defect."""

    __slots__ = ("summary", "file", "rank", "context", "keep_group", "profiles", "names", "ids", "type_counts",
                 "coll_counts", "coll_bytes", "p2p", "collectives", "edges")

    def __init__(self, summary: FileSummary, context: _Context, keep_group: str | None):
        self.summary = summary
        self.file = summary.file
        self.rank = summary.rank
        self.context = context
        self.keep_group = keep_group
        self.profiles: dict[tuple[int, bytes], _Profile] = {}
        self.names: dict[bytes, str] = {}
        self.ids: dict[int, str] = {}  # id -> name of the first node with it
        self.type_counts: dict[int, int] = {}
        self.coll_counts: Counter = Counter()
        self.coll_bytes: Counter = Counter()
        self.p2p = {"SEND": [0, 0], "RECV": [0, 0]}
        self.collectives: list[tuple[int, str, int, int]] = []  # (id, group, comm_type, comm_size)
        # (id, data_deps, ctrl_deps) of the nodes with deps, first of their id (a
        # duplicate's deps are not followed: which node ASTRA-sim keeps is unknown).
        self.edges: list[tuple[int, list[int], list[int]]] = []

    def read(self, buf: bytes) -> None:
        """Every record: framing (wire.record_bounds), record 0 as the metadata, every
        later one as a node. What follows a framing defect cannot be found. (Nothing
        but record_bounds raises WireError in this loop: the steps it calls catch
        their own.)"""
        profiles, names, ids, edges, type_counts = self.profiles, self.names, self.ids, self.edges, self.type_counts
        read_head = read_node_head
        index = 0
        try:
            for offset, start, end in record_bounds(buf):
                index += 1
                if index == 1:
                    self._metadata(buf, start, end)
                    continue
                head = read_head(buf, start, end)
                if head is not None:
                    nid, raw_name, ntype, data, ctrl, _, _, attrs_at = head
                    key = (ntype, buf[attrs_at:end])
                    profile = profiles.get(key)
                    name = names.get(raw_name)
                    if profile is None or name is None:
                        name, profile = self._first_seen(buf, raw_name, key, attrs_at, end)
                if head is None or profile is None:
                    node = self._general_node(buf, index - 1, offset, start, end)
                    if node is None:
                        continue
                    nid, name, ntype, data, ctrl, profile = node

                type_counts[ntype] = type_counts.get(ntype, 0) + 1
                if profile.defects:
                    self._profile_defects(nid, name, profile)
                if nid in ids:
                    self._duplicate(nid, name)
                else:
                    ids[nid] = name
                    if data or ctrl:
                        edges.append((nid, data, ctrl))
                if profile.kind:
                    self._communication(nid, name, profile)
        except WireError as error:
            self.summary.defects.append(f"{self.file}: record {index} (byte {error.offset}): {error.reason}; records "
                                        "are a varint32 length > 0 and that many bytes; nothing after this point was "
                                        "checked")
            self.summary.complete = False
        if index == 0 and self.summary.complete:
            self.summary.defects.append(f"{self.file}: empty file; a trace starts with a GlobalMetadata record")

    def _metadata(self, buf: bytes, start: int, end: int) -> None:
        problem = _metadata_problem(buf, start, end)
        if problem:
            self.summary.defects.append(f"{self.file}: record 0 (byte 0) {problem}; readers take record 0 as "
                                        "metadata whatever it is: write GlobalMetadata{version: \"0.0.4\"} first")

    def _first_seen(self, buf: bytes, raw_name: bytes, key: tuple[int, bytes], attrs_at: int, end: int
                    ) -> tuple[str | None, _Profile | None]:
        """A node's name and profile the first time its name or its (type, attribute
        bytes) are seen in this file; (None, None) when the attributes are not the
        node's last fields or do not decode (the general decoder then says why)."""
        name = self.names.get(raw_name)
        try:
            if name is None:
                name = self.names[raw_name] = raw_name.decode()
            profile = self.profiles.get(key)
            if profile is None:
                attrs: list[DecodedAttr] = []
                if read_attrs(buf, attrs_at, end, attrs) != end:
                    return None, None
                profile = self.profiles[key] = _profile(key[0], attrs, self.rank, self.context)
        except (UnicodeDecodeError, WireError, IndexError):
            return None, None
        return name, profile

    def _general_node(self, buf: bytes, index: int, offset: int, start: int, end: int) -> tuple | None:
        """(id, name, type, data_deps, ctrl_deps, profile) of a node through the general
        decoder; None (and the defect) when it is malformed."""
        try:
            node = decode_node(buf, start, end)
        except WireError as error:
            self.summary.defects.append(f"{self.file}: record {index} (byte {offset}): {error.reason}; it must be a "
                                        "well-formed Node message")
            return None
        except IndexError:
            self.summary.defects.append(f"{self.file}: record {index} (byte {offset}): a field runs past the end of "
                                        "the record")
            return None
        profile = _profile(node.type, node.attrs, self.rank, self.context)
        return node.id, node.name, node.type, node.data_deps, node.ctrl_deps, profile

    def _profile_defects(self, nid: int, name: str, profile: _Profile) -> None:
        label = f"{self.file}: node {nid} '{name}'"
        self.summary.defects.extend(f"{label}: {d}" for d in profile.defects)

    def _duplicate(self, nid: int, name: str) -> None:
        self.summary.defects.append(f"{self.file}: node {nid} '{name}': duplicate node id {nid} (node "
                                    f"'{self.ids[nid]}' has it too); ids must be unique in a file (ASTRA-sim "
                                    "silently keeps one)")

    def _communication(self, nid: int, name: str, profile: _Profile) -> None:
        """What the cross-rank checks need of a collective, send or recv, and its counts."""
        kind = profile.kind
        if kind == _COLLECTIVE:
            self.coll_counts[profile.comm_type] += 1
            self.coll_bytes[profile.comm_type] += profile.size
            self.collectives.append((nid, profile.group, profile.comm_type, profile.size))
            if self.keep_group == profile.group:
                self.summary.sequence.append((nid, name, profile.comm_type, profile.size))
        elif kind == _SEND:
            self.p2p["SEND"][0] += 1
            self.p2p["SEND"][1] += profile.size
            self.summary.sends.append((self.rank, profile.peer, profile.tag, profile.size, nid, name))
        elif kind == _RECV:
            self.p2p["RECV"][0] += 1
            self.p2p["RECV"][1] += profile.size
            self.summary.recvs.append((profile.peer, self.rank, profile.tag, profile.size, nid, name))

    def finish(self) -> None:
        """The checks that need every node, and the summary's collective digests and
        counts."""
        self._check_dependencies()
        summary = self.summary
        # Collective sequences, in issue order (smallest id first), one digest per group.
        self.collectives.sort()
        digests: dict[str, list] = {}
        for _, group, comm_type, size in self.collectives:
            entry = digests.get(group)
            if entry is None:
                entry = digests[group] = [0, hashlib.blake2b(digest_size=16)]
            entry[0] += 1
            entry[1].update(_SEQ_ITEM.pack(comm_type, size))
        summary.collectives = {g: (count, h.digest()) for g, (count, h) in digests.items()}
        total = sum(self.type_counts.values())
        summary.counts = _stats_items(total, self.type_counts, self.coll_counts, self.coll_bytes, self.p2p)

    def _check_dependencies(self) -> None:
        """Every dep names a node of this file, and no cycle. A clean file takes one
        pass that finds nothing to report; the node-by-node report and the cycle search
        run only when some dep is missing or names an id not smaller than its node's
        (stagec's emitter numbers nodes in topological order, so a clean trace never
        needs the cycle search). A plain loop: faster here than set or map passes."""
        ids = self.ids
        for nid, data, ctrl in self.edges:
            for dep in data:
                if dep >= nid or dep not in ids:
                    return self._dependency_defects()
            for dep in ctrl:
                if dep >= nid or dep not in ids:
                    return self._dependency_defects()
        return None

    def _dependency_defects(self) -> None:
        ids = self.ids
        backward = True  # every dep names a smaller id: no cycle is possible
        for nid, data, ctrl in self.edges:
            for field_name, deps in (("data_deps", data), ("ctrl_deps", ctrl)):
                for dep in deps:
                    if dep not in ids:
                        self.summary.defects.append(
                            f"{self.file}: node {nid} '{ids[nid]}': {field_name} names node {dep}, which is not in "
                            "this file; dependencies must name nodes of the same file")
                    if dep >= nid:
                        backward = False
        if not backward:
            _check_cycles(self.file, ids, self.edges, self.summary.defects)


def check_file(directory: str, file: str, rank: int, context: _Context, keep_group: str | None = None) -> FileSummary:
    """Phase 1 on one rank's file (_FileScan).

    `keep_group`: also keep the (id, name, comm_type, comm_size) of the collectives on
    that group in `summary.sequence`, to say where two members' sequences differ."""
    summary = FileSummary(file, rank)
    try:
        with open(os.path.join(directory, file), "rb") as stream:
            buf = stream.read()
    except OSError as error:
        summary.defects.append(f"{file}: cannot read it ({error.strerror})")
        summary.complete = False
        return summary
    scan = _FileScan(summary, context, keep_group)
    scan.read(buf)
    del buf  # a file's bytes go before the cycle search and digests
    scan.finish()
    return summary


def _stats_items(total: int, types: Mapping[int, int], colls: Counter, coll_bytes: Counter, p2p: dict) -> tuple:
    items: list = [("nodes", total)]
    items += [(_NODE_TYPE_NAMES.get(t, f"type {t}"), types[t]) for t in sorted(types)]
    items += [(_COMM_TYPE_NAMES[t], (colls[t], coll_bytes[t])) for t in sorted(colls)]
    items += [(k, tuple(v)) for k, v in p2p.items() if v[0]]
    return tuple(items)


def _stats_dict(items: tuple) -> dict:
    return {k: ({"count": v[0], "bytes": v[1]} if isinstance(v, tuple) else v) for k, v in items}


def _check_cycles(file: str, ids: Mapping[int, str], edges: list[tuple[int, list[int], list[int]]],
                  defects: list[str]) -> None:
    """No dependency cycle: Kahn's algorithm, then an iterative search for each cycle
    among the nodes it could not order (no recursion: a file holds 10^5 nodes)."""
    succs: dict[int, list[int]] = {}
    indegree: dict[int, int] = dict.fromkeys(ids, 0)
    for nid, data, ctrl in edges:
        for deps in (data, ctrl):
            for dep in deps:
                if dep in ids:
                    succs.setdefault(dep, []).append(nid)
                    indegree[nid] += 1
    ready = [i for i, d in indegree.items() if d == 0]
    ordered = 0
    while ready:
        i = ready.pop()
        ordered += 1
        for s in succs.get(i, ()):
            indegree[s] -= 1
            if indegree[s] == 0:
                ready.append(s)
    if ordered == len(indegree):
        return
    stuck = {i for i, d in indegree.items() if d > 0}
    for cycle in _cycles(stuck, succs):
        shown = cycle[:12]
        path = " -> ".join(str(i) for i in shown) + (f" -> ... ({len(cycle)} nodes)" if len(cycle) > 12 else f" -> {cycle[0]}")
        defects.append(f"{file}: node {cycle[0]} '{ids[cycle[0]]}': dependency cycle {path}; the graph must be acyclic "
                       "(ASTRA-sim never issues these nodes and still exits 0)")


def _cycles(stuck: set[int], succs: dict[int, list[int]]) -> Iterable[list[int]]:
    """The strongly connected components with a cycle among `stuck` (iterative Tarjan),
    each as one cycle's nodes in order, smallest id first."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    components: list[list[int]] = []
    counter = 0
    for root in sorted(stuck):
        if root in index:
            continue
        work = [(root, 0)]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, i = work[-1]
            edges = [s for s in succs.get(v, ()) if s in stuck]
            if i < len(edges):
                work[-1] = (v, i + 1)
                w = edges[i]
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1 or v in succs.get(v, ()):
                    components.append(component)
    for component in sorted(components, key=min):
        yield _cycle_in(set(component), min(component), succs)


def _cycle_in(component: set[int], start: int, succs: dict[int, list[int]]) -> list[int]:
    """A cycle through `start` inside a strongly connected component (breadth-first
    back to start, so the cycle shown is a shortest one)."""
    parent: dict[int, int] = {}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w in succs.get(v, ()):
                if w not in component:
                    continue
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(parent[path[-1]])
                    return path[::-1]
                if w not in parent:
                    parent[w] = v
                    following.append(w)
        frontier = following
    return [start]  # unreachable for a real component


# -- phase 2: across ranks ---------------------------------------------------------------------


class _PointToPoint:
    """Pairs sends with recvs on (src, dst, tag, size), as many of each, rank by rank as
    summaries arrive: a matched pair is forgotten at once, so what is kept is only what
    is still open (the in-flight pairs between ranks not yet seen)."""

    def __init__(self) -> None:
        self.open: dict[tuple[int, int, int, int], list] = {}  # key -> [net count, a send, a recv]

    def add(self, summary: FileSummary) -> None:
        open_ = self.open
        for side, items in ((1, summary.sends), (-1, summary.recvs)):
            slot = 1 if side == 1 else 2
            for src, dst, tag, size, nid, name in items:
                key = (src, dst, tag, size)
                entry = open_.get(key)
                if entry is None:
                    entry = open_[key] = [0, None, None]
                entry[0] += side
                if entry[slot] is None:
                    entry[slot] = (nid, name)
                if entry[0] == 0:
                    del open_[key]

    def defects(self, prefix: str, incomplete: set[int]) -> list[str]:
        """The unmatched ones; pairs with a rank whose file could not be read whole are
        not judged."""
        open_ = {k: e for k, e in self.open.items() if k[0] not in incomplete and k[1] not in incomplete}
        by_pair: dict[tuple[int, int, int], list] = {}
        for key, entry in open_.items():
            by_pair.setdefault(key[:3], []).append((key[3], entry[0]))
        out = []
        for (src, dst, tag, size), (net, send, recv) in sorted(
            open_.items(), key=lambda kv: (kv[0][0], kv[1][1][0]) if kv[1][0] > 0 else (kv[0][1], kv[1][2][0])
        ):
            others = [s for s, n in by_pair[(src, dst, tag)] if s != size and (n < 0) != (net < 0)]
            hint = f" (there is one of {others[0]} bytes: sizes must match)" if others else ""
            if net > 0:
                nid, name = send
                out.append(f"{prefix}.{src}.et: node {nid} '{name}': send to rank {dst} (tag {tag}, {size} bytes) has "
                           f"{'no' if net == 1 else f'{net} too few'} matching recv in {prefix}.{dst}.et{hint}; write a "
                           f"COMM_RECV_NODE with comm_src {src}, comm_tag {tag}, comm_size {size} there "
                           "(ASTRA-sim waits for it forever and exits 0)")
            else:
                nid, name = recv
                out.append(f"{prefix}.{dst}.et: node {nid} '{name}': recv from rank {src} (tag {tag}, {size} bytes) has "
                           f"{'no' if net == -1 else f'{-net} too few'} matching send in {prefix}.{src}.et{hint}; write a "
                           f"COMM_SEND_NODE with comm_dst {dst}, comm_tag {tag}, comm_size {size} there "
                           "(ASTRA-sim waits for it forever and exits 0)")
        return out


def _collective_sequence(directory: str, file: str, rank: int, group: str, context: _Context
                         ) -> list[tuple[int, str, int, int]]:
    """(id, name, comm_type, comm_size) of a file's collectives on `group`, in issue
    order, as phase 1 digested them."""
    return sorted(check_file(directory, file, rank, context, keep_group=group).sequence)


def _describe(item: tuple[int, str, int, int]) -> str:
    nid, name, comm_type, size = item
    return f"{_COMM_TYPE_NAMES.get(comm_type, comm_type)} of {size} bytes (node {nid} '{name}')"


def _sequence_difference(directory: str, prefix: str, group: str, rank: int, ref_rank: int, context: _Context,
                         cache: dict) -> str:
    mine = _collective_sequence(directory, f"{prefix}.{rank}.et", rank, group, context)
    if (group, ref_rank) not in cache:
        cache[(group, ref_rank)] = _collective_sequence(directory, f"{prefix}.{ref_rank}.et", ref_rank, group, context)
    ref = cache[(group, ref_rank)]
    for k, (a, b) in enumerate(zip(mine, ref)):
        if a[2:] != b[2:]:
            return (f"{prefix}.{rank}.et: node {a[0]} '{a[1]}': collective #{k + 1} on group '{group}' is "
                    f"{_COMM_TYPE_NAMES.get(a[2], a[2])} of {a[3]} bytes where rank {ref_rank} issues {_describe(b)}")
    if len(mine) < len(ref):
        return (f"{prefix}.{rank}.et: group '{group}': {len(mine)} collectives where rank {ref_rank} issues {len(ref)}; "
                f"nothing here matches rank {ref_rank}'s #{len(mine) + 1}, {_describe(ref[len(mine)])}")
    if len(mine) == len(ref):  # the files changed since phase 1
        return f"{prefix}.{rank}.et: group '{group}': its collectives differ from rank {ref_rank}'s"
    extra = mine[len(ref)]
    return (f"{prefix}.{rank}.et: node {extra[0]} '{extra[1]}': collective #{len(ref) + 1} on group '{group}' has no "
            f"counterpart: rank {ref_rank} issues only {len(ref)} there")


def _check_collectives(directory: str, prefix: str, summaries: Sequence[FileSummary], context: _Context,
                       defects: list[str]) -> None:
    """Each group's members issue the same (comm_type, comm_size) sequence."""
    complete = {s.rank: s for s in summaries if s.complete}
    all_groups: dict[str, frozenset[int] | range] = {ALL_RANKS_GROUP: range(context.ranks)}
    all_groups.update(context.groups or {})
    cache: dict = {}
    empty = (0, b"")
    for group, members in sorted(all_groups.items(), key=lambda kv: (len(kv[0]), kv[0])):
        seqs = {r: complete[r].collectives.get(group, empty) for r in sorted(members) if r in complete}
        if len(set(seqs.values())) <= 1:
            continue
        # The reference is the most common sequence; among equally common ones the
        # longest (a member missing collectives is likelier than one with extra), then
        # the lowest rank's.
        tally = Counter(seqs.values())
        reference_seq = max(seqs.values(), key=lambda s: (tally[s], s[0]))
        ref_rank = next(r for r, s in seqs.items() if s == reference_seq)
        odd = [r for r, s in seqs.items() if s != reference_seq]
        for rank in odd:
            detail = _sequence_difference(directory, prefix, group, rank, ref_rank, context, cache)
            defects.append(f"{detail}; ASTRA-sim pairs collectives by issue order, so every member of group '{group}' "
                           "must issue the same sequence (else it hangs or mismatches and still exits 0)")


# -- driver ------------------------------------------------------------------------------------

_worker_context: tuple[str, _Context] | None = None
_POOL_MIN_FILES = 8  # fewer files check faster in this process than a pool starts


def _init_worker(directory: str, context: _Context) -> None:
    global _worker_context
    _worker_context = (directory, context)


def _check_in_worker(job: tuple[str, int]) -> FileSummary:
    directory, context = _worker_context  # type: ignore[misc]
    return check_file(directory, job[0], job[1], context)


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:
        return os.cpu_count() or 1


def check_trace(directory: str, prefix: str | None = None, jobs: int | None = 1,
                progress: Callable[[int, int], None] | None = None) -> CheckReport:
    """Check every `<prefix>.<rank>.et` of `directory` and its comm_group.json. `jobs`
    is the number of worker processes for the per-file checks (None: one per CPU this
    process may use; 1: in this process); `progress(done, total)` follows the files.
    Raises TraceDirError when there is nothing to check."""
    directory = os.fspath(directory)
    prefix, files = find_trace_files(directory, prefix)
    report = CheckReport(directory, prefix)
    defects = report.defects
    defects += _check_ranks(prefix, files)
    ranks = max(files) + 1
    groups, group_defects = load_comm_groups(os.path.join(directory, COMM_GROUP_FILE), ranks)
    defects += group_defects
    context = _Context(ranks, groups)
    jobs_list = [(files[r][0], r) for r in sorted(files)]

    workers = available_cpus() if jobs is None else max(1, jobs)
    workers = min(workers, len(jobs_list))
    summaries: list[FileSummary] = []
    interned: dict[tuple, dict] = {}
    p2p = _PointToPoint()

    def take(summary: FileSummary) -> None:
        defects.extend(summary.defects)
        report.ranks[summary.rank] = interned.setdefault(summary.counts, _stats_dict(summary.counts))
        p2p.add(summary)
        # Keep only what the collective check needs.
        summary.defects, summary.sends, summary.recvs, summary.counts = [], [], [], ()
        summaries.append(summary)
        if progress is not None:
            progress(len(summaries), len(jobs_list))

    if workers <= 1 or len(jobs_list) < _POOL_MIN_FILES:
        for name, rank in jobs_list:
            take(check_file(directory, name, rank, context))
    else:
        from stagec.runtime.workers import quiet_pool

        chunk = max(1, min(64, len(jobs_list) // (workers * 8)))
        # workers that ignore Ctrl-C and die with this process (stagec: one line, exit 130)
        with quiet_pool(workers, initializer=_init_worker, initargs=(directory, context)) as pool:
            for summary in pool.imap(_check_in_worker, jobs_list, chunksize=chunk):
                take(summary)

    defects += p2p.defects(prefix, {s.rank for s in summaries if not s.complete})
    _check_collectives(directory, prefix, summaries, context, defects)
    return report
