"""The Chakra execution-trace schema (MLCommons Chakra, proto3 package `ChakraProtoMsg`)
as plain Python: the enums, the node stagec writes, and the field numbers that make up
the wire format (../shared/CHAKRA.md; docs/chakra.md).

stagec writes and reads the wire format itself (wire.py); no generated protobuf code is
on the product path. The field numbers below are the format: they must stay exactly
those of Chakra's et_def.proto.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum


class NodeType(IntEnum):
    INVALID_NODE = 0
    METADATA_NODE = 1
    MEM_LOAD_NODE = 2
    MEM_STORE_NODE = 3
    COMP_NODE = 4
    COMM_SEND_NODE = 5
    COMM_RECV_NODE = 6
    COMM_COLL_NODE = 7


class CommType(IntEnum):
    """Chakra's `CollectiveCommType`, the value of a COMM_COLL_NODE's `comm_type`."""

    ALL_REDUCE = 0
    REDUCE = 1
    ALL_GATHER = 2
    GATHER = 3
    SCATTER = 4
    BROADCAST = 5
    ALL_TO_ALL = 6
    REDUCE_SCATTER = 7
    REDUCE_SCATTER_BLOCK = 8
    BARRIER = 9


# Collectives ASTRA-sim (518bd51, feeder_v3) simulates; BROADCAST only waits its duration.
SIMULATED_COMM_TYPES = frozenset(
    {CommType.ALL_REDUCE, CommType.ALL_GATHER, CommType.ALL_TO_ALL, CommType.REDUCE_SCATTER, CommType.BROADCAST}
)
# Collectives ASTRA-sim aborts on.
UNSUPPORTED_COMM_TYPES = frozenset(
    {CommType.REDUCE, CommType.GATHER, CommType.SCATTER, CommType.REDUCE_SCATTER_BLOCK, CommType.BARRIER}
)

# What stagec writes as an attribute value. bool is tested before int (bool is an int).
AttrValue = bool | int | float | str | list[bool] | list[int]


@dataclass(slots=True)
class Node:
    """One trace node as stagec emits it. `attrs` keeps insertion order, which is the
    order the attributes are written in (ASTRA-sim takes the first match by name)."""

    id: int
    name: str
    type: NodeType
    data_deps: list[int] = field(default_factory=list)
    ctrl_deps: list[int] = field(default_factory=list)
    duration_micros: int = 0
    attrs: dict[str, AttrValue] = field(default_factory=dict)


class NodeField(IntEnum):
    """`Node`'s field numbers."""

    ID = 1  # uint64
    NAME = 2  # string
    TYPE = 3  # NodeType (varint)
    CTRL_DEPS = 4  # repeated uint64 (packed)
    DATA_DEPS = 5  # repeated uint64 (packed)
    START_TIME_MICROS = 6  # uint64
    DURATION_MICROS = 7  # uint64
    INPUTS = 8  # IOInfo
    OUTPUTS = 9  # IOInfo
    ATTR = 10  # repeated AttributeProto


class MetadataField(IntEnum):
    """`GlobalMetadata`'s field numbers."""

    VERSION = 1  # string
    ATTR = 2  # repeated AttributeProto


class AttrField(IntEnum):
    """`AttributeProto`'s field numbers: 1 name, 2 doc_string, then the `value` oneof.
    Each XXX_LIST is a message whose field 1 is `repeated <type> values`."""

    NAME = 1
    DOC_STRING = 2
    DOUBLE = 3
    DOUBLE_LIST = 4
    FLOAT = 5
    FLOAT_LIST = 6
    INT32 = 7
    INT32_LIST = 8
    INT64 = 9
    INT64_LIST = 10
    UINT32 = 11
    UINT32_LIST = 12
    UINT64 = 13
    UINT64_LIST = 14
    SINT32 = 15
    SINT32_LIST = 16
    SINT64 = 17
    SINT64_LIST = 18
    FIXED32 = 19
    FIXED32_LIST = 20
    FIXED64 = 21
    FIXED64_LIST = 22
    SFIXED32 = 23
    SFIXED32_LIST = 24
    SFIXED64 = 25
    SFIXED64_LIST = 26
    BOOL = 27
    BOOL_LIST = 28
    STRING = 29
    STRING_LIST = 30
    BYTES = 31
    BYTES_LIST = 32


# The AttributeProto value fields an integer attribute may use: ASTRA-sim converts any
# integer kind or bool to an integer.
INTEGER_ATTR_FIELDS = frozenset(
    {
        AttrField.INT32, AttrField.INT64, AttrField.UINT32, AttrField.UINT64, AttrField.SINT32,
        AttrField.SINT64, AttrField.FIXED32, AttrField.FIXED64, AttrField.SFIXED32, AttrField.SFIXED64,
        AttrField.BOOL,
    }
)
FLOAT_ATTR_FIELDS = frozenset({AttrField.DOUBLE, AttrField.FLOAT})
LIST_ATTR_FIELDS = frozenset(f for f in AttrField if f >= AttrField.DOUBLE and f % 2 == 0)

# Chakra's version string for GlobalMetadata; nothing reads it.
CHAKRA_VERSION = "0.0.4"
