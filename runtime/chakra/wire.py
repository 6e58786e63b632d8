"""Chakra's wire format, written and read by stagec itself (no generated protobuf code).

A trace file is a sequence of records, each a varint32 length and that many bytes of a
protobuf message: record 0 a `GlobalMetadata`, every later one a `Node`
(../shared/CHAKRA.md, docs/chakra.md). The encoder writes exactly what protobuf's own
serializer writes for the same message (fields in number order, proto3 defaults
omitted, repeated integers packed), so a trace is byte-identical to one written with
Chakra's generated code; tests/unit/chakra/test_wire.py checks it against protobuf.

Encoding, fast path: a node body is its head (`encode_node_head`: id, name, type, deps,
duration) followed by its attribute records (`encode_attr`), each a complete field-10
entry. Ranks that differ in a few attribute values share cached pieces and patch the
rest; `TraceWriter.write_encoded` frames and writes a body built that way.

Decoding keeps each attribute's wire field number beside its value (`DecodedAttr`),
so checks can tell an int64 from a double from a string.
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from stagec.runtime.chakra.schema import CHAKRA_VERSION, AttrField, AttrValue, Node, NodeType

_U64 = 1 << 64
_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1
_MAX_RECORD = (1 << 32) - 1

# -- encoding --------------------------------------------------------------------------------

# Varints of 0 .. 2**14-1 (one or two bytes), precomputed: ids, lengths, sizes and enum
# values are mostly small, and a list index is far cheaper than the loop.
_SMALL = 1 << 14


def _varint_slow(value: int) -> bytes:
    if value < 0:
        if value < _I64_MIN:
            raise ValueError(f"{value} does not fit a 64-bit varint")
        value += _U64  # two's complement: 10 bytes, as protobuf writes a negative int64
    elif value >= _U64:
        raise ValueError(f"{value} does not fit a 64-bit varint")
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_VARINTS: list[bytes] = [_varint_slow(v) for v in range(_SMALL)]


def encode_varint(value: int) -> bytes:
    """The base-128 varint of `value`; a negative value is its 64-bit two's complement
    (10 bytes), as protobuf encodes a negative int64."""
    if 0 <= value < _SMALL:
        return _VARINTS[value]
    if value > 0:
        return _uvarint(value)
    return _varint_slow(value)


def _uvarint(value: int) -> bytes:
    """The varint of an unsigned 64-bit field (ids, deps, durations): negatives refused.
    Values below 2**28 (four bytes) take a loop-free path."""
    if 0 <= value < _SMALL:
        return _VARINTS[value]
    if _SMALL <= value < 0x200000:
        return bytes((value & 0x7F | 0x80, value >> 7 & 0x7F | 0x80, value >> 14))
    if 0x200000 <= value < 0x10000000:
        return bytes((value & 0x7F | 0x80, value >> 7 & 0x7F | 0x80, value >> 14 & 0x7F | 0x80, value >> 21))
    if value < 0:
        raise ValueError(f"{value} is negative: the field is unsigned (uint64)")
    return _varint_slow(value)


def _packed_uvarints(values: Sequence[int]) -> bytes:
    if len(values) == 1:
        return _uvarint(values[0])
    if max(values) < 0x80 and min(values) >= 0:
        return bytes(values)  # every varint is one byte: the values themselves
    return b"".join([_uvarint(v) for v in values])


def _len_prefixed(tag: bytes, payload: bytes) -> bytes:
    n = len(payload)
    return tag + (_VARINTS[n] if n < _SMALL else _varint_slow(n)) + payload


# Tag bytes: (field number << 3) | wire type, as varints.
_T_ID = b"\x08"
_T_NAME = b"\x12"
_T_TYPE = b"\x18"
_T_CTRL = b"\x22"
_T_DATA = b"\x2a"
_T_DURATION = b"\x38"
_T_ATTR = b"\x52"  # Node.attr (10, length-delimited)
_T_META_VERSION = b"\x0a"
_T_ATTR_NAME = b"\x0a"
_T_DOUBLE = encode_varint(AttrField.DOUBLE << 3 | 1)
_T_INT64 = encode_varint(AttrField.INT64 << 3 | 0)
_T_INT64_LIST = encode_varint(AttrField.INT64_LIST << 3 | 2)
_T_BOOL = encode_varint(AttrField.BOOL << 3 | 0)
_T_BOOL_LIST = encode_varint(AttrField.BOOL_LIST << 3 | 2)
_T_STRING = encode_varint(AttrField.STRING << 3 | 2)
_T_LIST_VALUES = b"\x0a"  # XList.values (1, packed)

_pack_double = struct.Struct("<d").pack

_BOOL_TRUE = _T_BOOL + b"\x01"
_BOOL_FALSE = _T_BOOL + b"\x00"


def encode_attr_value(value: AttrValue) -> bytes:
    """The `value` oneof part of an AttributeProto: bool -> 27 bool, int -> 9 int64,
    float -> 3 double, str -> 29 string, list of bools -> 28 BoolList, list of ints ->
    10 Int64List (an empty list is an Int64List). bool is tested before int."""
    if value is True:
        return _BOOL_TRUE
    if value is False:
        return _BOOL_FALSE
    if isinstance(value, int):  # bool cannot be subclassed: True and False were all of it
        if not _I64_MIN <= value <= _I64_MAX:
            raise ValueError(f"attribute value {value} does not fit an int64")
        return _T_INT64 + encode_varint(value)
    if isinstance(value, float):
        return _T_DOUBLE + _pack_double(value)
    if isinstance(value, str):
        return _len_prefixed(_T_STRING, value.encode())
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, bool) for v in value):
            return _len_prefixed(_T_BOOL_LIST, _len_prefixed(_T_LIST_VALUES, bytes(map(int, value))))
        if any(isinstance(v, bool) or not isinstance(v, int) for v in value):
            raise TypeError(f"attribute list {value!r}: all bools or all ints")
        if not value:
            return _len_prefixed(_T_INT64_LIST, b"")
        if not _I64_MIN <= min(value) <= max(value) <= _I64_MAX:
            raise ValueError(f"attribute list {value!r}: a value does not fit an int64")
        packed = b"".join([encode_varint(v) for v in value])
        return _len_prefixed(_T_INT64_LIST, _len_prefixed(_T_LIST_VALUES, packed))
    raise TypeError(f"attribute value {value!r} of type {type(value).__name__}: bool, int, float, str or a list of bools or ints")


_NAME_PARTS: dict[str, bytes] = {}


def _attr_name_part(name: str) -> bytes:
    part = _NAME_PARTS.get(name)
    if part is None:
        if not isinstance(name, str):
            raise TypeError(f"attribute name {name!r} is not a string")
        part = _len_prefixed(_T_ATTR_NAME, name.encode()) if name else b""
        if len(_NAME_PARTS) < 4096:
            _NAME_PARTS[name] = part
    return part


# encode_attr results for hashable scalar values, keyed by (name, type, value): a trace
# repeats the same few (is_cpu_op, comm_type, pg_name, sizes) millions of times. Floats
# are not cached (-0.0 == 0.0 and NaN != NaN).
_ATTR_CACHE: dict[tuple, bytes] = {}
_ATTR_CACHE_LIMIT = 1 << 16


def encode_attr(name: str, value: AttrValue) -> bytes:
    """One complete `Node.attr` entry (tag 10, length, AttributeProto{name, value}),
    ready to concatenate after `encode_node_head` or other `encode_attr` pieces."""
    cls = value.__class__
    if cls is int or cls is bool or cls is str:
        key = (name, cls, value)
        hit = _ATTR_CACHE.get(key)
        if hit is not None:
            return hit
        record = _len_prefixed(_T_ATTR, _attr_name_part(name) + encode_attr_value(value))
        if len(_ATTR_CACHE) >= _ATTR_CACHE_LIMIT:
            _ATTR_CACHE.clear()
        _ATTR_CACHE[key] = record
        return record
    return _len_prefixed(_T_ATTR, _attr_name_part(name) + encode_attr_value(value))


def encode_node_head(
    id: int,
    name: str,
    type: int,
    data_deps: Sequence[int] = (),
    ctrl_deps: Sequence[int] = (),
    duration_micros: int = 0,
) -> bytes:
    """Fields 1-7 of a Node (id, name, type, ctrl_deps, data_deps, duration): a whole
    node body once its `encode_attr` pieces are appended."""
    out = bytearray()
    if id:
        out += _T_ID
        out += _VARINTS[id] if 0 <= id < _SMALL else _uvarint(id)
    if name:
        nb = name.encode()
        n = len(nb)
        out += _T_NAME
        out += _VARINTS[n] if n < _SMALL else _varint_slow(n)
        out += nb
    if type:
        out += _T_TYPE
        out += _VARINTS[type] if 0 <= type < _SMALL else encode_varint(type)
    if ctrl_deps:
        packed = _packed_uvarints(ctrl_deps)
        n = len(packed)
        out += _T_CTRL
        out += _VARINTS[n] if n < _SMALL else _varint_slow(n)
        out += packed
    if data_deps:
        packed = _packed_uvarints(data_deps)
        n = len(packed)
        out += _T_DATA
        out += _VARINTS[n] if n < _SMALL else _varint_slow(n)
        out += packed
    if duration_micros:
        out += _T_DURATION
        out += _VARINTS[duration_micros] if 0 <= duration_micros < _SMALL else _uvarint(duration_micros)
    return bytes(out)


def encode_node(node: Node) -> bytes:
    """The `Node` message body (no length prefix), byte-identical to protobuf's."""
    head = encode_node_head(node.id, node.name, node.type, node.data_deps, node.ctrl_deps, node.duration_micros)
    attrs = node.attrs
    if not attrs:
        return head
    cache = _ATTR_CACHE
    parts = [head]
    for name, value in attrs.items():
        cls = value.__class__
        if cls is int or cls is bool or cls is str:
            hit = cache.get((name, cls, value))
            parts.append(hit if hit is not None else encode_attr(name, value))
        else:
            parts.append(encode_attr(name, value))
    return b"".join(parts)


