// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-autodiff{optimizer=adamw})' | filecheck %s

// Mixed precision (DeepCompile §5.1): bf16 parameters compute; their gradients are cast
// to fp32 "grad" states, and AdamW runs on fp32 master weights and moments, writing the
// bf16 compute copy back.

func.func @forward() -> !stg.tensor<[], f32> {
  %x = stg.input "x" : !stg.tensor<[B, H], bf16>
  %labels = stg.input "labels" : !stg.tensor<[B], i64>
  %w = stg.param "head.weight" : !stg.tensor<[V, H], bf16>
  %logits = stg.einsum "bh,vh->bv" %x, %w : !stg.tensor<[B, H], bf16>, !stg.tensor<[V, H], bf16> -> !stg.tensor<[B, V], bf16>
  %loss = stg.cross_entropy %logits, %labels : !stg.tensor<[B, V], bf16>, !stg.tensor<[B], i64> -> !stg.tensor<[], f32>
  func.return %loss : !stg.tensor<[], f32>
}

// CHECK:      func.func @train_step() -> !stg.tensor<[], f32> {
// CHECK-NEXT: %x = stg.input "x" : !stg.tensor<[B, H], bf16>
// CHECK-NEXT: %labels = stg.input "labels" : !stg.tensor<[B], i64>
// CHECK-NEXT: %logits, %loss = stg.phase forward {
// CHECK-NEXT: %w = stg.param "head.weight" : !stg.tensor<[V, H], bf16>
// CHECK-NEXT: %logits_1 = stg.einsum "bh,vh->bv" %x, %w : !stg.tensor<[B, H], bf16>, !stg.tensor<[V, H], bf16> -> !stg.tensor<[B, V], bf16>
// CHECK-NEXT: %loss_1 = stg.cross_entropy %logits_1, %labels : !stg.tensor<[B, V], bf16>, !stg.tensor<[B], i64> -> !stg.tensor<[], f32>
// CHECK-NEXT: stg.yield %logits_1, %loss_1 : !stg.tensor<[B, V], bf16>, !stg.tensor<[], f32>
// CHECK-NEXT: }
// CHECK-NEXT: stg.phase backward {
// CHECK-NEXT: %0 = stg.fill 1.000000e+00 : !stg.tensor<[], f32>
// CHECK-NEXT: %1 = stg.vjp(%logits, %labels) wrt [0] cotangents(%0 : !stg.tensor<[], f32>) {
// CHECK-NEXT: ^bb0(%2: !stg.tensor<[B, V], bf16>, %3: !stg.tensor<[B], i64>):
// CHECK-NEXT: %loss_2 = stg.cross_entropy %2, %3 : !stg.tensor<[B, V], bf16>, !stg.tensor<[B], i64> -> !stg.tensor<[], f32>
// CHECK-NEXT: stg.yield %loss_2 : !stg.tensor<[], f32>
// CHECK-NEXT: } : (!stg.tensor<[B, V], bf16>, !stg.tensor<[B], i64>) -> (!stg.tensor<[B, V], bf16>)
// CHECK-NEXT: %w_1 = stg.param "head.weight" : !stg.tensor<[V, H], bf16>
// CHECK-NEXT: %4 = stg.einsum "bv,vh->bh" %1, %w_1 : !stg.tensor<[B, V], bf16>, !stg.tensor<[V, H], bf16> -> !stg.tensor<[B, H], bf16>
// CHECK-NEXT: %5 = stg.einsum "bv,bh->vh" %1, %x : !stg.tensor<[B, V], bf16>, !stg.tensor<[B, H], bf16> -> !stg.tensor<[V, H], bf16>
// CHECK-NEXT: %6 = stg.elementwise cast %5 : !stg.tensor<[V, H], bf16> -> !stg.tensor<[V, H], f32>
// CHECK-NEXT: stg.assign %6 to "grad" of "head.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: stg.yield
// CHECK-NEXT: }
// CHECK-NEXT: stg.phase optimizer {
// CHECK-NEXT: %7 = stg.optimizer_state "master" of "head.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: %8 = stg.optimizer_state "grad" of "head.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: %9 = stg.optimizer_state "exp_avg" of "head.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: %10 = stg.optimizer_state "exp_avg_sq" of "head.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: %11 = stg.optimizer_state "step" of "head.weight" : !stg.tensor<[], f32>
// CHECK-NEXT: %12, %13, %14, %15 = stg.adam %7, %8, %9, %10, %11 lr 1.000000e-04 betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08 weight_decay 0.000000e+00 decoupled : !stg.tensor<[V, H], f32>, !stg.tensor<[V, H], f32>, !stg.tensor<[V, H], f32>, !stg.tensor<[V, H], f32>, !stg.tensor<[], f32> -> !stg.tensor<[V, H], f32>, !stg.tensor<[V, H], f32>, !stg.tensor<[V, H], f32>, !stg.tensor<[], f32>
// CHECK-NEXT: stg.assign %13 to "exp_avg" of "head.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: stg.assign %14 to "exp_avg_sq" of "head.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: stg.assign %15 to "step" of "head.weight" : !stg.tensor<[], f32>
// CHECK-NEXT: stg.assign %12 to "master" of "head.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: %16 = stg.elementwise cast %12 : !stg.tensor<[V, H], f32> -> !stg.tensor<[V, H], bf16>
// CHECK-NEXT: stg.assign %16 to "head.weight" : !stg.tensor<[V, H], bf16>
// CHECK-NEXT: stg.yield
// CHECK-NEXT: }
// CHECK-NEXT: func.return %loss : !stg.tensor<[], f32>
// CHECK-NEXT: }
// CHECK-NEXT: }
