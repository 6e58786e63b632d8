// RUN: stagec-opt %s -p 'stg-bucket-gradients{zero_bucket_elements=20}' | filecheck %s

// ZeRO-1 (Megatron's distributed optimizer): the gradient reduce-scatters go in buckets
// that close once they hold max(20, 20/40 x 2) = 20 elements - layer 1's w (16) and
// layer 0's w (16) make one, the head (8) another - and each updated parameter shard
// is written in place and all-gathered in its gradient's bucket at the end of the
// phase.

stg.mesh @m [dp = 2]
func.func @train_step() {
  stg.phase backward {
    stg.repeat 2 reverse {
      %d = stg.fill 0.0 : !stg.tensor<[16] @dp, f32>
      stg.assign %d to "grad" of "layers.w" : !stg.tensor<[16] @dp, f32>
      stg.yield
    }
    %h = stg.fill 0.0 : !stg.tensor<[8] @dp, f32>
    stg.assign %h to "grad" of "head" : !stg.tensor<[8] @dp, f32>
    stg.yield
  }
  stg.phase optimizer {
    stg.repeat 2 {
      %g = stg.optimizer_state "grad" of "layers.w" : !stg.tensor<[16] @dp, f32>
      %s = stg.reduce_scatter %g on @m [dp] : !stg.tensor<[16] @dp, f32> -> !stg.tensor<[16/dp], f32>
      %u = stg.elementwise cast %s : !stg.tensor<[16/dp], f32> -> !stg.tensor<[16/dp], bf16>
      %w = stg.all_gather %u on @m [dp] : !stg.tensor<[16/dp], bf16> -> !stg.tensor<[16], bf16>
      stg.assign %w to "layers.w" : !stg.tensor<[16], bf16>
      stg.yield
    }
    %gh = stg.optimizer_state "grad" of "head" : !stg.tensor<[8] @dp, f32>
    %sh = stg.reduce_scatter %gh on @m [dp] : !stg.tensor<[8] @dp, f32> -> !stg.tensor<[8/dp], f32>
    %uh = stg.elementwise cast %sh : !stg.tensor<[8/dp], f32> -> !stg.tensor<[8/dp], bf16>
    %wh = stg.all_gather %uh on @m [dp] : !stg.tensor<[8/dp], bf16> -> !stg.tensor<[8], bf16>
    stg.assign %wh to "head" : !stg.tensor<[8], bf16>
    stg.yield
  }
  func.return
}

// CHECK:      stg.phase optimizer {
// CHECK-NEXT:   %[[A:.*]] = stg.optimizer_state "grad" of "layers.w" layer 1 of 2 : !stg.tensor<[16] @dp, f32>
// CHECK-NEXT:   %[[B:.*]] = stg.optimizer_state "grad" of "layers.w" layer 0 of 2 : !stg.tensor<[16] @dp, f32>
// CHECK-NEXT:   %[[RA:.*]], %[[RB:.*]] = stg.group ready {
// CHECK-NEXT:     stg.reduce_scatter %[[A]] on @m [dp] : !stg.tensor<[16] @dp, f32> -> !stg.tensor<[16/dp], f32>
// CHECK-NEXT:     stg.reduce_scatter %[[B]] on @m [dp]
// CHECK-NEXT:     stg.yield
// CHECK-NEXT:   }
// CHECK-NEXT:   stg.assign %[[RA]] to "grad" of "layers.w" layer 1 of 2 : !stg.tensor<[16/dp], f32>
// CHECK-NEXT:   stg.assign %[[RB]] to "grad" of "layers.w" layer 0 of 2 : !stg.tensor<[16/dp], f32>
// CHECK-NEXT:   %[[H:.*]] = stg.optimizer_state "grad" of "head" : !stg.tensor<[8] @dp, f32>
// CHECK-NEXT:   %[[RH:.*]] = stg.group ready {
// CHECK-NEXT:     stg.reduce_scatter %[[H]] on @m [dp]
// CHECK-NEXT:     stg.yield
// CHECK-NEXT:   }
// CHECK-NEXT:   stg.assign %[[RH]] to "grad" of "head" : !stg.tensor<[8/dp], f32>
// CHECK-NEXT:   stg.repeat 2 {
// CHECK-NEXT:     %s = stg.optimizer_state "grad" of "layers.w" : !stg.tensor<[16/dp], f32>
// CHECK-NEXT:     %u = stg.elementwise cast %s
// CHECK-NEXT:     stg.assign %u to "layers.w" : !stg.tensor<[16/dp], bf16>
// CHECK-NEXT:     stg.yield
// CHECK-NEXT:   }
// CHECK-NEXT:   %sh = stg.optimizer_state "grad" of "head" : !stg.tensor<[8/dp], f32>
// CHECK-NEXT:   %uh = stg.elementwise cast %sh
// CHECK-NEXT:   stg.assign %uh to "head" : !stg.tensor<[8/dp], bf16>
// CHECK-NEXT:   %[[PA:.*]] = stg.param "layers.w" layer 1 of 2 : !stg.tensor<[16/dp], bf16>
// CHECK-NEXT:   %[[PB:.*]] = stg.param "layers.w" layer 0 of 2 : !stg.tensor<[16/dp], bf16>
// CHECK-NEXT:   %[[GA:.*]], %[[GB:.*]] = stg.group ready {
// CHECK-NEXT:     stg.all_gather %[[PA]] on @m [dp] : !stg.tensor<[16/dp], bf16> -> !stg.tensor<[16], bf16>
// CHECK-NEXT:     stg.all_gather %[[PB]] on @m [dp]
// CHECK-NEXT:     stg.yield
// CHECK-NEXT:   }
// CHECK-NEXT:   stg.assign %[[GA]] to "layers.w" layer 1 of 2 : !stg.tensor<[16], bf16>
// CHECK-NEXT:   stg.assign %[[GB]] to "layers.w" layer 0 of 2 : !stg.tensor<[16], bf16>
// CHECK-NEXT:   %[[PH:.*]] = stg.param "head" : !stg.tensor<[8/dp], bf16>
// CHECK-NEXT:   %[[GH:.*]] = stg.group ready {
// CHECK-NEXT:     stg.all_gather %[[PH]] on @m [dp]
// CHECK-NEXT:     stg.yield
// CHECK-NEXT:   }
// CHECK-NEXT:   stg.assign %[[GH]] to "head" : !stg.tensor<[8], bf16>
// CHECK-NEXT:   stg.yield
