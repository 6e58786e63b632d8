"""Chakra's schema as a protobuf descriptor built at run time, for cross-checks only.

The tests (tests/unit/chakra/test_wire.py) and the benchmark (bench/chakra_encode.py)
compare stagec's own encoder and decoder (wire.py) with protobuf's: they must agree on
every byte. Nothing on the product path imports this module; it needs protobuf (>= 5,
the upb backend), which stagec depends on anyway.

The messages, fields and numbers are Chakra's et_def.proto (package `ChakraProtoMsg`)
as ../shared/CHAKRA.md lists them.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

from stagec.runtime.chakra.schema import AttrField, CommType, NodeType

PACKAGE = "ChakraProtoMsg"

# AttributeProto's oneof value kinds: (field name, scalar type name, list message name).
_ATTR_KINDS = [
    ("double", "double", "DoubleList"), ("float", "float", "FloatList"),
    ("int32", "int32", "Int32List"), ("int64", "int64", "Int64List"),
    ("uint32", "uint32", "Uint32List"), ("uint64", "uint64", "Uint64List"),
    ("sint32", "sint32", "Sint32List"), ("sint64", "sint64", "Sint64List"),
    ("fixed32", "fixed32", "Fixed32List"), ("fixed64", "fixed64", "Fixed64List"),
    ("sfixed32", "sfixed32", "Sfixed32List"), ("sfixed64", "sfixed64", "Sfixed64List"),
    ("bool", "bool", "BoolList"), ("string", "string", "StringList"), ("bytes", "bytes", "BytesList"),
]


def _file_descriptor():
    from google.protobuf import descriptor_pb2

    F = descriptor_pb2.FieldDescriptorProto
    scalar = {
        "double": F.TYPE_DOUBLE, "float": F.TYPE_FLOAT, "int32": F.TYPE_INT32, "int64": F.TYPE_INT64,
        "uint32": F.TYPE_UINT32, "uint64": F.TYPE_UINT64, "sint32": F.TYPE_SINT32, "sint64": F.TYPE_SINT64,
        "fixed32": F.TYPE_FIXED32, "fixed64": F.TYPE_FIXED64, "sfixed32": F.TYPE_SFIXED32,
        "sfixed64": F.TYPE_SFIXED64, "bool": F.TYPE_BOOL, "string": F.TYPE_STRING, "bytes": F.TYPE_BYTES,
    }
    fd = descriptor_pb2.FileDescriptorProto(name="stagec_chakra_reference.proto", package=PACKAGE, syntax="proto3")

    def add_field(msg, name, number, type_, label=F.LABEL_OPTIONAL, type_name=None, oneof=None):
        f = msg.field.add(name=name, number=number, type=type_, label=label)
        if type_name:
            f.type_name = f".{PACKAGE}.{type_name}"
        if oneof is not None:
            f.oneof_index = oneof
        return f

    for _, type_, list_name in _ATTR_KINDS:
        msg = fd.message_type.add(name=list_name)
        add_field(msg, "values", 1, scalar[type_], F.LABEL_REPEATED)

    attr = fd.message_type.add(name="AttributeProto")
    add_field(attr, "name", AttrField.NAME, F.TYPE_STRING)
    add_field(attr, "doc_string", AttrField.DOC_STRING, F.TYPE_STRING)
    attr.oneof_decl.add(name="value")
    for i, (field_name, type_, list_name) in enumerate(_ATTR_KINDS):
        add_field(attr, f"{field_name}_val", AttrField.DOUBLE + 2 * i, scalar[type_], oneof=0)
        add_field(attr, f"{field_name}_list", AttrField.DOUBLE + 2 * i + 1, F.TYPE_MESSAGE,
                  type_name=list_name, oneof=0)

    meta = fd.message_type.add(name="GlobalMetadata")
    add_field(meta, "version", 1, F.TYPE_STRING)
    add_field(meta, "attr", 2, F.TYPE_MESSAGE, F.LABEL_REPEATED, "AttributeProto")

    io = fd.message_type.add(name="IOInfo")
    for number, name in ((1, "values"), (2, "shapes"), (3, "types")):
        add_field(io, name, number, F.TYPE_STRING)

    node = fd.message_type.add(name="Node")
    add_field(node, "id", 1, F.TYPE_UINT64)
    add_field(node, "name", 2, F.TYPE_STRING)
    add_field(node, "type", 3, F.TYPE_ENUM, type_name="NodeType")
    add_field(node, "ctrl_deps", 4, F.TYPE_UINT64, F.LABEL_REPEATED)
    add_field(node, "data_deps", 5, F.TYPE_UINT64, F.LABEL_REPEATED)
    add_field(node, "start_time_micros", 6, F.TYPE_UINT64)
    add_field(node, "duration_micros", 7, F.TYPE_UINT64)
    add_field(node, "inputs", 8, F.TYPE_MESSAGE, type_name="IOInfo")
    add_field(node, "outputs", 9, F.TYPE_MESSAGE, type_name="IOInfo")
    add_field(node, "attr", 10, F.TYPE_MESSAGE, F.LABEL_REPEATED, "AttributeProto")

    for enum_name, members in (("NodeType", NodeType), ("CollectiveCommType", CommType)):
        enum = fd.enum_type.add(name=enum_name)
        for member in members:
            enum.value.add(name=member.name, number=int(member))
    return fd


@functools.cache
def messages() -> SimpleNamespace:
    """The message classes: .Node, .GlobalMetadata, .AttributeProto, .IOInfo, and one
    per list kind (.Int64List, .BoolList, ...)."""
    from google.protobuf import descriptor_pool, message_factory

    pool = descriptor_pool.DescriptorPool()
    file = pool.Add(_file_descriptor())
    del file
    classes = {}
    for name in ["Node", "GlobalMetadata", "AttributeProto", "IOInfo"] + [k[2] for k in _ATTR_KINDS]:
        classes[name] = message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{name}"))
    return SimpleNamespace(**classes)


# AttrField number -> the AttributeProto field name protobuf knows it by.
ATTR_FIELD_NAMES = {
    AttrField.DOUBLE + 2 * i + j: f"{kind[0]}_{'list' if j else 'val'}"
    for i, kind in enumerate(_ATTR_KINDS)
    for j in (0, 1)
}
