"""stagec's Chakra wire format against protobuf's (a descriptor built at run time from
CHAKRA.md's schema, reference_proto.py): our bytes parse with protobuf to the same
fields and are byte-identical to protobuf's own serialization; protobuf's bytes decode
with our reader to the same nodes, for every attribute kind."""

from __future__ import annotations

import json
import math
import os
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stagec.runtime.chakra.reference_proto import ATTR_FIELD_NAMES, messages
from stagec.runtime.chakra.schema import AttrField, CommType, Node, NodeType
from stagec.runtime.chakra.wire import (
    DecodedAttr,
    TraceWriter,
    WireError,
    decode_node,
    decode_trace,
    encode_attr,
    encode_metadata,
    encode_node,
    encode_node_head,
    encode_varint,
    frame,
    iter_records,
    read_node_head,
    read_packed_uvarints,
    read_trace,
    read_varint,
    record_bounds,
    write_comm_groups,
)

M = messages()
U64 = (1 << 64) - 1
I64 = (-(1 << 63), (1 << 63) - 1)


def pb_attr(name: str, value):
    """The protobuf AttributeProto stagec's typing rule gives `value`."""
    a = M.AttributeProto(name=name)
    if isinstance(value, bool):
        a.bool_val = value
    elif isinstance(value, int):
        a.int64_val = value
    elif isinstance(value, float):
        a.double_val = value
    elif isinstance(value, str):
        a.string_val = value
    elif value and all(isinstance(v, bool) for v in value):
        a.bool_list.values.extend(value)
    else:
        a.int64_list.SetInParent()
        a.int64_list.values.extend(value)
    return a


def pb_node(node: Node):
    return M.Node(
        id=node.id, name=node.name, type=int(node.type), data_deps=node.data_deps, ctrl_deps=node.ctrl_deps,
        duration_micros=node.duration_micros, attr=[pb_attr(k, v) for k, v in node.attrs.items()],
    )


# -- varints and framing ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, expected",
    [
        (0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (300, "ac02"), (16383, "ff7f"), (16384, "808001"),
        ((1 << 21) - 1, "ffff7f"), (1 << 21, "80808001"), ((1 << 28) - 1, "ffffff7f"), (1 << 28, "8080808001"),
        (U64, "ffffffffffffffffff01"), (-1, "ffffffffffffffffff01"), (-2, "feffffffffffffffff01"),
        (I64[0], "80808080808080808001"),
    ],
)
def test_varint(value, expected):
    assert encode_varint(value).hex() == expected


@pytest.mark.parametrize("value", [1 << 64, I64[0] - 1])
def test_varint_out_of_range(value):
    with pytest.raises(ValueError, match="does not fit a 64-bit varint"):
        encode_varint(value)


@pytest.mark.parametrize("value", [1 << 63, -(1 << 63) - 1, [0, 1 << 63]])
def test_int_attribute_out_of_int64(value):
    with pytest.raises(ValueError, match="does not fit an int64"):
        encode_attr("comm_size", value)


def test_attribute_of_another_type():
    with pytest.raises(TypeError, match="bool, int, float, str or a list"):
        encode_attr("x", None)
    with pytest.raises(TypeError, match="all bools or all ints"):
        encode_attr("x", [True, 2])


def test_frame():
    assert frame(b"\x08\x01") == b"\x02\x08\x01"
    assert frame(b"x" * 300)[:2] == bytes.fromhex("ac02")
    with pytest.raises(ValueError, match="zero-length record"):
        frame(b"")


def test_metadata_matches_protobuf():
    assert encode_metadata() == M.GlobalMetadata(version="0.0.4").SerializeToString()
    assert encode_metadata("1.2") == M.GlobalMetadata(version="1.2").SerializeToString()


# -- every attribute kind, both directions ----------------------------------------------------

STAGEC_KINDS = [
    ("is_cpu_op", False, AttrField.BOOL),
    ("is_cpu_op", True, AttrField.BOOL),
    ("comm_size", 0, AttrField.INT64),
    ("comm_size", 4096, AttrField.INT64),
    ("comm_tag", -7, AttrField.INT64),
    ("num_ops", (1 << 63) - 1, AttrField.INT64),
    ("num_ops", -(1 << 63), AttrField.INT64),
    ("ratio", 0.25, AttrField.DOUBLE),
    ("ratio", -0.0, AttrField.DOUBLE),
    ("ratio", math.inf, AttrField.DOUBLE),
    ("pg_name", "", AttrField.STRING),
    ("pg_name", "12", AttrField.STRING),
    ("label", "all-gather ✓", AttrField.STRING),
    ("involved_dim", [True, False, True], AttrField.BOOL_LIST),
    ("shape", [1, -2, 300, (1 << 63) - 1], AttrField.INT64_LIST),
    ("shape", [], AttrField.INT64_LIST),
]


