// RUN: stagec-opt %s | stagec-opt | filecheck %s

// moe_combine is linear in the expert outputs: when they are a partial sum (experts
// whose down projection is split over tp), the combined tokens are the same partial
// sum. The result, which plays the tokens' part in the shape rules, is therefore
// allowed to be partial exactly where the expert outputs are.

stg.mesh @m [dp, tp, ep]
func.func @f(%e: !stg.tensor<[E, C/dp, H] @tp, bf16>, %s: !stg.tensor<[T/dp, E], f32>) {
  %c = stg.moe_combine %e, %s top_k 2 : !stg.tensor<[E, C/dp, H] @tp, bf16>, !stg.tensor<[T/dp, E], f32> -> !stg.tensor<[T/dp, H] @tp, bf16>
  func.return
}

// CHECK: %c = stg.moe_combine %e, %s top_k 2 : !stg.tensor<[E, C/dp, H] @tp, bf16>, !stg.tensor<[T/dp, E], f32> -> !stg.tensor<[T/dp, H] @tp, bf16>
