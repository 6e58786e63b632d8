// stage.md Table XII: a two-layer MLP, data parallel in the first layer and tensor
// parallel in the second, written as overrides on a user-declared axis p. stg-shard
// propagates the layouts; the second einsum needs X1 split by columns, so the
// matcher turns [Batch/p, D2] -> [Batch, D2/p] into the table's AllToAll. The result
// is a partial sum over p, all-reduced for the caller (the table leaves it partial).
// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-shard{override="x0=[B/p, D1];w2=[D2/p, D3]"},stg-match-collectives)' | filecheck %s

stg.mesh @m [p = 2]
func.func @mlp() -> !stg.tensor<[B, D3], f32> {
  %x0 = stg.input "x0" : !stg.tensor<[B, D1], f32>
  %w1 = stg.param "w1" : !stg.tensor<[D1, D2], f32>
  %w2 = stg.param "w2" : !stg.tensor<[D2, D3], f32>
  %x1 = stg.einsum "bm,mn->bn" %x0, %w1 : !stg.tensor<[B, D1], f32>, !stg.tensor<[D1, D2], f32> -> !stg.tensor<[B, D2], f32>
  %x2 = stg.einsum "bm,mn->bn" %x1, %w2 : !stg.tensor<[B, D2], f32>, !stg.tensor<[D2, D3], f32> -> !stg.tensor<[B, D3], f32>
  func.return %x2 : !stg.tensor<[B, D3], f32>
}

// CHECK:      %x0 = stg.input "x0" : !stg.tensor<[B/p, D1], f32>
// CHECK-NEXT: %w1 = stg.param "w1" : !stg.tensor<[D1, D2], f32>
// CHECK-NEXT: %w2 = stg.param "w2" : !stg.tensor<[D2/p, D3], f32>
// CHECK-NEXT: %x1 = stg.einsum "bm,mn->bn" %x0, %w1 : !stg.tensor<[B/p, D1], f32>, !stg.tensor<[D1, D2], f32> -> !stg.tensor<[B/p, D2], f32>
// CHECK-NEXT: %[[A2A:.*]] = stg.all_to_all %x1 on @m [p] : !stg.tensor<[B/p, D2], f32> -> !stg.tensor<[B, D2/p], f32>
// CHECK-NEXT: %x2 = stg.einsum "bm,mn->bn" %[[A2A]], %w2 : !stg.tensor<[B, D2/p], f32>, !stg.tensor<[D2/p, D3], f32> -> !stg.tensor<[B, D3] @p, f32>
// CHECK-NEXT: %[[AR:.*]] = stg.all_reduce %x2 on @m [p] : !stg.tensor<[B, D3] @p, f32> -> !stg.tensor<[B, D3], f32>
// CHECK-NEXT: func.return %[[AR]] : !stg.tensor<[B, D3], f32>
