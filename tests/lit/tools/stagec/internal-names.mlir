// Messages name what the user wrote, not stagec's internals (issue 17, class 9): a tp
// that cannot split the heads is `tp = ...` (not stg-shard's tp_kv x tp_q factors), and
// a batch that disagrees with the micro-batches names each factor.
// RUN: not stagec stats --model llama3-70b --tp 1000000 2>&1 | filecheck %s --check-prefix=TP
// RUN: not stagec trace --model llama3.2-1b --batch 4 --micro-batches 2 --out %t 2>&1 | filecheck %s --check-prefix=BATCH
// RUN: not stagec trace --model llama3.2-1b --dp 2 --batch 4 --micro-batches 3 --out %t 2>&1 | filecheck %s --check-prefix=DP

// TP: stagec: error: stg-shard: tp = 1000000 does not divide the model's attention heads N = 64
// TP-NOT: tp_kv
// BATCH: stagec: error: --batch 4 and --micro-batches 2 disagree: --micro-batches 2 x --micro-batch 1 x 1 data-parallel replica(s) (dp 1 x fsdp 1 x ep 1) = 2 sequences; give one of the two
// DP: --micro-batches 3 x --micro-batch 1 x 2 data-parallel replica(s) (dp 2 x fsdp 1 x ep 1) = 6 sequences