def encode_metadata(version: str = CHAKRA_VERSION) -> bytes:
    """The `GlobalMetadata` body: just its version string."""
    return _len_prefixed(_T_META_VERSION, version.encode()) if version else b""


def frame(body: bytes) -> bytes:
    """One record: the varint32 length of `body`, then `body`. A zero-length record is
    refused (Chakra's Python reader takes length 0 as the end of the file), and so is a
    body too long for a varint32."""
    n = len(body)
    if n == 0:
        raise ValueError("a zero-length record reads as the end of the file: a record must not be empty")
    if n > _MAX_RECORD:
        raise ValueError(f"a record of {n} bytes does not fit a varint32 length")
    return (_VARINTS[n] if n < _SMALL else _varint_slow(n)) + body


class TraceWriter:
    """Writes one rank's trace file: the GlobalMetadata record at once, then one record
    per node. It writes `<path>.tmp-<pid>` and renames it to `path` on a clean close;
    leaving the `with` block by an exception deletes the temporary file, so a trace
    appears whole or not at all.

        with TraceWriter("out/trace.0.et") as w:
            w.write(Node(1, "matmul", NodeType.COMP_NODE, duration_micros=12))
    """

    _FLUSH = 1 << 20

    def __init__(self, path: str | os.PathLike[str], version: str = CHAKRA_VERSION):
        self.path = os.fspath(path)
        self.temporary = f"{self.path}.tmp-{os.getpid()}"
        self.nodes = 0
        self._file = open(self.temporary, "wb")
        self._buffer = bytearray(frame(encode_metadata(version)))
        self._closed = False

    def write(self, node: Node) -> None:
        self.write_encoded(encode_node(node))

    def write_encoded(self, body: bytes) -> None:
        """Frame and write a Node body encoded already (encode_node, or cached pieces)."""
        n = len(body)
        if n == 0 or n > _MAX_RECORD:
            frame(body)  # raises the reason
        buffer = self._buffer
        buffer += _VARINTS[n] if n < _SMALL else _varint_slow(n)
        buffer += body
        self.nodes += 1
        if len(buffer) >= self._FLUSH:
            self._file.write(buffer)
            buffer.clear()

    def close(self) -> None:
        """Flush, close and move the file to its final name."""
        if self._closed:
            return
        self._closed = True
        try:
            self._file.write(self._buffer)
            self._buffer.clear()
            self._file.close()
            os.replace(self.temporary, self.path)
        except BaseException:
            self._discard()
            raise

    def abort(self) -> None:
        """Close and delete the temporary file; nothing appears under `path`."""
        if self._closed:
            return
        self._closed = True
        self._discard()

    def _discard(self) -> None:
        with contextlib.suppress(OSError):
            self._file.close()
        with contextlib.suppress(OSError):
            os.unlink(self.temporary)

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def write_comm_groups(path: str | os.PathLike[str], groups: Mapping[int, Sequence[int]]) -> None:
    """The communicator-group file ASTRA-sim reads with --comm-group-configuration:
    `{"1": [0, 1], ...}`, keys integers > 0 in increasing order; written atomically."""
    doc: dict[str, list[int]] = {}
    for key in sorted(groups):
        if isinstance(key, bool) or not isinstance(key, int) or key <= 0:
            raise ValueError(f"communicator group key {key!r}: an integer > 0 (group 0 is all ranks)")
        ranks = [int(r) for r in groups[key]]
        if any(r < 0 for r in ranks) or len(set(ranks)) != len(ranks):
            raise ValueError(f"communicator group {key}: {ranks} are not distinct ranks >= 0")
        doc[str(key)] = ranks
    path = os.fspath(path)
    temporary = f"{path}.tmp-{os.getpid()}"
    try:
        with open(temporary, "w", encoding="utf-8") as stream:
            json.dump(doc, stream)
            stream.write("\n")
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


