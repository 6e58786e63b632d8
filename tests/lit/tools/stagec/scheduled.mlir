// The README's scheduled-form example, as written there.
// RUN: stagec ir --model llama3.2-1b --pass-pipeline 'builtin.module(stg-autodiff{micro_batches=2},stg-shard{dp=2 tp=2},stg-match-collectives,stg-vocab-parallel-cross-entropy,stg-fuse-gemms,stg-bucket-gradients,stg-schedule)' | filecheck %s
// RUN: grep -F "stagec ir --model llama3.2-1b --pass-pipeline 'builtin.module(stg-autodiff{micro_batches=2},stg-shard{dp=2 tp=2},stg-match-collectives,stg-vocab-parallel-cross-entropy,stg-fuse-gemms,stg-bucket-gradients,stg-schedule)'" %S/../../../../README.md

// CHECK:      func.func @train_step() -> !stg.tensor<[], f32> attributes {stg.scheduled} {
// CHECK:      %q, %k, %v = stg.group {
// CHECK-NEXT:   stg.einsum
// CHECK-NEXT:   stg.einsum
// CHECK-NEXT:   stg.einsum
// CHECK-NEXT:   stg.yield
// CHECK:      stg.all_reduce %loss_max_local on @mesh [tp] max async stream "tp"
// CHECK:      stg.phase optimizer {
// CHECK-NEXT:   stg.optimizer_state "grad" of "model.layers.mlp.down_proj.weight" layer 15 of 16 : !stg.tensor<[H, F/tp] @dp, f32>
// CHECK:        stg.group ready async stream "dp" {
// CHECK-NEXT:     stg.all_reduce %{{.*}} on @mesh [dp] : !stg.tensor<[H, F/tp] @dp, f32> -> !stg.tensor<[H, F/tp], f32>
