"""Chakra encoding throughput: stagec's own encoder (runtime/chakra/wire.py) against
protobuf's upb backend on the same nodes, in the same run.

    python bench/chakra_encode.py [--nodes N] [--repeats R]

Prints a table of nodes/s and writes the JSON where --json says
(bench/results/chakra_encode.json is the recorded one). The workload is
a transformer-like rank trace: compute nodes (num_ops, tensor_size, is_cpu_op) and
collectives (comm_type, comm_size, pg_name, is_cpu_op) in a 3:1 mix, each depending on
the node before it and some on one further back. Every path's bytes are checked equal
to protobuf's before timing.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time

from stagec.runtime.chakra.reference_proto import messages
from stagec.runtime.chakra.schema import CommType, Node, NodeType
from stagec.runtime.chakra.wire import (
    TraceWriter, decode_node, encode_attr, encode_node, encode_node_head, iter_records,
)
from results_io import write_json  # bench/, the script's own folder

HERE = os.path.dirname(os.path.abspath(__file__))


def workload(n: int) -> list[Node]:
    nodes = []
    for i in range(1, n + 1):
        deps = [i - 1] if i > 1 else []
        if i > 40 and i % 7 == 0:
            deps.append(i - 37)
        if i % 4 == 0:
            nodes.append(Node(i, f"layer{i // 40}.all_gather", NodeType.COMM_COLL_NODE, data_deps=deps, attrs={
                "is_cpu_op": False, "comm_type": int(CommType.ALL_GATHER if i % 8 else CommType.REDUCE_SCATTER),
                "comm_size": 4096 * 4096 * 2 // 8, "pg_name": "1"}))
        else:
            nodes.append(Node(i, f"layer{i // 40}.einsum", NodeType.COMP_NODE, data_deps=deps, duration_micros=120 + i % 13,
                              attrs={"is_cpu_op": False, "num_ops": 2 * 4096 * 4096 * 8192 // 8 + i % 5,
                                     "tensor_size": 3 * 4096 * 8192 * 2}))
    return nodes


def protobuf_encode(nodes, M):
    out = []
    Attr = M.AttributeProto
    for n in nodes:
        attrs = []
        for k, v in n.attrs.items():
            if isinstance(v, bool):
                attrs.append(Attr(name=k, bool_val=v))
            elif isinstance(v, int):
                attrs.append(Attr(name=k, int64_val=v))
            else:
                attrs.append(Attr(name=k, string_val=v))
        msg = M.Node(id=n.id, name=n.name, type=int(n.type), data_deps=n.data_deps, ctrl_deps=n.ctrl_deps,
                     duration_micros=n.duration_micros, attr=attrs)
        out.append(msg.SerializeToString())
    return out


def ours_encode(nodes):
    return [encode_node(n) for n in nodes]


def ours_pieces(nodes):
    """The emitter's fast path: the head per node, attribute records from a cache of
    byte pieces (what a per-rank template patch does)."""
    out = []
    for n in nodes:
        attrs = b"".join([encode_attr(k, v) for k, v in n.attrs.items()])
        out.append(encode_node_head(n.id, n.name, n.type, n.data_deps, n.ctrl_deps, n.duration_micros) + attrs)
    return out


def template_blocks(nodes):
    """Each node's attribute bytes, serialized once per distinct attribute set: what the
    emitter holds per template node before it patches ids and deps per rank."""
    cache = {}
    blocks = []
    for n in nodes:
        key = tuple(n.attrs.items())
        if key not in cache:
            cache[key] = b"".join([encode_attr(k, v) for k, v in n.attrs.items()])
        blocks.append(cache[key])
    return blocks


def ours_template(nodes, blocks):
    """The emitter's template path: the head encoded per node, the attribute block reused."""
    return [encode_node_head(n.id, n.name, n.type, n.data_deps, n.ctrl_deps, n.duration_micros) + block
            for n, block in zip(nodes, blocks)]


def ours_decode(bodies):
    return [decode_node(b) for b in bodies]


def protobuf_decode(bodies, M):
    parse = M.Node.FromString
    return [parse(b) for b in bodies]


def best_rate(fn, count: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return count / best


def write_file(nodes, directory):
    path = os.path.join(directory, "bench.0.et")
    with TraceWriter(path) as w:
        for n in nodes:
            w.write(n)
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE (bench/results/ holds the recorded ones; default: print only)")
    args = parser.parse_args(argv)
    from google.protobuf.internal import api_implementation

    M = messages()
    nodes = workload(args.nodes)
    reference = protobuf_encode(nodes, M)
    blocks = template_blocks(nodes)
    if ours_encode(nodes) != reference or ours_pieces(nodes) != reference or ours_template(nodes, blocks) != reference:
        print("stagec's bytes differ from protobuf's", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        path = write_file(nodes, tmp)
        data = open(path, "rb").read()
        assert [data[r.start:r.end] for r in list(iter_records(data))[1:]] == reference
        rates = {
            "encode: protobuf upb (build message + SerializeToString)": best_rate(lambda: protobuf_encode(nodes, M), len(nodes), args.repeats),
            "encode: stagec encode_node(Node)": best_rate(lambda: ours_encode(nodes), len(nodes), args.repeats),
            "encode: stagec encode_node_head + cached encode_attr pieces": best_rate(lambda: ours_pieces(nodes), len(nodes), args.repeats),
            "encode: stagec encode_node_head + pre-serialized attribute block": best_rate(lambda: ours_template(nodes, blocks), len(nodes), args.repeats),
            "write file: stagec TraceWriter.write(Node)": best_rate(lambda: write_file(nodes, tmp), len(nodes), args.repeats),
            "decode: protobuf upb Node.FromString": best_rate(lambda: protobuf_decode(reference, M), len(nodes), args.repeats),
            "decode: stagec decode_node": best_rate(lambda: ours_decode(reference), len(nodes), args.repeats),
        }
    base_enc = rates["encode: protobuf upb (build message + SerializeToString)"]
    base_dec = rates["decode: protobuf upb Node.FromString"]
    print(f"{args.nodes:,} nodes, {sum(map(len, reference)) / len(reference):.1f} bytes per node body; best of {args.repeats}; "
          f"protobuf {api_implementation.Type()} backend")
    print(f"{'path':<64} {'nodes/s':>12} {'vs protobuf':>12}")
    rows = []
    for name, rate in rates.items():
        base = base_dec if name.startswith("decode") else base_enc
        print(f"{name:<64} {rate:>12,.0f} {rate / base:>11.2f}x")
        rows.append({"path": name, "nodes_per_s": round(rate), "vs_protobuf": round(rate / base, 3)})
    import google.protobuf

    doc = {
        "benchmark": "chakra_encode",
        "nodes": args.nodes,
        "repeats": args.repeats,
        "bytes_per_node": round(sum(map(len, reference)) / len(reference), 1),
        "protobuf": f"{google.protobuf.__version__} ({api_implementation.Type()})",
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus",
        "load_average_1min": round(os.getloadavg()[0], 2),  # the machine is shared: ratios are same-run
        "results": rows,
    }
    if args.json:
        write_json(args.json, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