# -- decoding --------------------------------------------------------------------------------


class WireError(ValueError):
    """Bytes that are not a well-formed trace; `offset` is the byte offset in the file
    (or in the buffer decoded) where the bad record or field starts."""

    def __init__(self, message: str, offset: int | None = None):
        super().__init__(message if offset is None else f"at byte {offset}: {message}")
        self.reason = message
        self.offset = offset


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """(value, next position) of the varint at `pos`; at most 10 bytes."""
    result = 0
    shift = 0
    start = pos
    try:
        while True:
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result, pos
            shift += 7
            if shift >= 70:
                raise WireError("varint longer than 10 bytes", start)
    except IndexError:
        raise WireError("varint runs past the end of the data", start) from None


def read_varint_fast(buf: bytes, pos: int) -> tuple[int, int]:
    """read_varint unrolled for up to three bytes (ids and sizes below 2**21), the
    common case; an IndexError past the end of `buf` is the caller's to catch."""
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result = b & 0x7F
    b = buf[pos + 1]
    if b < 0x80:
        return result | b << 7, pos + 2
    result |= (b & 0x7F) << 7
    b = buf[pos + 2]
    if b < 0x80:
        return result | b << 14, pos + 3
    return read_varint(buf, pos)


class Record(NamedTuple):
    offset: int  # where its length prefix starts
    start: int  # first byte of the message
    end: int  # one past its last byte