@pytest.mark.parametrize("name, value, field", STAGEC_KINDS)
def test_attr_kind_both_directions(name, value, field):
    node = Node(3, "n", NodeType.COMP_NODE, attrs={name: value})
    ours = encode_node(node)
    theirs = pb_node(node).SerializeToString()
    assert ours == theirs
    parsed = M.Node.FromString(ours)
    assert parsed.attr[0].name == name
    assert parsed.attr[0].WhichOneof("value") == ATTR_FIELD_NAMES[field]
    decoded = decode_node(theirs)
    assert decoded.attrs == [DecodedAttr(name, field, value)]
    assert decoded.to_node() == node


def test_attr_piece_is_a_node_field():
    """encode_attr gives a complete Node.attr entry: head + pieces is the node body."""
    attrs = {"comm_type": int(CommType.ALL_GATHER), "comm_size": 1 << 20, "pg_name": "1", "is_cpu_op": False}
    node = Node(70000, "ag", NodeType.COMM_COLL_NODE, data_deps=[69999], duration_micros=5, attrs=attrs)
    body = encode_node_head(70000, "ag", NodeType.COMM_COLL_NODE, [69999], (), 5) + b"".join(
        encode_attr(k, v) for k, v in attrs.items()
    )
    assert body == encode_node(node) == pb_node(node).SerializeToString()


def _every_protobuf_kind():
    """One AttributeProto per oneof field protobuf can write, with the value our reader
    must give back."""
    cases = [
        ("double_val", -1.5, -1.5), ("float_val", 0.5, 0.5), ("int32_val", -3, -3), ("int64_val", -(1 << 40), -(1 << 40)),
        ("uint32_val", (1 << 32) - 1, (1 << 32) - 1), ("uint64_val", U64, U64), ("sint32_val", -(1 << 31), -(1 << 31)),
        ("sint64_val", -5, -5), ("fixed32_val", 7, 7), ("fixed64_val", U64, U64), ("sfixed32_val", -9, -9),
        ("sfixed64_val", -(1 << 63), -(1 << 63)), ("bool_val", True, True), ("string_val", "x", "x"),
        ("bytes_val", b"\x00\xff", b"\x00\xff"),
    ]
    for field_name, value, expected in cases:
        yield field_name, value, expected
        list_name = field_name.replace("_val", "_list")
        yield list_name, [value, value], [expected, expected]


@pytest.mark.parametrize("field_name, value, expected", list(_every_protobuf_kind()))
def test_reader_takes_every_protobuf_kind(field_name, value, expected):
    a = M.AttributeProto(name="a", doc_string="ignored")
    if field_name.endswith("_list"):
        getattr(a, field_name).values.extend(value)
    else:
        setattr(a, field_name, value)
    node = M.Node(id=1, name="n", type=NodeType.COMP_NODE, attr=[a])
    decoded = decode_node(node.SerializeToString())
    field = {v: k for k, v in ATTR_FIELD_NAMES.items()}[field_name]
    assert decoded.attrs == [DecodedAttr("a", field, expected)]


def test_reader_takes_unpacked_deps_and_skips_io_and_unknown_fields():
    node = M.Node(id=9, name="x", type=NodeType.COMM_RECV_NODE, ctrl_deps=[1, 2], data_deps=[3, 1 << 40],
                  start_time_micros=11, duration_micros=12,
                  inputs=M.IOInfo(values="a", shapes="[[1]]", types="f"), outputs=M.IOInfo(values="b"))
    body = node.SerializeToString()
    # Unpacked repeated deps (proto2 style), an unknown varint field 15 and fixed32 field 16.
    body += bytes([0x28, 5, 0x20, 6]) + encode_varint(15 << 3) + b"\x01" + encode_varint(16 << 3 | 5) + b"abcd"
    decoded = decode_node(body)
    assert (decoded.id, decoded.name, decoded.type) == (9, "x", NodeType.COMM_RECV_NODE)
    assert decoded.ctrl_deps == [1, 2, 6]
    assert decoded.data_deps == [3, 1 << 40, 5]
    assert (decoded.start_time_micros, decoded.duration_micros) == (11, 12)


