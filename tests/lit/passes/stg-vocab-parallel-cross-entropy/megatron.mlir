// RUN: stagec-opt %s -p stg-vocab-parallel-cross-entropy | filecheck %s
// RUN: stagec-opt %s -p stg-vocab-parallel-cross-entropy --print-op-generic | stagec-opt | filecheck %s

// Megatron's vocab-parallel cross-entropy: each rank's max, label logit and sum of
// exponentials over its vocab shard, each all-reduced over tp (the max by max), then
// the loss. A cross-entropy over a whole vocab, and the one a stg.vjp differentiates,
// stay fused.

stg.mesh @m [dp = 2, tp = 2]
func.func @loss(%logits: !stg.tensor<[B/dp, S, V/tp], bf16>, %labels: !stg.tensor<[B/dp, S], i64>, %whole: !stg.tensor<[B/dp, S, V], bf16>) {
  %loss = stg.cross_entropy %logits, %labels : !stg.tensor<[B/dp, S, V/tp], bf16>, !stg.tensor<[B/dp, S], i64> -> !stg.tensor<[] @dp, f32>
  %other = stg.cross_entropy %whole, %labels : !stg.tensor<[B/dp, S, V], bf16>, !stg.tensor<[B/dp, S], i64> -> !stg.tensor<[] @dp, f32>
  func.return
}

// CHECK-LABEL: func.func @loss
// CHECK-NEXT:    %loss_max_local = stg.vocab_stat max %logits, %labels : !stg.tensor<[B/dp, S, V/tp], bf16>, !stg.tensor<[B/dp, S], i64> -> !stg.tensor<[B/dp, S] @tp, f32>
// CHECK-NEXT:    %loss_max = stg.all_reduce %loss_max_local on @m [tp] max : !stg.tensor<[B/dp, S] @tp, f32> -> !stg.tensor<[B/dp, S], f32>
// CHECK-NEXT:    %loss_target_local = stg.vocab_stat target %logits, %labels : {{.*}} -> !stg.tensor<[B/dp, S] @tp, f32>
// CHECK-NEXT:    %loss_target = stg.all_reduce %loss_target_local on @m [tp] : !stg.tensor<[B/dp, S] @tp, f32> -> !stg.tensor<[B/dp, S], f32>
// CHECK-NEXT:    %loss_sum_exp_local = stg.vocab_stat sum_exp %logits, %labels, %loss_max : !stg.tensor<[B/dp, S, V/tp], bf16>, !stg.tensor<[B/dp, S], i64>, !stg.tensor<[B/dp, S], f32> -> !stg.tensor<[B/dp, S] @tp, f32>
// CHECK-NEXT:    %loss_sum_exp = stg.all_reduce %loss_sum_exp_local on @m [tp] : !stg.tensor<[B/dp, S] @tp, f32> -> !stg.tensor<[B/dp, S], f32>
// CHECK-NEXT:    %loss = stg.vocab_cross_entropy %loss_max, %loss_target, %loss_sum_exp : !stg.tensor<[B/dp, S], f32>, !stg.tensor<[B/dp, S], f32>, !stg.tensor<[B/dp, S], f32> -> !stg.tensor<[] @dp, f32>
// CHECK-NEXT:    %other = stg.cross_entropy %whole, %labels