def record_bounds(buf: bytes) -> Iterator[tuple[int, int, int]]:
    """(offset, start, end) of each record of a trace file's bytes: where its length
    prefix starts, its message's first byte, one past its last. A zero-length record, a
    length that is not a varint32 or a record running past the end raise WireError
    (its `offset` is the record's). Plain tuples: this is the record loop of checking
    10^8 nodes."""
    pos = 0
    n = len(buf)
    while pos < n:
        length = buf[pos]
        if length < 0x80:
            start = pos + 1
        else:
            length, start = read_varint(buf, pos)
            if start - pos > 5 or length > _MAX_RECORD:
                raise WireError(f"record length is not a varint32 ({start - pos} bytes, value {length})", pos)
        if length == 0:
            raise WireError("zero-length record (Chakra's Python reader stops here as at the end of the file)", pos)
        end = start + length
        if end > n:
            raise WireError(f"truncated record: its length says {length} bytes, {n - start} are left", pos)
        yield pos, start, end
        pos = end


def iter_records(buf: bytes) -> Iterator[Record]:
    """The records of a trace file's bytes, as record_bounds frames them."""
    return map(Record._make, record_bounds(buf))


class DecodedAttr(NamedTuple):
    name: str
    field: int  # the AttributeProto value field it came in (AttrField); 0 if none was set
    value: object