def test_first_attribute_of_a_name_wins():
    body = encode_node_head(1, "n", NodeType.COMP_NODE) + encode_attr("num_ops", 5) + encode_attr("num_ops", 2.0)
    decoded = decode_node(body)
    assert decoded.attr("num_ops") == DecodedAttr("num_ops", AttrField.INT64, 5)
    assert decoded.attr("missing") is None
    assert decoded.to_node().attrs == {"num_ops": 5}


# -- round trip property ---------------------------------------------------------------------

uint64 = st.integers(0, U64)
small_or_big = st.one_of(st.integers(0, 200), st.integers(0, 1 << 22), uint64)
attr_values = st.one_of(
    st.booleans(),
    st.integers(*I64),
    st.floats(allow_nan=False),
    st.text(),
    st.lists(st.booleans(), min_size=1, max_size=6),
    st.lists(st.integers(*I64), max_size=6),
)
nodes = st.builds(
    Node,
    id=small_or_big,
    name=st.text(max_size=20),
    type=st.sampled_from(list(NodeType)),
    data_deps=st.lists(small_or_big, max_size=6),
    ctrl_deps=st.lists(small_or_big, max_size=6),
    duration_micros=small_or_big,
    attrs=st.dictionaries(st.text(max_size=12), attr_values, max_size=6),
)


@settings(max_examples=300, deadline=None)
@given(nodes)
def test_round_trip_against_protobuf(node):
    ours = encode_node(node)
    assert ours == pb_node(node).SerializeToString()
    assert M.Node.FromString(ours) == pb_node(node)
    assert decode_node(ours).to_node() == node


# Values of every varint length, 1 to 10 bytes: read_packed_uvarints decodes up to three
# bytes inline (its hot loop) and must agree with read_varint, the rule, on all of them.
varint_of_any_length = st.integers(1, 10).flatmap(
    lambda n: st.integers(0 if n == 1 else 1 << 7 * (n - 1), min((1 << 7 * n) - 1, U64)))


@settings(max_examples=300, deadline=None)
@given(st.lists(varint_of_any_length, max_size=8))
def test_packed_deps_of_every_varint_length(values):
    packed = b"".join(encode_varint(v) for v in values)
    body = b"\x2a" + encode_varint(len(packed)) + packed
    by_rule, pos = [], 0
    while pos < len(packed):
        v, pos = read_varint(packed, pos)
        by_rule.append(v)
    assert read_packed_uvarints(body, 1, len(body)) == (values, len(body))
    assert by_rule == values
    assert decode_node(body).data_deps == M.Node.FromString(body).data_deps == values


@settings(max_examples=200, deadline=None)
@given(nodes, nodes)
def test_repeated_head_fields_merge_as_protobuf_does(first, second):
    """Two heads back to back, then attributes: decode_node must merge them as protobuf
    does - the last id, name, type and duration, the deps of both fields concatenated."""
    head = encode_node_head(first.id, first.name, first.type, first.data_deps, first.ctrl_deps, first.duration_micros)
    body = head + encode_node(second)
    theirs = M.Node.FromString(body)
    ours = decode_node(body)
    assert (ours.id, ours.name, ours.type, ours.duration_micros) == (theirs.id, theirs.name, theirs.type,
                                                                     theirs.duration_micros)
    assert (ours.data_deps, ours.ctrl_deps) == (list(theirs.data_deps), list(theirs.ctrl_deps))
    assert ours.to_node().attrs == second.attrs


def test_a_node_laid_out_otherwise_takes_the_general_path():
    """Fields after the attributes, or unknown ones before them: read_node_head declines
    (None, or attributes not last) and decode_node's general loop reads the node."""
    after = encode_node(Node(7, "n", NodeType.COMP_NODE, attrs={"num_ops": 1})) + b"\x08\x09"
    unknown = b"\x08\x07" + encode_varint(15 << 3) + b"\x01" + encode_attr("num_ops", 1)
    repeated = b"\x08\x07\x08\x08" + encode_attr("num_ops", 1)
    out_of_order = b"\x12\x01n\x08\x07" + encode_attr("num_ops", 1)
    for body in (unknown, repeated, out_of_order):
        assert read_node_head(body, 0, len(body)) is None
    assert decode_node(repeated).id == M.Node.FromString(repeated).id == 8
    assert (decode_node(out_of_order).id, decode_node(out_of_order).name) == (7, "n")
    assert decode_node(after).id == M.Node.FromString(after).id == 9
    assert decode_node(unknown).id == 7
    assert decode_node(unknown).attrs == decode_node(after).attrs


def test_record_bounds_are_the_records():
    data = _trace(GOOD, GOOD)
    assert list(record_bounds(data)) == [tuple(r) for r in iter_records(data)]


