// stage.md Table XI, fully-sharded tensor parallel (FSTP), written as overrides: X and
// W both split along the contracted D1 over tp, the result wanted as [Batch/dp,
// D2/tp]. The einsum leaves a partial sum over tp that the matcher reduce-scatters
// into the requested layout - the table's Y = ReduceScatter[tp](Y*).
// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-shard{dp=2 tp=2 override="x=[B/dp, D1/tp];w=[D1/tp, D2];return.0=[B/dp, D2/tp]"},stg-match-collectives)' | filecheck %s

func.func @fstp() -> !stg.tensor<[B, D2], f32> {
  %x = stg.input "x" : !stg.tensor<[B, D1], f32>
  %w = stg.param "w" : !stg.tensor<[D1, D2], f32>
  %y = stg.einsum "bm,mn->bn" %x, %w : !stg.tensor<[B, D1], f32>, !stg.tensor<[D1, D2], f32> -> !stg.tensor<[B, D2], f32>
  func.return %y : !stg.tensor<[B, D2], f32>
}

// CHECK:      stg.mesh @mesh [dp = 2, tp = 2]
// CHECK-NEXT: func.func @fstp() -> !stg.tensor<[B/dp, D2/tp], f32> {
// CHECK-NEXT:   %x = stg.input "x" : !stg.tensor<[B/dp, D1/tp], f32>
// CHECK-NEXT:   %w = stg.param "w" : !stg.tensor<[D1/tp, D2], f32>
// CHECK-NEXT:   %y = stg.einsum "bm,mn->bn" %x, %w : !stg.tensor<[B/dp, D1/tp], f32>, !stg.tensor<[D1/tp, D2], f32> -> !stg.tensor<[B/dp, D2] @tp, f32>
// CHECK-NEXT:   %[[Y:.*]] = stg.reduce_scatter %y on @mesh [tp] : !stg.tensor<[B/dp, D2] @tp, f32> -> !stg.tensor<[B/dp, D2/tp], f32>
// CHECK-NEXT:   func.return %[[Y]] : !stg.tensor<[B/dp, D2/tp], f32>