@dataclass(slots=True)
class DecodedNode:
    """A Node as read from the wire. `type` is the raw enum number (it may be one Chakra
    does not define); `attrs` keeps wire order and wire field numbers."""

    id: int = 0
    name: str = ""
    type: int = 0
    ctrl_deps: list[int] = field(default_factory=list)
    data_deps: list[int] = field(default_factory=list)
    start_time_micros: int = 0
    duration_micros: int = 0
    attrs: list[DecodedAttr] = field(default_factory=list)

    def attr(self, name: str) -> DecodedAttr | None:
        """The first attribute of that name, as ASTRA-sim looks it up."""
        for a in self.attrs:
            if a.name == name:
                return a
        return None

    def to_node(self) -> Node:
        """As the Node stagec would write (first attribute of each name; values as
        decoded)."""
        attrs: dict[str, AttrValue] = {}
        for a in self.attrs:
            attrs.setdefault(a.name, a.value)  # type: ignore[arg-type]
        return Node(
            self.id, self.name, NodeType(self.type), list(self.data_deps), list(self.ctrl_deps),
            self.duration_micros, attrs,
        )


@dataclass(slots=True)
class DecodedMetadata:
    version: str = ""
    attrs: list[DecodedAttr] = field(default_factory=list)
    # Tags ((number << 3) | wire type) of fields GlobalMetadata does not have: a Node
    # written as record 0 shows here (its id, 0x08), where readers silently drop it.
    unknown_tags: list[int] = field(default_factory=list)


@dataclass(slots=True)
class Trace:
    metadata: DecodedMetadata
    nodes: list[DecodedNode]


def _skip(buf: bytes, pos: int, wire_type: int, tag_at: int) -> int:
    if wire_type == 0:
        return read_varint(buf, pos)[1]
    if wire_type == 1:
        return pos + 8
    if wire_type == 2:
        n, pos = read_varint(buf, pos)
        return pos + n
    if wire_type == 5:
        return pos + 4
    raise WireError(f"wire type {wire_type} (groups or invalid) is not allowed in a Chakra message", tag_at)


def _signed64(v: int) -> int:
    return v - _U64 if v >= 1 << 63 else v


def signed32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def _zigzag(v: int) -> int:
    return (v >> 1) ^ -(v & 1)


_unpack = struct.unpack_from
# Scalar value fields: field number -> (wire type, converter of the raw varint, or the
# struct format of a fixed-width value).
_VARINT_KINDS = {
    AttrField.INT32: lambda v: signed32(v),
    AttrField.INT64: _signed64,
    AttrField.UINT32: lambda v: v & 0xFFFFFFFF,
    AttrField.UINT64: lambda v: v,
    AttrField.SINT32: lambda v: signed32(_zigzag(v & 0xFFFFFFFF)),
    AttrField.SINT64: lambda v: _zigzag(v),
    AttrField.BOOL: lambda v: v != 0,
}
_FIXED_KINDS = {
    AttrField.DOUBLE: ("<d", 8),
    AttrField.FLOAT: ("<f", 4),
    AttrField.FIXED32: ("<I", 4),
    AttrField.FIXED64: ("<Q", 8),
    AttrField.SFIXED32: ("<i", 4),
    AttrField.SFIXED64: ("<q", 8),
}
_WIRE_TYPE = {**{f: 0 for f in _VARINT_KINDS}, **{f: (1 if size == 8 else 5) for f, (_, size) in _FIXED_KINDS.items()},
              AttrField.STRING: 2, AttrField.BYTES: 2}


def _decode_string(buf: bytes, start: int, end: int, at: int) -> str:
    try:
        return buf[start:end].decode()
    except UnicodeDecodeError:
        raise WireError("a string field is not valid UTF-8", at) from None


def _decode_scalar(kind: int, buf: bytes, pos: int, end: int, at: int) -> tuple[object, int]:
    """One value of a scalar kind at `pos`, already past its tag."""
    if kind in _VARINT_KINDS:
        v, pos = read_varint(buf, pos)
        return _VARINT_KINDS[kind](v), pos
    if kind in _FIXED_KINDS:
        fmt, size = _FIXED_KINDS[kind]
        if pos + size > end:
            raise WireError("fixed-width value runs past the end of its message", at)
        return _unpack(fmt, buf, pos)[0], pos + size
    n, pos = read_varint(buf, pos)
    if pos + n > end:
        raise WireError("length-delimited value runs past the end of its message", at)
    if kind == AttrField.STRING:
        return _decode_string(buf, pos, pos + n, at), pos + n
    return bytes(buf[pos:pos + n]), pos + n