# -- files -----------------------------------------------------------------------------------


def test_trace_writer_and_reader(tmp_path):
    path = tmp_path / "t.0.et"
    written = [
        Node(1, "mm", NodeType.COMP_NODE, duration_micros=3, attrs={"num_ops": 10, "tensor_size": 4}),
        Node(2, "ag", NodeType.COMM_COLL_NODE, data_deps=[1],
             attrs={"comm_type": int(CommType.ALL_GATHER), "comm_size": 8, "pg_name": "1"}),
    ]
    with TraceWriter(path) as w:
        w.write(written[0])
        w.write_encoded(encode_node(written[1]))
    assert w.nodes == 2
    assert sorted(os.listdir(tmp_path)) == ["t.0.et"]
    data = path.read_bytes()
    records = list(iter_records(data))
    assert M.GlobalMetadata.FromString(data[records[0].start:records[0].end]).version == "0.0.4"
    assert [M.Node.FromString(data[r.start:r.end]) for r in records[1:]] == [pb_node(n) for n in written]
    trace = read_trace(path)
    assert trace.metadata.version == "0.0.4"
    assert [n.to_node() for n in trace.nodes] == written


def test_killed_writer_leaves_no_file(tmp_path):
    path = tmp_path / "t.0.et"
    with pytest.raises(RuntimeError, match="killed"):
        with TraceWriter(path) as w:
            for i in range(1, 50_000):  # past the 1 MB buffer: the temporary file has bytes
                w.write(Node(i, "mm", NodeType.COMP_NODE, attrs={"num_ops": i}))
            raise RuntimeError("killed")
    assert os.listdir(tmp_path) == []


def test_writer_refuses_an_empty_body(tmp_path):
    with pytest.raises(ValueError, match="zero-length"):
        with TraceWriter(tmp_path / "t.0.et") as w:
            w.write_encoded(b"")
    assert os.listdir(tmp_path) == []


def test_comm_groups(tmp_path):
    path = tmp_path / "comm_group.json"
    write_comm_groups(path, {2: [2, 3], 1: (0, 1)})
    assert path.read_text() == '{"1": [0, 1], "2": [2, 3]}\n'
    assert json.loads(path.read_text()) == {"1": [0, 1], "2": [2, 3]}
    for bad in ({0: [0]}, {"1": [0]}, {1: [0, 0]}, {1: [-1]}):
        with pytest.raises(ValueError):
            write_comm_groups(tmp_path / "bad.json", bad)
    assert sorted(os.listdir(tmp_path)) == ["comm_group.json"]


# -- malformed bytes -------------------------------------------------------------------------


def _trace(*bodies: bytes) -> bytes:
    return frame(encode_metadata()) + b"".join(frame(b) for b in bodies)


GOOD = encode_node(Node(1, "mm", NodeType.COMP_NODE, attrs={"num_ops": 1}))


@pytest.mark.parametrize(
    "data, message",
    [
        (_trace(GOOD) + b"\x00" + _trace(GOOD), "zero-length record"),
        (_trace(GOOD)[:-1], "truncated record: its length says"),
        (_trace(GOOD) + b"\xff\xff\xff\xff\xff\x01" + GOOD, "not a varint32"),
        (_trace(GOOD) + b"\xff\xff", "varint runs past the end"),
        (_trace(GOOD[:-1]), "ends inside a field|runs past"),
        (_trace(b"\x08" + b"\xff" * 11), "varint longer than 10 bytes"),
        (_trace(b"\x0b\x00"), "wire type 3"),
        (_trace(encode_node_head(1, "n", 4) + b"\x52\x03\x0a\x01\xff"), "not valid UTF-8"),
        (_trace(encode_node_head(1, "n", 4) + b"\x52\x04\x0a\x01a\x19"), "runs past the end"),
        (_trace(encode_node_head(1, "n", 4) + b"\x52\x05\x0a\x01a\x1a\x00"), "field 3 has wire type 2"),
        (b"", "empty trace"),
    ],
)
def test_malformed(data, message):
    with pytest.raises(WireError, match=message):
        decode_trace(data)


def test_error_offset_is_the_record():
    data = _trace(GOOD, GOOD)
    bad = data + b"\x05\x08"
    with pytest.raises(WireError) as info:
        decode_trace(bad)
    assert info.value.offset == len(data)
    assert str(info.value).startswith(f"at byte {len(data)}: truncated record")


def test_double_is_little_endian_ieee():
    body = encode_attr("x", 1.5)
    assert body.endswith(struct.pack("<d", 1.5))
