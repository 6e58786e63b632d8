// RUN: stagec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// The vocab-parallel cross-entropy's ops.

stg.mesh @m [tp = 2]
func.func @f(%logits: !stg.tensor<[B, V], bf16>, %labels: !stg.tensor<[B], i64>) {
  %m = stg.vocab_stat max %logits, %labels : !stg.tensor<[B, V], bf16>, !stg.tensor<[B], i64> -> !stg.tensor<[B], f32>
  func.return
}

// CHECK: vocab_stat max: the logits' vocab dim must be split (a whole vocab needs no statistics)

// -----

stg.mesh @m [tp = 2]
func.func @f(%logits: !stg.tensor<[B, V/tp], bf16>, %labels: !stg.tensor<[B], i64>) {
  %m = stg.vocab_stat max %logits, %labels : !stg.tensor<[B, V/tp], bf16>, !stg.tensor<[B], i64> -> !stg.tensor<[B], f32>
  func.return
}

// CHECK: vocab_stat max: result should be [B] @tp, not [B]

// -----

stg.mesh @m [tp = 2]
func.func @f(%logits: !stg.tensor<[B, V/tp], bf16>, %labels: !stg.tensor<[B], i64>) {
  %s = stg.vocab_stat sum_exp %logits, %labels : !stg.tensor<[B, V/tp], bf16>, !stg.tensor<[B], i64> -> !stg.tensor<[B] @tp, f32>
  func.return
}

// CHECK: vocab_stat sum_exp: sum_exp, and only it, takes the vocab group's max

// -----

stg.mesh @m [tp = 2]
func.func @f(%m: !stg.tensor<[B] @tp, f32>, %t: !stg.tensor<[B], f32>) {
  %l = stg.vocab_cross_entropy %m, %t, %t : !stg.tensor<[B] @tp, f32>, !stg.tensor<[B], f32>, !stg.tensor<[B], f32> -> !stg.tensor<[], f32>
  func.return
}

// CHECK: vocab_cross_entropy: max, target and sum_exp are the same whole per-token statistics, not [B] @tp, [B], [B]