def _decode_list(kind: int, buf: bytes, pos: int, end: int) -> list:
    """The values of an XList message occupying buf[pos:end]; `kind` is the element's
    scalar field number. Packed and unpacked encodings are both read."""
    values: list = []
    element_wire = _WIRE_TYPE[kind]
    while pos < end:
        at = pos
        tag, pos = read_varint(buf, pos)
        number, wire = tag >> 3, tag & 7
        if number != 1:
            pos = _skip(buf, pos, wire, at)
            continue
        if wire == element_wire:
            value, pos = _decode_scalar(kind, buf, pos, end, at)
            values.append(value)
        elif wire == 2 and element_wire != 2:
            n, pos = read_varint(buf, pos)
            stop = pos + n
            if stop > end:
                raise WireError("packed list runs past the end of its message", at)
            while pos < stop:
                value, pos = _decode_scalar(kind, buf, pos, stop, at)
                values.append(value)
            if pos != stop:
                raise WireError("packed list ends inside a value", at)
        else:
            raise WireError(f"list element of wire type {wire} where {element_wire} was expected", at)
    if pos != end:
        raise WireError("list message ends inside a field", end)
    return values


def decode_attr(buf: bytes, pos: int = 0, end: int | None = None) -> DecodedAttr:
    """An AttributeProto message occupying buf[pos:end]."""
    if end is None:
        end = len(buf)
    name = ""
    kind = 0
    value: object = None
    while pos < end:
        at = pos
        tag = buf[pos]
        if tag < 0x80:
            pos += 1
        else:
            tag, pos = read_varint(buf, pos)
        number, wire = tag >> 3, tag & 7
        if number == 1 and wire == 2:
            n, pos = read_varint(buf, pos)
            name = _decode_string(buf, pos, pos + n, at)
            pos += n
        elif AttrField.DOUBLE <= number <= AttrField.BYTES_LIST:
            if number % 2:  # odd: a scalar
                if wire != _WIRE_TYPE[number]:
                    raise WireError(f"attribute value field {number} has wire type {wire}", at)
                value, pos = _decode_scalar(number, buf, pos, end, at)
            else:
                if wire != 2:
                    raise WireError(f"attribute list field {number} has wire type {wire}", at)
                n, pos = read_varint(buf, pos)
                if pos + n > end:
                    raise WireError("attribute list runs past the end of the attribute", at)
                value = _decode_list(number - 1, buf, pos, pos + n)
                pos += n
            kind = number  # a oneof: the last value field wins
        else:
            pos = _skip(buf, pos, wire, at)  # doc_string and unknown fields
    if pos != end:
        raise WireError("attribute ends inside a field", end)
    return DecodedAttr(name, kind, value)


def read_packed_uvarints(buf: bytes, pos: int, end: int) -> tuple[list[int], int]:
    """A node's packed data_deps or ctrl_deps whose byte length is at `pos` (just past
    its one-byte tag), in a node ending at `end`: (values, position after them). One
    call decodes the whole field. An IndexError past the end of `buf` is the caller's
    to catch."""
    at = pos - 1
    n = buf[pos]
    if n < 0x80:
        pos += 1
    else:
        n, pos = read_varint_fast(buf, pos)
    stop = pos + n
    if stop > end:
        raise WireError("dependency list runs past the end of the node", at)
    # read_varint_fast's unrolled rule (one to three bytes), inlined: a node has about
    # two dependencies, mostly of three bytes, and a call per value costs more than
    # its decoding. read_varint takes longer values; test_wire pins the two equal.
    # (Measured: this loop is faster than list(raw) after a max(raw) < 0x80 test even
    # on lists of one-byte values, at a node's few dependencies.)
    out = []
    append = out.append
    while pos < stop:
        b = buf[pos]
        if b < 0x80:
            append(b)
            pos += 1
            continue
        c = buf[pos + 1]
        if c < 0x80:
            append(b & 0x7F | c << 7)
            pos += 2
            continue
        d = buf[pos + 2]
        if d < 0x80:
            append(b & 0x7F | (c & 0x7F) << 7 | d << 14)
            pos += 3
            continue
        v, pos = read_varint(buf, pos)
        append(v)
    if pos != stop:
        raise WireError("packed dependency list ends inside a value", stop)
    return out, stop


# decode_attr results by the attribute's raw bytes: a trace repeats the same few
# attributes (is_cpu_op, comm_type, pg_name, sizes) on most of its nodes, and a dict
# lookup of a short bytes slice is far cheaper than decoding it. DecodedAttr is
# immutable, so nodes share them.
_ATTR_DECODED: dict[bytes, DecodedAttr] = {}
_ATTR_DECODED_LIMIT = 1 << 16
_TAG_ATTR = 0x52  # Node.attr (10, length-delimited)


