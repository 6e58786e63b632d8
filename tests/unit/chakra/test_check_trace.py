"""stagec check-trace: a clean multi-rank trace passes with exact counts; every defect
kind of CHAKRA.md (what ASTRA-sim crashes on, and what it silently gets wrong while
exiting 0) fails with a message naming the file, the node and what would be right."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stagec.runtime.chakra.check import TraceDirError, check_trace
from stagec.runtime.chakra.schema import CommType, Node, NodeType
from stagec.runtime.chakra.wire import (
    TraceWriter,
    encode_attr,
    encode_metadata,
    encode_node,
    encode_node_head,
    encode_varint,
    frame,
    write_comm_groups,
)
from stagec.tools import stagec_check_trace

COMP, COLL = NodeType.COMP_NODE, NodeType.COMM_COLL_NODE
SEND, RECV = NodeType.COMM_SEND_NODE, NodeType.COMM_RECV_NODE
AG, AR, RS = int(CommType.ALL_GATHER), int(CommType.ALL_REDUCE), int(CommType.REDUCE_SCATTER)
GROUPS = {1: [0, 1], 2: [2, 3]}  # tensor-parallel pairs; pipeline stage 0 = ranks 0-1, stage 1 = ranks 2-3


def comp(i, deps=(), **attrs):
    return Node(i, f"mm{i}", COMP, data_deps=list(deps), duration_micros=5,
                attrs={"is_cpu_op": False, "num_ops": 1000, "tensor_size": 64, **attrs})


def coll(i, comm_type, size, pg, deps=(), **attrs):
    return Node(i, f"coll{i}", COLL, data_deps=list(deps),
                attrs={"is_cpu_op": False, "comm_type": comm_type, "comm_size": size, "pg_name": pg, **attrs})


def send(i, dst, tag, size, deps=(), **attrs):
    return Node(i, f"send{i}", SEND, data_deps=list(deps),
                attrs={"comm_dst": dst, "comm_tag": tag, "comm_size": size, **attrs})


def recv(i, src, tag, size, deps=(), **attrs):
    return Node(i, f"recv{i}", RECV, data_deps=list(deps),
                attrs={"comm_src": src, "comm_tag": tag, "comm_size": size, **attrs})


def clean_ranks() -> dict[int, list[Node]]:
    """4 ranks, 2 pipeline stages of TP=2: each rank computes, all-gathers on its TP
    group twice, reduce-scatters once, all-reduces over all ranks; stage 0 sends two
    activations to its stage-1 peer."""
    ranks = {}
    for r in range(4):
        pg = "1" if r < 2 else "2"
        nodes = [comp(1), coll(2, AG, 4096, pg, [1]), comp(3, [2]), coll(4, AG, 4096, pg, [3]),
                 coll(5, RS, 8192, pg, [4]), coll(6, AR, 1000, "", [5])]
        if r < 2:
            nodes += [send(7, r + 2, 0, 512, [6]), send(8, r + 2, 1, 256, [6])]
        else:
            nodes += [recv(7, r - 2, 0, 512), recv(8, r - 2, 1, 256), comp(9, [7, 8])]
        ranks[r] = nodes
    return ranks


def write(directory, ranks: dict[int, list[Node]], groups=GROUPS, prefix="t"):
    directory.mkdir(exist_ok=True)
    for r, nodes in ranks.items():
        with TraceWriter(directory / f"{prefix}.{r}.et") as w:
            for node in nodes:
                w.write(node)
    if groups is not None:
        write_comm_groups(directory / "comm_group.json", groups)
    return directory


def defects_of(directory, **kwargs) -> list[str]:
    report = check_trace(directory, **kwargs)
    assert not report.ok
    return report.defects


def one_defect(directory, pattern: str) -> str:
    defects = defects_of(directory)
    assert len(defects) == 1, defects
    assert re.search(pattern, defects[0]), defects[0]
    return defects[0]


# -- a clean trace -----------------------------------------------------------------------------

STAGE0 = {"nodes": 8, "COMP_NODE": 2, "COMM_SEND_NODE": 2, "COMM_COLL_NODE": 4,
          "ALL_REDUCE": {"count": 1, "bytes": 1000}, "ALL_GATHER": {"count": 2, "bytes": 8192},
          "REDUCE_SCATTER": {"count": 1, "bytes": 8192}, "SEND": {"count": 2, "bytes": 768}}
STAGE1 = {"nodes": 9, "COMP_NODE": 3, "COMM_RECV_NODE": 2, "COMM_COLL_NODE": 4,
          "ALL_REDUCE": {"count": 1, "bytes": 1000}, "ALL_GATHER": {"count": 2, "bytes": 8192},
          "REDUCE_SCATTER": {"count": 1, "bytes": 8192}, "RECV": {"count": 2, "bytes": 768}}


def test_clean_trace_passes_with_exact_counts(tmp_path, capsys):
    write(tmp_path, clean_ranks())
    report = check_trace(tmp_path)
    assert report.ok, report.defects
    assert report.prefix == "t"
    assert report.to_json() == {"ranks": {"0": STAGE0, "1": STAGE0, "2": STAGE1, "3": STAGE1}}
    assert stagec_check_trace.main([str(tmp_path), "--json"]) == 0
    out = capsys.readouterr().out
    assert json.loads(out) == report.to_json()
    assert out.count("\n") == 1


def test_clean_trace_table_groups_identical_ranks(tmp_path, capsys):
    write(tmp_path, clean_ranks())
    assert stagec_check_trace.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "4 ranks, no defects" in out
    assert re.search(r"│ 0-1 +│ +8 │", out) and re.search(r"│ 2-3 +│ +9 │", out)
    assert "2 x, 8.00 KiB" in out and "2 x, 768 B" in out


def test_pool_gives_the_same_report(tmp_path):
    """16 ranks: enough files for the process pool; same counts and defects as in-process."""
    ranks = {}
    for r in range(16):
        pg = str(r // 2 + 1)
        nodes = [comp(1), coll(2, AG, 4096 * (r // 2 + 1), pg, [1]), coll(3, AR, 64, "0", [2])]
        nodes.append(send(4, r + 1, 3, 128, [3]) if r % 2 == 0 else recv(4, r - 1, 3, 128))
        ranks[r] = nodes
    ranks[5][1].attrs["comm_size"] = 1  # a defect found through the pool too
    write(tmp_path, ranks, groups={g + 1: [2 * g, 2 * g + 1] for g in range(8)})
    serial = check_trace(tmp_path, jobs=1)
    pooled = check_trace(tmp_path, jobs=2)
    assert serial.to_json() == pooled.to_json()
    assert serial.defects == pooled.defects
    assert len(serial.defects) == 1 and serial.defects[0].startswith("t.5.et: node 2 'coll2': collective #1 on group '3'")


def test_prefix_option_and_detection(tmp_path):
    write(tmp_path, clean_ranks(), prefix="a")
    write(tmp_path, clean_ranks(), prefix="b.c")
    with pytest.raises(TraceDirError, match="several prefixes .*a, b.c.*--prefix"):
        check_trace(tmp_path)
    assert check_trace(tmp_path, prefix="b.c").ok
    with pytest.raises(TraceDirError, match=r"no trace files x.<rank>.et .*found: a, b.c"):
        check_trace(tmp_path, prefix="x")


def test_usage_errors_exit_2(tmp_path, capsys):
    assert stagec_check_trace.main([str(tmp_path / "missing")]) == 2
    assert "is not a directory" in capsys.readouterr().err
    assert stagec_check_trace.main([str(tmp_path)]) == 2
    assert "no trace files <prefix>.<rank>.et" in capsys.readouterr().err


def test_defects_exit_1(tmp_path, capsys):
    ranks = clean_ranks()
    ranks[1][0].id = 2
    write(tmp_path, ranks)
    with pytest.raises(SystemExit) as info:
        stagec_check_trace.run(stagec_check_trace_args(tmp_path))
    assert info.value.code == 1
    captured = capsys.readouterr()
    assert captured.out.startswith("t.1.et: node 2 'coll2': duplicate node id 2")
    assert "1 defect(s) in t.*.et (4 rank file(s))" in captured.err


def stagec_check_trace_args(directory):
    import argparse

    parser = argparse.ArgumentParser()
    stagec_check_trace.add_arguments(parser)
    return parser.parse_args([str(directory)])


# -- files and records -------------------------------------------------------------------------


def test_ranks_not_contiguous(tmp_path):
    ranks = clean_ranks()
    write(tmp_path, {r: ranks[r] for r in (0, 1, 3)}, groups=None)
    defects = defects_of(tmp_path)
    assert defects[0] == ("t.*.et: ranks are not 0..3 contiguous: missing t.2.et; "
                          "ASTRA-sim takes one file per rank 0..N-1")


def test_rank_with_leading_zeros_and_twice(tmp_path):
    write(tmp_path, clean_ranks())
    (tmp_path / "t.01.et").write_bytes((tmp_path / "t.1.et").read_bytes())
    (tmp_path / "t.02.et").write_bytes((tmp_path / "t.2.et").read_bytes())
    (tmp_path / "t.2.et").unlink()
    defects = defects_of(tmp_path)
    assert "t.01.et, t.1.et: several files of rank 1; keep one, named t.1.et" in defects
    assert "t.02.et: rank 2 is written with leading zeros; name it t.2.et" in defects


def _raw(tmp_path, rank_bytes: bytes):
    ranks = clean_ranks()
    write(tmp_path, ranks)
    (tmp_path / "t.1.et").write_bytes(rank_bytes)
    return tmp_path


def _body(node):
    return frame(encode_node(node))


def test_zero_length_record(tmp_path):
    ranks = clean_ranks()
    data = frame(encode_metadata()) + b"".join(_body(n) for n in ranks[1][:3]) + b"\x00" + b"".join(
        _body(n) for n in ranks[1][3:])
    defects = defects_of(_raw(tmp_path, data))
    assert re.match(r"t\.1\.et: record 4 \(byte \d+\): zero-length record .*nothing after this point was checked",
                    defects[0]), defects[0]


def test_truncated_record(tmp_path):
    ranks = clean_ranks()
    data = frame(encode_metadata()) + b"".join(_body(n) for n in ranks[1])
    defects = defects_of(_raw(tmp_path, data[:-3]))
    assert re.match(r"t\.1\.et: record 8 \(byte \d+\): truncated record: its length says \d+ bytes, \d+ are left",
                    defects[0]), defects[0]
    # The cut rank's sends are not judged: no noise about recvs of ranks 3 without a send.
    assert len(defects) == 1, defects


def test_bad_varint_length(tmp_path):
    data = frame(encode_metadata()) + b"\xff\xff\xff\xff\xff\x01" + b"x"
    defects = defects_of(_raw(tmp_path, data))
    at = len(frame(encode_metadata()))
    assert defects[0].startswith(f"t.1.et: record 1 (byte {at}): record length is not a varint32 (6 bytes")


def test_malformed_node_is_reported_and_the_rest_checked(tmp_path):
    ranks = clean_ranks()
    bad = encode_node_head(50, "bad", COMP) + b"\x52\x03\x0a\x01\xff"  # attribute name not UTF-8
    data = frame(encode_metadata()) + frame(bad) + b"".join(_body(n) for n in ranks[1])
    defects = defects_of(_raw(tmp_path, data))
    assert defects == [f"t.1.et: record 1 (byte {len(frame(encode_metadata()))}): a string field is not valid UTF-8; "
                       "it must be a well-formed Node message"]


def test_node_written_as_record_zero(tmp_path):
    ranks = clean_ranks()
    data = b"".join(_body(n) for n in ranks[1])  # no GlobalMetadata: node 1 is taken as one
    defects = defects_of(_raw(tmp_path, data))
    assert defects[0] == ("t.1.et: record 0 (byte 0) is a COMP_NODE (node 1 'mm1'), which readers drop; readers take "
                          "record 0 as metadata whatever it is: write GlobalMetadata{version: \"0.0.4\"} first")


def test_record_zero_not_metadata(tmp_path):
    ranks = clean_ranks()
    data = frame(b"\x18\x05") + b"".join(_body(n) for n in ranks[1])
    defects = defects_of(_raw(tmp_path, data))
    assert defects == ["t.1.et: record 0 (byte 0) is not a GlobalMetadata (fields [3], version ''); readers take record 0 "
                       "as metadata whatever it is: write GlobalMetadata{version: \"0.0.4\"} first"]


def test_empty_file(tmp_path):
    assert "t.1.et: empty file; a trace starts with a GlobalMetadata record" in defects_of(_raw(tmp_path, b""))


# -- nodes -------------------------------------------------------------------------------------


def test_duplicate_node_ids(tmp_path):
    ranks = clean_ranks()
    ranks[0][2].id = 1
    ranks[0][3].data_deps = [1]
    write(tmp_path, ranks)
    one_defect(tmp_path, r"^t\.0\.et: node 1 'mm3': duplicate node id 1 \(node 'mm1' has it too\); ids must be unique "
                         r"in a file \(ASTRA-sim silently keeps one\)$")


@pytest.mark.parametrize("kind", ["data_deps", "ctrl_deps"])
def test_dependency_on_a_missing_node(tmp_path, kind):
    ranks = clean_ranks()
    getattr(ranks[2][2], kind).append(99)
    write(tmp_path, ranks)
    one_defect(tmp_path, rf"^t\.2\.et: node 3 'mm3': {kind} names node 99, which is not in this file; dependencies "
                         "must name nodes of the same file$")


def test_dependency_cycle(tmp_path):
    ranks = clean_ranks()
    ranks[0][0].ctrl_deps = [4]  # 1 -> 2 -> 3 -> 4 -> 1
    ranks[3][0].data_deps = [1]  # a self-loop
    write(tmp_path, ranks)
    defects = defects_of(tmp_path)
    assert defects == [
        "t.0.et: node 1 'mm1': dependency cycle 1 -> 2 -> 3 -> 4 -> 1; the graph must be acyclic "
        "(ASTRA-sim never issues these nodes and still exits 0)",
        "t.3.et: node 1 'mm1': dependency cycle 1 -> 1; the graph must be acyclic "
        "(ASTRA-sim never issues these nodes and still exits 0)",
    ]


def test_long_cycle_is_found_without_recursion(tmp_path):
    """100,000 chained nodes closed into one cycle, plus two more disjoint cycles."""
    n = 100_000
    nodes = [comp(1, [n])] + [comp(i, [i - 1]) for i in range(2, n + 1)]
    nodes += [comp(n + 1, [n + 2]), comp(n + 2, [n + 1]), comp(n + 3, [n + 1])]
    write(tmp_path, {0: nodes}, groups=None)
    defects = defects_of(tmp_path)
    assert len(defects) == 2, defects
    assert defects[0].startswith("t.0.et: node 1 'mm1': dependency cycle 1 -> 2 -> 3 -> ") and \
        f"-> ... ({n} nodes)" in defects[0]
    assert defects[1].startswith(f"t.0.et: node {n + 1} 'mm{n + 1}': dependency cycle {n + 1} -> {n + 2} -> {n + 1};")


@pytest.mark.parametrize("node_type, text", [
    (NodeType.METADATA_NODE, "METADATA_NODE; ASTRA-sim aborts on it: never emit one"),
    (NodeType.INVALID_NODE, "INVALID_NODE \\(type 0\\); a node is a COMP, COMM_COLL"),
    (12, "unknown node type 12; a node is a COMP"),
    (-1, "unknown node type -1; a node is a COMP"),  # an int32 enum, sign-extended on the wire
])
def test_node_types_astra_sim_aborts_on(tmp_path, node_type, text):
    ranks = clean_ranks()
    ranks[1].append(Node(20, "meta", node_type))
    write(tmp_path, ranks)
    one_defect(tmp_path, rf"^t\.1\.et: node 20 'meta': {text}")


# -- attributes --------------------------------------------------------------------------------


def test_float_in_an_integer_attribute(tmp_path):
    ranks = clean_ranks()
    ranks[0][1].attrs["comm_size"] = 4096.0
    ranks[0][0].attrs["num_ops"] = 1e3
    write(tmp_path, ranks)
    defects = defects_of(tmp_path)
    assert defects[0] == ("t.0.et: node 1 'mm1': attribute 'num_ops' is double (field 3) = 1000.0; ASTRA-sim crashes on a "
                          "float there: write an int64 (field 9)")
    assert defects[1] == ("t.0.et: node 2 'coll2': attribute 'comm_size' is double (field 3) = 4096.0; ASTRA-sim crashes "
                          "on a float there: write an int64 (field 9)")
    assert len(defects) == 2, defects  # the bad collective is not also reported as a sequence mismatch


def test_string_in_an_integer_attribute(tmp_path):
    ranks = clean_ranks()
    ranks[3][6].attrs["comm_tag"] = "0"
    write(tmp_path, ranks)
    defects = defects_of(tmp_path)
    assert defects[0] == ("t.3.et: node 7 'recv7': attribute 'comm_tag' is string (field 29) = '0'; ASTRA-sim reads only "
                          "an integer there: write an int64 (field 9)")
    assert len(defects) == 2 and "send to rank 3 (tag 0, 512 bytes) has no matching recv" in defects[1]


def test_integer_kinds_other_than_int64_are_accepted(tmp_path):
    """ASTRA-sim converts any integer kind or bool: a uint32 comm_size is fine."""
    ranks = clean_ranks()
    write(tmp_path, ranks)
    uint32_size = encode_attr("comm_size", 4096).replace(b"\x48", b"\x58", 1)  # field 9 (int64) -> 11 (uint32)
    assert uint32_size != encode_attr("comm_size", 4096)
    body = encode_node_head(2, "coll2", COLL, [1]) + encode_attr("is_cpu_op", False) + encode_attr("comm_type", AG) + \
        uint32_size + encode_attr("pg_name", "1")
    data = frame(encode_metadata()) + _body(ranks[0][0]) + frame(body) + b"".join(_body(n) for n in ranks[0][2:])
    (tmp_path / "t.0.et").write_bytes(data)
    assert check_trace(tmp_path).ok


def test_non_string_pg_name(tmp_path):
    ranks = clean_ranks()
    ranks[2][1].attrs["pg_name"] = 2
    write(tmp_path, ranks)
    defects = defects_of(tmp_path)
    assert defects[0] == ("t.2.et: node 2 'coll2': attribute 'pg_name' is int64 (field 9) = 2; ASTRA-sim reads only a "
                          "string (else it silently uses the wrong group): write \"2\" as a string (field 29)")


def test_involved_dim_must_be_a_bool_list(tmp_path):
    ranks = clean_ranks()
    ranks[0][5].attrs["involved_dim"] = [1, 0]
    for r in range(4):
        ranks[r][5].attrs.setdefault("involved_dim", [True, False])
    write(tmp_path, ranks)
    one_defect(tmp_path, r"^t\.0\.et: node 6 'coll6': attribute 'involved_dim' is int64_list \(field 10\); it must be "
                         r"a bool list \(field 28\)$")


@pytest.mark.parametrize("index", [1, 6])
def test_is_cpu_op_true_on_a_communication_node(tmp_path, index):
    ranks = clean_ranks()
    ranks[0][index].attrs["is_cpu_op"] = True
    write(tmp_path, ranks)
    node = ranks[0][index]
    one_defect(tmp_path, rf"^t\.0\.et: node {node.id} '{node.name}': is_cpu_op is true on a {node.type.name}; "
                         "ASTRA-sim aborts: set it false or leave it out$")


def test_is_cpu_op_true_on_compute_is_fine(tmp_path):
    ranks = clean_ranks()
    ranks[0][0].attrs["is_cpu_op"] = True
    write(tmp_path, ranks)
    assert check_trace(tmp_path).ok


@pytest.mark.parametrize("comm_type", [CommType.REDUCE, CommType.GATHER, CommType.SCATTER,
                                       CommType.REDUCE_SCATTER_BLOCK, CommType.BARRIER])
def test_collectives_astra_sim_aborts_on(tmp_path, comm_type):
    ranks = clean_ranks()
    for r in range(4):
        ranks[r].append(coll(30, int(comm_type), 64, ""))
    write(tmp_path, ranks)
    defects = defects_of(tmp_path)
    assert defects == [
        f"t.{r}.et: node 30 'coll30': comm_type {comm_type.name} ({int(comm_type)}); ASTRA-sim aborts on it: use one it "
        "simulates (ALL_REDUCE, ALL_GATHER, BROADCAST, ALL_TO_ALL, REDUCE_SCATTER)"
        for r in range(4)
    ]


def test_unknown_comm_type(tmp_path):
    ranks = clean_ranks()
    for r in range(4):
        ranks[r].append(coll(30, 42, 64, ""))
    write(tmp_path, ranks)
    assert defects_of(tmp_path)[0].startswith("t.0.et: node 30 'coll30': comm_type 42 is not a CollectiveCommType")


@pytest.mark.parametrize("index, name", [(1, "comm_type"), (1, "comm_size"), (6, "comm_dst"), (6, "comm_tag"),
                                         (6, "comm_size")])
def test_missing_required_attribute_on_a_sender(tmp_path, index, name):
    ranks = clean_ranks()
    node = ranks[0][index]
    del node.attrs[name]
    write(tmp_path, ranks)
    defects = defects_of(tmp_path)
    needs = "comm_type, comm_size" if node.type == COLL else "comm_dst, comm_tag, comm_size"
    assert defects[0] == (f"t.0.et: node {node.id} '{node.name}': {node.type.name} without '{name}'; it needs {needs} "
                          "(integers)")


@pytest.mark.parametrize("name", ["comm_src", "comm_tag", "comm_size"])
def test_missing_required_attribute_on_a_recv(tmp_path, name):
    ranks = clean_ranks()
    del ranks[2][6].attrs[name]
    write(tmp_path, ranks)
    defects = defects_of(tmp_path)
    assert defects[0] == (f"t.2.et: node 7 'recv7': COMM_RECV_NODE without '{name}'; it needs comm_src, comm_tag, "
                          "comm_size (integers)")
    # Its sender is then unmatched (ASTRA-sim would hang on it).
    assert defects[1].startswith("t.0.et: node 7 'send7': send to rank 2 (tag 0, 512 bytes) has no matching recv")


# -- communicator groups -----------------------------------------------------------------------


def test_pg_name_not_a_group(tmp_path):
    ranks = clean_ranks()
    for r in (2, 3):
        for node in ranks[r]:
            if node.attrs.get("pg_name") == "2":
                node.attrs["pg_name"] = "7"
    write(tmp_path, ranks)
    defects = defects_of(tmp_path)
    assert defects[0] == ("t.2.et: node 2 'coll2': pg_name '7' is not a group of comm_group.json (groups: 1, 2); use one "
                          "of them, or \"\" for all ranks")
    assert len(defects) == 6  # three collectives on each of ranks 2 and 3


def test_no_comm_group_file(tmp_path):
    write(tmp_path, clean_ranks(), groups=None)
    defects = defects_of(tmp_path)
    assert defects[0] == ("t.0.et: node 2 'coll2': pg_name '1' but there is no comm_group.json; write comm_group.json "
                          "with group '1', or use \"\" for all ranks")


def test_rank_not_a_member_of_its_group(tmp_path):
    write(tmp_path, clean_ranks(), groups={1: [0, 1], 2: [1, 2]})
    defects = defects_of(tmp_path)
    assert defects[0] == ("t.3.et: node 2 'coll2': rank 3 is not a member of group '2' [1, 2] (comm_group.json); a rank "
                          "joins only its own groups' collectives")
    # and rank 1, a member of group 2, issues none of its collectives
    assert any(d.startswith("t.1.et: group '2': 0 collectives where rank 2 issues 3") for d in defects), defects


def test_malformed_comm_group_file(tmp_path):
    write(tmp_path, clean_ranks())
    (tmp_path / "comm_group.json").write_text('{"1": [0, 1], "2": [2, 3], "0": [0], "x": [1], "3": [4, 4], "4": "ab"}')
    defects = defects_of(tmp_path)
    assert defects == [
        "comm_group.json: group key '0' is not an integer > 0 written as a string (e.g. \"1\"); group 0 (all ranks) is implicit",
        "comm_group.json: group key 'x' is not an integer > 0 written as a string (e.g. \"1\"); group 0 (all ranks) is implicit",
        "comm_group.json: group '3' names ranks [4] outside 0..3",
        "comm_group.json: group '3' lists ranks [4] more than once",
        "comm_group.json: group '4' is \"ab\"; it must be a list of rank numbers",
    ]
    (tmp_path / "comm_group.json").write_text("[1, 2")
    assert defects_of(tmp_path)[0].startswith("comm_group.json: not readable as JSON")


# -- send / recv -------------------------------------------------------------------------------


def test_send_without_recv(tmp_path):
    ranks = clean_ranks()
    ranks[3].pop(7)  # rank 3's recv of tag 1
    ranks[3][-1].data_deps = [7]
    write(tmp_path, ranks)
    one_defect(tmp_path, r"^t\.1\.et: node 8 'send8': send to rank 3 \(tag 1, 256 bytes\) has no matching recv in "
                         r"t\.3\.et; write a COMM_RECV_NODE with comm_src 1, comm_tag 1, comm_size 256 there "
                         r"\(ASTRA-sim waits for it forever and exits 0\)$")


def test_recv_without_send(tmp_path):
    ranks = clean_ranks()
    ranks[0].pop(6)
    write(tmp_path, ranks)
    one_defect(tmp_path, r"^t\.2\.et: node 7 'recv7': recv from rank 0 \(tag 0, 512 bytes\) has no matching send in "
                         r"t\.0\.et; write a COMM_SEND_NODE with comm_dst 2, comm_tag 0, comm_size 512 there")


def test_send_recv_size_mismatch(tmp_path):
    ranks = clean_ranks()
    ranks[2][6].attrs["comm_size"] = 500
    write(tmp_path, ranks)
    defects = defects_of(tmp_path)
    assert defects == [
        "t.0.et: node 7 'send7': send to rank 2 (tag 0, 512 bytes) has no matching recv in t.2.et (there is one of 500 "
        "bytes: sizes must match); write a COMM_RECV_NODE with comm_src 0, comm_tag 0, comm_size 512 there "
        "(ASTRA-sim waits for it forever and exits 0)",
        "t.2.et: node 7 'recv7': recv from rank 0 (tag 0, 500 bytes) has no matching send in t.0.et (there is one of 512 "
        "bytes: sizes must match); write a COMM_SEND_NODE with comm_dst 2, comm_tag 0, comm_size 500 there "
        "(ASTRA-sim waits for it forever and exits 0)",
    ]


def test_two_sends_one_recv(tmp_path):
    ranks = clean_ranks()
    ranks[1].append(send(9, 3, 1, 256))
    write(tmp_path, ranks)
    one_defect(tmp_path, r"^t\.1\.et: node 8 'send8': send to rank 3 \(tag 1, 256 bytes\) has no matching recv")


def test_send_comm_src_must_be_own_rank(tmp_path):
    ranks = clean_ranks()
    ranks[1][6].attrs["comm_src"] = 0
    ranks[0][6].attrs["comm_src"] = 0  # right: its own rank
    write(tmp_path, ranks)
    defects = defects_of(tmp_path)
    assert defects[0] == ("t.1.et: node 7 'send7': comm_src 0 on a send of rank 1; it must be the sender's own rank 1, "
                          "or left out")


def test_negative_tag(tmp_path):
    ranks = clean_ranks()
    ranks[0][6].attrs["comm_tag"] = -1
    ranks[2][6].attrs["comm_tag"] = -1
    write(tmp_path, ranks)
    defects = defects_of(tmp_path)
    assert defects == ["t.0.et: node 7 'send7': comm_tag -1 is negative; tags must be >= 0",
                       "t.2.et: node 7 'recv7': comm_tag -1 is negative; tags must be >= 0"]


def test_peer_out_of_range(tmp_path):
    ranks = clean_ranks()
    ranks[0][6].attrs["comm_dst"] = 4
    write(tmp_path, ranks)
    defects = defects_of(tmp_path)
    assert defects[0] == "t.0.et: node 7 'send7': comm_dst 4 is not another rank (ranks 0..3, this is rank 0)"


# -- collective sequences ----------------------------------------------------------------------


def test_collective_order_differs_in_a_group(tmp_path):
    ranks = clean_ranks()
    ranks[1][3].id, ranks[1][4].id = 5, 4  # rank 1 reduce-scatters before its second all-gather
    ranks[1][4].data_deps = [3]
    ranks[1][3].data_deps = [4]
    write(tmp_path, ranks)
    one_defect(tmp_path, r"^t\.1\.et: node 4 'coll5': collective #2 on group '1' is REDUCE_SCATTER of 8192 bytes where "
                         r"rank 0 issues ALL_GATHER of 4096 bytes \(node 4 'coll4'\); ASTRA-sim pairs collectives by "
                         r"issue order, so every member of group '1' must issue the same sequence")


def test_collective_missing_on_one_member(tmp_path):
    ranks = clean_ranks()
    ranks[3] = [n for n in ranks[3] if n.id != 6]  # no all-reduce over all ranks on rank 3
    write(tmp_path, ranks)
    one_defect(tmp_path, r"^t\.3\.et: group '0': 0 collectives where rank 0 issues 1; nothing here matches rank 0's #1, "
                         r"ALL_REDUCE of 1000 bytes \(node 6 'coll6'\)")


def test_collective_extra_and_size_mismatch(tmp_path):
    ranks = clean_ranks()
    ranks[2].append(coll(10, AG, 4096, "2"))
    ranks[1][1].attrs["comm_size"] = 2048
    write(tmp_path, ranks)
    defects = defects_of(tmp_path)
    # Two members per group: the lower rank is the reference when they disagree.
    assert defects[0].startswith("t.1.et: node 2 'coll2': collective #1 on group '1' is ALL_GATHER of 2048 bytes where "
                                 "rank 0 issues ALL_GATHER of 4096 bytes (node 2 'coll2')")
    assert defects[1].startswith("t.3.et: group '2': 3 collectives where rank 2 issues 4")


def test_majority_is_the_reference(tmp_path):
    ranks = clean_ranks()
    ranks[0][5].attrs["comm_size"] = 999
    write(tmp_path, ranks)
    one_defect(tmp_path, r"^t\.0\.et: node 6 'coll6': collective #1 on group '0' is ALL_REDUCE of 999 bytes where rank 1 "
                         r"issues ALL_REDUCE of 1000 bytes")


def test_comm_size_beyond_int64(tmp_path):
    """A uint64 comm_size (an integer kind ASTRA-sim accepts) too large for its int64."""
    ranks = clean_ranks()
    write(tmp_path, ranks)
    attr = b"\x0a\x09comm_size" + b"\x68" + encode_varint((1 << 64) - 1)  # AttributeProto{name, uint64_val (13)}
    huge = b"\x52" + bytes([len(attr)]) + attr
    body = encode_node_head(6, "coll6", COLL, [5]) + encode_attr("comm_type", AR) + huge
    data = frame(encode_metadata()) + b"".join(_body(n) for n in ranks[0][:5]) + frame(body) + \
        b"".join(_body(n) for n in ranks[0][6:])
    (tmp_path / "t.0.et").write_bytes(data)
    defects = defects_of(tmp_path)
    assert defects[0] == "t.0.et: node 6 'coll6': comm_size 18446744073709551615 does not fit an int64; it is a size in bytes"


# -- scale -------------------------------------------------------------------------------------


def _write_scale_rank(args) -> None:
    """One rank of the scale trace: a chain of compute nodes and TP all-gathers, a DP
    all-reduce over all ranks, four sends or recvs to the other pipeline stage; built
    from cached pieces as the emitter does."""
    directory, rank, ranks, nodes, tp = args
    comp = encode_attr("is_cpu_op", False) + encode_attr("num_ops", 123456789) + encode_attr("tensor_size", 4096)
    gather = (encode_attr("is_cpu_op", False) + encode_attr("comm_type", AG) + encode_attr("comm_size", 1 << 20)
              + encode_attr("pg_name", str(rank // tp + 1)))
    with TraceWriter(f"{directory}/t.{rank}.et") as w:
        for i in range(1, nodes + 1):
            deps = [i - 1] if i > 1 else []
            if i % 4:
                w.write_encoded(encode_node_head(i, f"layer{i // 100}.mm", COMP, deps, (), 100) + comp)
            else:
                w.write_encoded(encode_node_head(i, f"layer{i // 100}.ag", COLL, deps) + gather)
        w.write_encoded(encode_node_head(nodes + 1, "dp.ar", COLL, [nodes]) + encode_attr("comm_type", AR)
                        + encode_attr("comm_size", 1 << 24) + encode_attr("pg_name", ""))
        first_stage = (rank // tp) % 2 == 0
        peer = rank + tp if first_stage else rank - tp
        if 0 <= peer < ranks:
            for k in range(4):
                if first_stage:
                    w.write(send(nodes + 2 + k, peer, k, 1 << 16, [nodes]))
                else:
                    w.write(recv(nodes + 2 + k, peer, k, 1 << 16, [nodes]))


@pytest.mark.scale
def test_32k_ranks_check_in_minutes_under_1gb(tmp_path):
    """32,768 files of 3,005 nodes (~10^8 nodes, 7 GB): checked by `stagec check-trace
    --jobs 2`; every process stays well under 1 GB. The wall time is printed; on 2 free
    cores it is about 3 minutes (docs/chakra.md, "How it scales")."""
    import multiprocessing
    import resource
    import subprocess
    import sys
    import time

    ranks, nodes, tp = 32_768, 3_000, 8
    with multiprocessing.Pool(2) as pool:
        pool.map(_write_scale_rank, [(tmp_path, r, ranks, nodes, tp) for r in range(ranks)], chunksize=256)
    write_comm_groups(tmp_path / "comm_group.json", {g + 1: list(range(g * tp, g * tp + tp)) for g in range(ranks // tp)})
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "stagec.tools.stagec_check_trace", str(tmp_path), "--jobs", "2", "--json"],
                            capture_output=True, text=True)
    wall = time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"check-trace: {ranks} files x {nodes + 5} nodes in {wall:.0f} s, peak RSS per process {peak_mib:.0f} MiB")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    doc = json.loads(result.stdout)
    assert len(doc["ranks"]) == ranks
    assert doc["ranks"]["0"]["ALL_GATHER"] == {"count": nodes // 4, "bytes": (nodes // 4) << 20}
    assert peak_mib < 512


# -- the cycle search against a plain reference --------------------------------------------------


def _has_cycle(n: int, deps: dict[int, list[int]]) -> bool:
    """Reference: repeatedly drop nodes whose deps are all dropped."""
    left = set(range(1, n + 1))
    changed = True
    while changed:
        changed = False
        for v in sorted(left):
            if not any(d in left for d in deps[v]):
                left.discard(v)
                changed = True
    return bool(left)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 12).flatmap(
    lambda n: st.tuples(st.just(n), st.lists(st.lists(st.integers(1, n), max_size=3), min_size=n, max_size=n))))
def test_cycle_search_matches_reference(case):
    from stagec.runtime.chakra.check import _check_cycles

    n, dep_lists = case
    deps = {v: dep_lists[v - 1] for v in range(1, n + 1)}
    defects: list[str] = []
    _check_cycles("t.0.et", {v: f"n{v}" for v in deps}, [(v, d, []) for v, d in deps.items()], defects)
    assert bool(defects) == _has_cycle(n, deps)
    for defect in defects:
        path = re.search(r"dependency cycle ([\d -> ]+);", defect)[1].split(" -> ")
        cycle = [int(v) for v in path]
        assert cycle[0] == cycle[-1]
        for a, b in zip(cycle, cycle[1:]):
            assert a in deps[b], (defect, deps)  # b depends on a: an edge a -> b
