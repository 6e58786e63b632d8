// `stagec compile`: Fig. 3's loop on Llama-3.2-1B, fsdp=4 (structured layer loops, one
// round), its decisions on stdout and the scheduled IR with its sizes in stg.config,
// which `stagec simulate FILE.mlir` takes; bad input is one line, exit status 2.
// RUN: stagec compile --model llama3.2-1b --fsdp 4 --batch 4 --seq 256 --recompute --no-unroll --rounds 1 --quiet -o %t.mlir | filecheck %s --check-prefix=REPORT
// RUN: filecheck %s --check-prefix=IR < %t.mlir
// RUN: stagec simulate %t.mlir --quiet | filecheck %s --check-prefix=SIM
// RUN: not stagec compile --model llama3.2-1b --fsdp 1 -o %t.bad.mlir 2>&1 | filecheck %s --check-prefix=FSDP
// RUN: not ls %t.bad.mlir
// RUN: not stagec compile --model nope --fsdp 4 -o %t.bad.mlir 2>&1 | filecheck %s --check-prefix=MODEL
// RUN: not stagec simulate %t.missing.mlir 2>&1 | filecheck %s --check-prefix=MISSING

// 9 weights per layer body, forward and backward, and lm_head's backward gather
// (tests/unit/deepcompile/test_prefetch.py)
// REPORT:      llama3.2-1b: fsdp=4, 1 micro-batch(es) of 1 x 256 tokens per rank, recompute; DeepCompile, M = 65.7 GB
// REPORT:      round 1 stg-prefetch (profile: simulator,
// REPORT-NEXT:   all-gathers issued earlier: 19
// REPORT-NEXT:   fused all-gather groups: 0
// REPORT:      wrote {{.*}}.mlir in

// IR:      stg.config = {{{.*}}B = 4 : i64, S = 256 : i64, M = 1 : i64}
// IR:      func.func @train_step() -> !stg.tensor<[], f32> attributes {stg.scheduled}
// IR:      stg.all_gather {{.*}} async stream "fsdp"

// SIM: {{.*}}.mlir: 4 ranks; 1 simulated (identical ranks once)
// SIM: iteration time:

// FSDP: stagec: error: --fsdp 1: DeepCompile's passes shard parameters over at least 2 ranks
// MODEL: stagec: error: unknown model 'nope'; named configs:
// MISSING: stagec: error: {{.*}}missing.mlir: cannot read it: No such file or directory
