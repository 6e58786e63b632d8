// RUN: stagec-opt %s -p 'stg-bucket-gradients{bucket_mb=0.000155}' | filecheck %s
// RUN: stagec-opt %s -p 'stg-bucket-gradients{bucket_mb=0}' | filecheck %s --check-prefix=NONE

// DDP buckets: the gradients become ready in the backward's order - layer 1's w2 then
// w1 (the last writes), layer 0's w2 then w1, then the head - and go in buckets of at
// most 162 bytes (0.000155 MiB) in that order: 64 + 32 + 64 bytes, then 32 + 64. The
// first bucket crosses from layer 1 to layer 0. Each bucket reads the accumulated
// gradients of explicit layers, all-reduces them as one call issued when they are
// final (`ready`), and writes them back in place; the updates read the reduced
// gradients.

stg.mesh @m [dp = 2]
func.func @train_step() {
  stg.phase backward {
    stg.repeat 2 reverse {
      %d1 = stg.fill 0.0 : !stg.tensor<[8] @dp, f32>
      stg.assign %d1 to "grad" of "layers.w1" : !stg.tensor<[8] @dp, f32>
      %d2 = stg.fill 0.0 : !stg.tensor<[16] @dp, f32>
      %e2 = stg.elementwise neg %d2 : !stg.tensor<[16] @dp, f32> -> !stg.tensor<[16] @dp, f32>
      stg.assign %e2 to "grad" of "layers.w2" : !stg.tensor<[16] @dp, f32>
      %e1 = stg.elementwise neg %d1 : !stg.tensor<[8] @dp, f32> -> !stg.tensor<[8] @dp, f32>
      stg.assign %e1 to "grad" of "layers.w1" : !stg.tensor<[8] @dp, f32>
      stg.yield
    }
    %h = stg.fill 0.0 : !stg.tensor<[16] @dp, f32>
    %eh = stg.elementwise neg %h : !stg.tensor<[16] @dp, f32> -> !stg.tensor<[16] @dp, f32>
    stg.assign %eh to "grad" of "head" : !stg.tensor<[16] @dp, f32>
    stg.yield
  }
  stg.phase optimizer {
    %gh = stg.optimizer_state "grad" of "head" : !stg.tensor<[16] @dp, f32>
    %rh = stg.all_reduce %gh on @m [dp] : !stg.tensor<[16] @dp, f32> -> !stg.tensor<[16], f32>
    stg.assign %rh to "master" of "head" : !stg.tensor<[16], f32>
    stg.repeat 2 {
      %g1 = stg.optimizer_state "grad" of "layers.w1" : !stg.tensor<[8] @dp, f32>
      %r1 = stg.all_reduce %g1 on @m [dp] : !stg.tensor<[8] @dp, f32> -> !stg.tensor<[8], f32>
      stg.assign %r1 to "master" of "layers.w1" : !stg.tensor<[8], f32>
      %g2 = stg.optimizer_state "grad" of "layers.w2" : !stg.tensor<[16] @dp, f32>
      %r2 = stg.all_reduce %g2 on @m [dp] : !stg.tensor<[16] @dp, f32> -> !stg.tensor<[16], f32>
      stg.assign %r2 to "master" of "layers.w2" : !stg.tensor<[16], f32>
      stg.yield
    }
    stg.yield
  }
  func.return
}

// CHECK:      stg.phase optimizer {
// CHECK-NEXT:   %[[A:.*]] = stg.optimizer_state "grad" of "layers.w2" layer 1 of 2 : !stg.tensor<[16] @dp, f32>
// CHECK-NEXT:   %[[B:.*]] = stg.optimizer_state "grad" of "layers.w1" layer 1 of 2 : !stg.tensor<[8] @dp, f32>
// CHECK-NEXT:   %[[C:.*]] = stg.optimizer_state "grad" of "layers.w2" layer 0 of 2 : !stg.tensor<[16] @dp, f32>
// CHECK-NEXT:   %[[RA:.*]], %[[RB:.*]], %[[RC:.*]] = stg.group ready {
// CHECK-NEXT:     stg.all_reduce %[[A]] on @m [dp] : !stg.tensor<[16] @dp, f32> -> !stg.tensor<[16], f32>
// CHECK-NEXT:     stg.all_reduce %[[B]] on @m [dp] : !stg.tensor<[8] @dp, f32> -> !stg.tensor<[8], f32>
// CHECK-NEXT:     stg.all_reduce %[[C]] on @m [dp] : !stg.tensor<[16] @dp, f32> -> !stg.tensor<[16], f32>
// CHECK-NEXT:     stg.yield
// CHECK-NEXT:   } : !stg.tensor<[16], f32>, !stg.tensor<[8], f32>, !stg.tensor<[16], f32>
// CHECK-NEXT:   stg.assign %[[RA]] to "grad" of "layers.w2" layer 1 of 2 : !stg.tensor<[16], f32>
// CHECK-NEXT:   stg.assign %[[RB]] to "grad" of "layers.w1" layer 1 of 2 : !stg.tensor<[8], f32>
// CHECK-NEXT:   stg.assign %[[RC]] to "grad" of "layers.w2" layer 0 of 2 : !stg.tensor<[16], f32>
// CHECK-NEXT:   %[[D:.*]] = stg.optimizer_state "grad" of "layers.w1" layer 0 of 2 : !stg.tensor<[8] @dp, f32>
// CHECK-NEXT:   %[[H:.*]] = stg.optimizer_state "grad" of "head" : !stg.tensor<[16] @dp, f32>
// CHECK-NEXT:   %[[RD:.*]], %[[RH:.*]] = stg.group ready {
// CHECK-NEXT:     stg.all_reduce %[[D]] on @m [dp]
// CHECK-NEXT:     stg.all_reduce %[[H]] on @m [dp]
// CHECK-NEXT:     stg.yield
// CHECK-NEXT:   } : !stg.tensor<[8], f32>, !stg.tensor<[16], f32>
// CHECK-NEXT:   stg.assign %[[RD]] to "grad" of "layers.w1" layer 0 of 2 : !stg.tensor<[8], f32>
// CHECK-NEXT:   stg.assign %[[RH]] to "grad" of "head" : !stg.tensor<[16], f32>
// CHECK-NEXT:   %rh = stg.optimizer_state "grad" of "head" : !stg.tensor<[16], f32>
// CHECK-NEXT:   stg.assign %rh to "master" of "head"
// CHECK-NEXT:   stg.repeat 2 {
// CHECK-NEXT:     %r1 = stg.optimizer_state "grad" of "layers.w1" : !stg.tensor<[8], f32>
// CHECK-NEXT:     stg.assign %r1 to "master" of "layers.w1"
// CHECK-NEXT:     %r2 = stg.optimizer_state "grad" of "layers.w2" : !stg.tensor<[16], f32>
// CHECK-NEXT:     stg.assign %r2 to "master" of "layers.w2"

// NONE-NOT: stg.group
// NONE:     stg.all_reduce %gh on @m [dp]
