// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-autodiff{optimizer=sgd micro_batches=2},stg-shard{dp=2},stg-pipeline{pp=4})' | filecheck %s

// A step sharded already (stg-shard declared `stg.mesh @mesh [dp = 2]`) gets pp as the
// outermost axis: ranks are pp-major, each stage's dp ranks contiguous. The types keep
// their layouts, and what crosses the stages is the dp-split activation.

// CHECK:       stg.mesh @mesh [pp = 4, dp = 2]
// CHECK-LABEL: func.func @stage0_forward(%x: !stg.tensor<[B/dp, H], f32>)
// CHECK:         stg.repeat L/4 offset 0 of L carry(%hin = %x : !stg.tensor<[B/dp, H], f32>)
// CHECK:         stg.send %{{[0-9]+}} to @mesh[pp = 1] tag 0 : !stg.tensor<[B/dp, H], f32>
// CHECK-LABEL: func.func @stage3_forward()
// CHECK:         stg.recv from @mesh[pp = 2] tag 2 : !stg.tensor<[B/dp, H], f32>
// CHECK:         stg.repeat L/4 offset 3*L/4 of L carry(

func.func @forward() -> !stg.tensor<[], f32> {
  %x = stg.input "x" : !stg.tensor<[B, H], f32>
  %h = stg.repeat L carry(%hin = %x : !stg.tensor<[B, H], f32>) {
    %w = stg.param "layers.w" : !stg.tensor<[H, H], f32>
    %u = stg.einsum "bh,gh->bg" %hin, %w : !stg.tensor<[B, H], f32>, !stg.tensor<[H, H], f32> -> !stg.tensor<[B, H], f32>
    stg.yield %u : !stg.tensor<[B, H], f32>
  }
  %l = stg.reduce sum %h dims [0, 1] : !stg.tensor<[B, H], f32> -> !stg.tensor<[], f32>
  func.return %l : !stg.tensor<[], f32>
}