def read_attrs(buf: bytes, pos: int, end: int, out: list[DecodedAttr]) -> int:
    """The run of `Node.attr` fields starting with the tag at `pos`, in a node ending
    at `end`: appends each decoded attribute to `out` and returns where the run stops
    (`end`, or the tag of the next other field). An IndexError past the end of `buf`
    is the caller's to catch."""
    cache = _ATTR_DECODED
    while pos < end and buf[pos] == _TAG_ATTR:
        at = pos
        n = buf[pos + 1]
        if n < 0x80:
            pos += 2
        else:
            n, pos = read_varint_fast(buf, pos + 1)
        stop = pos + n
        if stop > end:
            raise WireError("attribute runs past the end of the node", at)
        raw = buf[pos:stop]
        attr = cache.get(raw)
        if attr is None:
            attr = decode_attr(buf, pos, stop)
            if len(cache) >= _ATTR_DECODED_LIMIT:
                cache.clear()
            cache[raw] = attr
        out.append(attr)
        pos = stop
    return pos


_NO_DEPS: list[int] = []  # shared by nodes without deps: read_node_head's callers never mutate it


def read_node_head(buf: bytes, pos: int, end: int) -> tuple[int, bytes, int, list[int], list[int], int, int, int] | None:
    """The head of a node laid out as stagec (and protobuf) writes it - each field at
    most once, in number order, deps packed, then only attributes: (id, name as raw
    bytes, type, data_deps, ctrl_deps, start_time_micros, duration_micros, where the
    attributes start, `end` if there are none). None for any other layout (fields out
    of order or repeated, unpacked deps, unknown fields) and for malformed bytes:
    decode_node's general loop reads those and names what is wrong.

    This is the hot loop of reading a trace (10^8 nodes for a large one), so it reads
    the fields in their order without a dispatch loop, with one-byte varints inline;
    read_varint_fast is the rule for longer ones."""
    nid = ntype = start_time = duration = 0
    name = b""
    data = ctrl = _NO_DEPS
    rv = read_varint_fast
    try:
        tag = buf[pos] if pos < end else 0
        if tag == 0x08:  # 1 id
            v = buf[pos + 1]
            if v < 0x80:
                nid = v
                pos += 2
            else:
                nid, pos = rv(buf, pos + 1)
            tag = buf[pos] if pos < end else 0
        if tag == 0x12:  # 2 name
            n = buf[pos + 1]
            if n < 0x80:
                pos += 2
            else:
                n, pos = rv(buf, pos + 1)
            name = buf[pos:pos + n]
            pos += n
            tag = buf[pos] if pos < end else 0
        if tag == 0x18:  # 3 type
            v = buf[pos + 1]
            if v < 0x80:
                ntype = v
                pos += 2
            else:
                v, pos = rv(buf, pos + 1)
                ntype = signed32(v)  # an enum is an int32: a negative one is sign-extended on the wire
            tag = buf[pos] if pos < end else 0
        if tag == 0x22:  # 4 ctrl_deps, packed
            ctrl, pos = read_packed_uvarints(buf, pos + 1, end)
            tag = buf[pos] if pos < end else 0
        if tag == 0x2A:  # 5 data_deps, packed
            data, pos = read_packed_uvarints(buf, pos + 1, end)
            tag = buf[pos] if pos < end else 0
        if tag == 0x30:  # 6 start_time_micros
            start_time, pos = rv(buf, pos + 1)
            tag = buf[pos] if pos < end else 0
        if tag == 0x38:  # 7 duration_micros
            v = buf[pos + 1]
            if v < 0x80:
                duration = v
                pos += 2
            else:
                duration, pos = rv(buf, pos + 1)
            tag = buf[pos] if pos < end else 0
    except (WireError, IndexError):
        return None
    if pos > end or (pos < end and tag != _TAG_ATTR):
        return None  # the last field overran the node, or another layout
    return nid, name, ntype, data, ctrl, start_time, duration, pos


