# stagec check-trace on small traces this script writes: a clean 2-rank trace (a TP
# all-gather pair and a send/recv pair) passes with exact counts; a trace with an
# unmatched send and a float comm_size fails with one line per defect; usage errors
# are one line.
# RUN: rm -rf %t && mkdir -p %t/clean %t/broken
# RUN: %python %s %t/clean clean && %python %s %t/broken broken
# RUN: stagec check-trace %t/clean --json | filecheck %s --check-prefix=JSON
# RUN: stagec check-trace %t/clean --jobs 1 | filecheck %s --check-prefix=TABLE
# A path longer than the table is wide stays on the summary's one line.
# RUN: mkdir -p %t/a/directory/path/long/enough/that/a/table/title/would/have/wrapped/it && cp -r %t/clean %t/a/directory/path/long/enough/that/a/table/title/would/have/wrapped/it/
# RUN: stagec check-trace %t/a/directory/path/long/enough/that/a/table/title/would/have/wrapped/it/clean | filecheck %s --check-prefix=TABLE
# RUN: not stagec check-trace %t/broken 2>&1 | filecheck %s --check-prefix=DEFECTS
# --max-defects 1 prints the first and counts the other (a bad comm_group.json makes one
# defect a node).
# RUN: not stagec check-trace %t/broken --max-defects 1 2>&1 | filecheck %s --check-prefix=CAPPED
# RUN: not stagec check-trace %t/missing 2>&1 | filecheck %s --check-prefix=USAGE
# RUN: not stagec check-trace %t/clean --prefix other 2>&1 | filecheck %s --check-prefix=PREFIX
# RUN: stagec check-trace --help | filecheck %s --check-prefix=HELP

# JSON: {"ranks": {"0": {"nodes": 3, "COMP_NODE": 1, "COMM_SEND_NODE": 1, "COMM_COLL_NODE": 1, "ALL_GATHER": {"count": 1, "bytes": 4096}, "SEND": {"count": 1, "bytes": 512}}, "1": {"nodes": 3, "COMP_NODE": 1, "COMM_RECV_NODE": 1, "COMM_COLL_NODE": 1, "ALL_GATHER": {"count": 1, "bytes": 4096}, "RECV": {"count": 1, "bytes": 512}}}}

# TABLE: trace.*.et in {{.*}}clean: 2 ranks, no defects
# TABLE: ranks
# TABLE: {{^}}│ 0 {{.*}} 1 x, 4.00 KiB {{.*}} 1 x, 512 B
# TABLE: {{^}}│ 1 {{.*}} 1 x, 4.00 KiB {{.*}} 1 x, 512 B

# DEFECTS:      trace.0.et: node 2 'ag': attribute 'comm_size' is double (field 3) = 4096.0; ASTRA-sim crashes on a float there: write an int64 (field 9)
# DEFECTS-NEXT: trace.0.et: node 3 'send': send to rank 1 (tag 5, 512 bytes) has no matching recv in trace.1.et; write a COMM_RECV_NODE with comm_src 0, comm_tag 5, comm_size 512 there (ASTRA-sim waits for it forever and exits 0)
# DEFECTS-NEXT: check-trace: 2 defect(s) in trace.*.et (2 rank file(s))
# DEFECTS-NOT:  Traceback

# CAPPED:      trace.0.et: node 2 'ag': attribute 'comm_size' is double
# CAPPED-NEXT: ... and 1 more (--max-defects 0 prints every one)
# CAPPED-NEXT: check-trace: 2 defect(s) in trace.*.et (2 rank file(s))

# USAGE: stagec: error: '{{.*}}missing' is not a directory
# PREFIX: stagec: error: no trace files other.<rank>.et in '{{.*}}clean' (found: trace)

# HELP: usage: stagec check-trace [-h] [--prefix P] [--json] [--jobs N]
# HELP-NEXT: [--max-defects N] [--quiet]
# HELP: FILE: node ID 'NAME': what is wrong, what would be right

import sys

from stagec.runtime.chakra import CommType, Node, NodeType, TraceWriter, write_comm_groups

directory, kind = sys.argv[1], sys.argv[2]
for rank in (0, 1):
    size = 4096.0 if kind == "broken" and rank == 0 else 4096
    nodes = [
        Node(1, "mm", NodeType.COMP_NODE, duration_micros=10, attrs={"num_ops": 1 << 20, "tensor_size": 1 << 12}),
        Node(2, "ag", NodeType.COMM_COLL_NODE, data_deps=[1],
             attrs={"comm_type": int(CommType.ALL_GATHER), "comm_size": size, "pg_name": "1"}),
    ]
    if rank == 0:
        nodes.append(Node(3, "send", NodeType.COMM_SEND_NODE, data_deps=[2],
                          attrs={"comm_dst": 1, "comm_tag": 5, "comm_size": 512}))
    elif kind == "clean":
        nodes.append(Node(3, "recv", NodeType.COMM_RECV_NODE, attrs={"comm_src": 0, "comm_tag": 5, "comm_size": 512}))
    else:
        nodes.append(Node(3, "mm2", NodeType.COMP_NODE, data_deps=[2]))
    with TraceWriter(f"{directory}/trace.{rank}.et") as writer:
        for node in nodes:
            writer.write(node)
write_comm_groups(f"{directory}/comm_group.json", {1: [0, 1]})
