"""Chakra execution traces (MLCommons Chakra, as ASTRA-sim reads them): the schema,
stagec's own wire encoder and decoder, and the trace checks behind `stagec check-trace`.
See docs/chakra.md.

    from stagec.runtime.chakra import Node, NodeType, CommType, TraceWriter, read_trace, check_trace
    with TraceWriter("out/trace.0.et") as w:
        w.write(Node(1, "ag", NodeType.COMM_COLL_NODE,
                     attrs={"comm_type": int(CommType.ALL_GATHER), "comm_size": 4096, "pg_name": ""}))
    assert check_trace("out").ok
"""

from stagec.runtime.chakra.check import CheckReport, TraceDirError, check_trace
from stagec.runtime.chakra.schema import (
    AttrField,
    AttrValue,
    CommType,
    Node,
    NodeType,
)
from stagec.runtime.chakra.wire import (
    DecodedAttr,
    DecodedMetadata,
    DecodedNode,
    Trace,
    TraceWriter,
    WireError,
    decode_attr,
    decode_node,
    decode_trace,
    encode_attr,
    encode_attr_value,
    encode_metadata,
    encode_node,
    encode_node_head,
    encode_varint,
    frame,
    iter_records,
    read_trace,
    write_comm_groups,
)

__all__ = [
    "AttrField", "AttrValue", "CommType", "Node", "NodeType",
    "DecodedAttr", "DecodedMetadata", "DecodedNode", "Trace", "TraceWriter", "WireError",
    "decode_attr", "decode_node", "decode_trace", "encode_attr", "encode_attr_value", "encode_metadata",
    "encode_node", "encode_node_head", "encode_varint", "frame", "iter_records", "read_trace", "write_comm_groups",
    "CheckReport", "TraceDirError", "check_trace",
]