def decode_node(buf: bytes, pos: int = 0, end: int | None = None) -> DecodedNode:
    """A Node message occupying buf[pos:end] (one record's body)."""
    if end is None:
        end = len(buf)
    head = read_node_head(buf, pos, end)
    if head is not None:  # laid out as stagec writes it: only attributes follow the head
        nid, raw_name, ntype, data, ctrl, start_time, duration, attrs_at = head
        attrs: list[DecodedAttr] = []
        try:
            whole = read_attrs(buf, attrs_at, end, attrs) == end
            name = raw_name.decode()
        except (WireError, IndexError, UnicodeDecodeError):
            whole = False  # the general loop below says what is wrong
        if whole:
            return DecodedNode(nid, name, ntype, [] if ctrl is _NO_DEPS else ctrl, [] if data is _NO_DEPS else data,
                               start_time, duration, attrs)
    return _decode_node_fields(buf, pos, end)


def _decode_node_fields(buf: bytes, pos: int, end: int) -> DecodedNode:
    """decode_node for any layout: fields in any order, repeated, unpacked, unknown."""
    node = DecodedNode()
    rv = read_varint_fast
    try:
        while pos < end:
            at = pos
            tag = buf[pos]
            pos += 1
            if tag == _TAG_ATTR:
                pos = read_attrs(buf, at, end, node.attrs)
            elif tag == 0x08:
                node.id, pos = rv(buf, pos)
            elif tag == 0x12:
                n, pos = rv(buf, pos)
                node.name = _decode_string(buf, pos, pos + n, at)
                pos += n
            elif tag == 0x18:
                v, pos = rv(buf, pos)
                node.type = signed32(v)
            elif tag == 0x2A or tag == 0x22:  # data_deps / ctrl_deps, packed
                values, pos = read_packed_uvarints(buf, pos, end)
                (node.data_deps if tag == 0x2A else node.ctrl_deps).extend(values)
            elif tag == 0x28 or tag == 0x20:  # data_deps / ctrl_deps, unpacked
                v, pos = rv(buf, pos)
                (node.data_deps if tag == 0x28 else node.ctrl_deps).append(v)
            elif tag == 0x38:
                node.duration_micros, pos = rv(buf, pos)
            elif tag == 0x30:
                node.start_time_micros, pos = rv(buf, pos)
            else:
                if tag >= 0x80:  # a field number above 15: none of the fields above
                    tag, pos = rv(buf, at)
                if tag >> 3 == 0:
                    raise WireError("field number 0", at)
                pos = _skip(buf, pos, tag & 7, at)  # inputs, outputs, unknown fields
    except IndexError:
        raise WireError("a field runs past the end of the data", end) from None
    if pos != end:
        raise WireError("node ends inside a field", end)
    return node


def decode_metadata(buf: bytes, pos: int = 0, end: int | None = None) -> DecodedMetadata:
    if end is None:
        end = len(buf)
    meta = DecodedMetadata()
    while pos < end:
        at = pos
        tag, pos = read_varint(buf, pos)
        if tag == 0x0A:
            n, pos = read_varint(buf, pos)
            meta.version = _decode_string(buf, pos, pos + n, at)
            pos += n
        elif tag == 0x12:
            n, pos = read_varint(buf, pos)
            if pos + n > end:
                raise WireError("attribute runs past the end of the metadata", at)
            meta.attrs.append(decode_attr(buf, pos, pos + n))
            pos += n
        else:
            meta.unknown_tags.append(tag)
            pos = _skip(buf, pos, tag & 7, at)
    if pos != end:
        raise WireError("metadata ends inside a field", end)
    return meta


def decode_trace(buf: bytes) -> Trace:
    """A whole trace file's bytes: record 0 is taken as GlobalMetadata, as Chakra's
    readers do; every later record is a Node."""
    metadata: DecodedMetadata | None = None
    nodes: list[DecodedNode] = []
    for offset, start, end in record_bounds(buf):
        try:
            if metadata is None:
                metadata = decode_metadata(buf, start, end)
            else:
                nodes.append(decode_node(buf, start, end))
        except IndexError:
            raise WireError("a field runs past the end of the data", offset) from None
    if metadata is None:
        raise WireError("empty trace: no GlobalMetadata record", 0)
    return Trace(metadata, nodes)


def read_trace(path: str | os.PathLike[str]) -> Trace:
    """Decode one `<prefix>.<rank>.et` file (raises WireError for malformed bytes)."""
    with open(path, "rb") as stream:
        return decode_trace(stream.read())
