# stagec simulate on traces this script writes and on the IR of a small job: the
# iteration time of a trace directory on ASTRA-sim's own config files equals the time
# derived by hand; the IR job reports every rank class; bad input is one line, exit 2.
#
# The traces: 8 ranks, each a 100 us compute node then an all-reduce of 16 MiB that
# depends on it, on an 8-NPU ring of 50 GB/s and 500 ns, one chunk (ASTRA-SIM.md):
# the all-reduce takes 10 + 14 * 39,572 + 7 * 3,930 = 581,528 ns, so the iteration is
# 100,000 + 581,528 = 681,528 ns = 0.682 ms, and each rank's exposed communication is
# the whole all-reduce (nothing overlaps it).
# RUN: rm -rf %t && mkdir -p %t/ring
# RUN: %python %s %t/ring
# RUN: stagec simulate %t/ring --network %S/../../../unit/sim/data/ring_8npus.yml --system %S/../../../unit/sim/data/ring_1chunk.json --json | filecheck %s --check-prefix=RING
# RUN: stagec simulate %t/ring --network %S/../../../unit/sim/data/ring_8npus.yml --system %S/../../../unit/sim/data/ring_1chunk.json --timeline %t/ring.json | filecheck %s --check-prefix=TABLE
# The 8 ranks behave identically: one process with 2 slices stands for them; with
# --timeline-ranks all, each rank has its own with its 2 nodes' slices.
# RUN: %python -c "import json, sys; d = json.load(open(sys.argv[1])); print(sum(e['ph'] == 'X' for e in d['traceEvents']))" %t/ring.json | filecheck %s --check-prefix=ONE
# RUN: stagec simulate %t/ring --network %S/../../../unit/sim/data/ring_8npus.yml --system %S/../../../unit/sim/data/ring_1chunk.json --timeline %t/all.json --timeline-ranks all --quiet
# RUN: %python -c "import json, sys; d = json.load(open(sys.argv[1])); print(sorted({e['pid'] for e in d['traceEvents']}), sum(e['ph'] == 'X' for e in d['traceEvents']))" %t/all.json | filecheck %s --check-prefix=ALL
# RUN: not stagec simulate %t/ring --timeline-ranks 3-x 2>&1 | filecheck %s --check-prefix=RANKS
# RUN: stagec simulate --model llama3.2-1b --tp 2 --pp 2 --batch 4 --seq 128 --quiet | filecheck %s --check-prefix=IR
# RUN: not stagec simulate 2>&1 | filecheck %s --check-prefix=NEITHER
# RUN: not stagec simulate %t/ring --model llama3.2-1b 2>&1 | filecheck %s --check-prefix=NEITHER
# RUN: not stagec simulate %t/ring --network %S/../../../unit/sim/data/ring_8npus.yml 2>&1 | filecheck %s --check-prefix=PAIR
# RUN: not stagec simulate %t/missing 2>&1 | filecheck %s --check-prefix=MISSING
# RUN: not stagec simulate --model llama3.2-1b --tp 16 --network %S/../../../unit/sim/data/ring_8npus.yml --system %S/../../../unit/sim/data/ring_1chunk.json 2>&1 | filecheck %s --check-prefix=SMALL
# RUN: not stagec simulate %t/ring --network %S/../../../unit/sim/data/ring_8npus.yml --system %S/../../../unit/sim/data/ring_1chunk.json --timeline %t/no/such/dir/t.json 2>&1 | filecheck %s --check-prefix=TIMELINE
# RUN: stagec simulate --help | filecheck %s --check-prefix=HELP

# RING: "world": 8,
# RING: "iteration_ns": 681528.0,
# RING: "compute_ns": 100000,
# RING-NEXT: "communication_ns": 581528,
# RING-NEXT: "exposed_communication_ns": 581528,

# TABLE: iteration time: 0.682 ms
# TABLE: timeline: {{.*}}ring.json
# ONE: {{^}}2{{$}}
# ALL: [0, 1, 2, 3, 4, 5, 6, 7] 16
# RANKS: error: argument --timeline-ranks: '3-x': 'all' or ranks like 0,4-7

# IR: llama3.2-1b: 4 ranks, pp=2 tp=2; 2 simulated (identical ranks once)
# IR: iteration time: {{[0-9.,]+}} ms
# IR: │ 0-1
# IR: │ 2-3

# NEITHER: stagec: error: give a trace directory or --model (not both)
# PAIR: stagec: error: --network and --system go together
# MISSING: stagec: error: '{{.*}}missing' is not a directory
# SMALL: stagec: error: the network has 8 NPUs, the job 16 ranks: give a network of at least 16
# TIMELINE: stagec: error: --timeline '{{.*}}no/such/dir/t.json': the directory '{{.*}}no/such/dir' does not exist
# TIMELINE-NOT: Traceback
# HELP: Simulate one training iteration

import sys

from stagec.runtime.chakra.schema import CommType, Node, NodeType
from stagec.runtime.chakra.wire import TraceWriter, write_comm_groups

if __name__ == "__main__":
    out = sys.argv[1]
    for rank in range(8):
        with TraceWriter(f"{out}/trace.{rank}.et") as w:
            w.write(Node(0, "compute", NodeType.COMP_NODE, duration_micros=100,
                         attrs={"num_ops": 1, "tensor_size": 1}))
            w.write(Node(1, "all_reduce", NodeType.COMM_COLL_NODE, data_deps=[0],
                         attrs={"comm_type": int(CommType.ALL_REDUCE), "comm_size": 16 << 20}))
