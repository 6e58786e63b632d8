// `stagec trace`: traces for every rank, the summary table, check-trace on them, JSON
// dumps, --help, and bad input as one message with exit status 2 and no files.
// RUN: rm -rf %t && stagec trace --model llama3.2-1b --tp 2 --pp 2 --batch 4 --seq 128 --json --out %t | filecheck %s
// RUN: stagec check-trace %t --json | filecheck %s --check-prefix=CHECKED
// RUN: cat %t/comm_group.json | filecheck %s --check-prefix=GROUPS
// RUN: cat %t/trace.2.json | filecheck %s --check-prefix=JSON
// RUN: stagec trace --help | filecheck %s --check-prefix=HELP
// RUN: not stagec trace --model nope --out %t.bad 2>&1 | filecheck %s --check-prefix=MODEL
// RUN: not stagec trace --model llama3.2-1b --dp 2 --batch 3 --out %t.bad 2>&1 | filecheck %s --check-prefix=BATCH
// RUN: not stagec trace --model llama3.2-1b --tp 3 --out %t.bad 2>&1 | filecheck %s --check-prefix=TP
// RUN: not stagec trace --model llama3.2-1b --hardware nosuch --out %t.bad 2>&1 | filecheck %s --check-prefix=HW
// RUN: rm -rf %t.fsdp3 && stagec trace --model llama3.2-1b --fsdp 3 --batch 3 --seq 128 --out %t.fsdp3 --quiet && stagec check-trace %t.fsdp3 --quiet | filecheck %s --check-prefix=FSDP
// RUN: not stagec trace --model llama3.2-1b --fsdp 4096 --batch 4096 --out %t.bad 2>&1 | filecheck %s --check-prefix=FSDP-MAX
// RUN: not ls %t.bad

// CHECK:      llama3.2-1b: 4 ranks, 2 rank class(es), pp=2 tp=2; 4 micro-batch(es) of 1 x 128 tokens per replica
// CHECK:      ranks {{.*}} nodes {{.*}} FLOPs {{.*}} all-reduce {{.*}} send {{.*}} recv {{.*}} peak memory
// CHECK:      0-1
// CHECK:      2-3
// CHECK:      wrote 4 traces ({{.*}} nodes) and comm_group.json (4 groups)

// CHECKED: "SEND": {"count": 4, "bytes": 2097152}

// tp pairs of each stage, then the stages' tp pairs of the norm-gradient reductions
// GROUPS: {"1": [0, 1], "2": [2, 3]

// JSON:      "rank": 2,
// JSON:      "type": "COMM_RECV_NODE",
// JSON:      "comm_size": 524288,
// JSON-NEXT: "comm_tag": 0,
// JSON-NEXT: "comm_src": 0,
// JSON-NEXT: "comm_dst": 2

// HELP: usage: stagec trace
// HELP: examples:
// HELP: --model NAME|config.json
// HELP: --pp N
// HELP: --schedule {1f1b,gpipe,interleaved-1f1b}
// HELP: --virtual-stages V
// HELP: --no-optimizer
// HELP: --iterations N
// HELP: --hardware NAME|FILE
// HELP: --bucket-mb MB
// HELP: --json

// MODEL: stagec: error: unknown model 'nope'
// BATCH: stagec: error: --batch 3 is not a multiple of --micro-batch 1 x 2 data-parallel replicas
// TP: stagec: error: stg-shard: tp = 3 does not divide the model's attention heads
// HW: stagec: error: --hardware: unknown hardware 'nosuch'
// fsdp = 3 divides no hidden size of Llama-3.2 1B (H = 2048): the storage is padded
// (docs/sharding.md, "Uneven shards") and the traces pass check-trace
// FSDP: trace.*.et in {{.*}}: 3 ranks, no defects
// a degree above a parameter's elements is still refused (the norms hold 2048)
// FSDP-MAX: stagec: error: stg-shard: fsdp = 4096 exceeds the 2048 elements of 'model.layers.input_layernorm.weight' [H]: some rank would hold padding only - give fsdp at most 2048
