// convert-torch-to-stg: view, permute, split, cat, transpose, reshape, slice and expand: permutations stay lazy until an op needs torch's order (split/concat), the full slice and the expand are no-ops.
// The input is torch-mlir's FX import of a small module (Inputs/make_inputs.py).
// RUN: stagec-opt %S/Inputs/shapes.torch.mlir --pass-pipeline='builtin.module(convert-torch-to-stg)' | filecheck %s

// CHECK:      builtin.module attributes {stg.model = "torch", stg.config = {}} {
// CHECK-NEXT: func.func @forward() -> !stg.tensor<[B, S, 12], f32> {
// CHECK-NEXT: %x = stg.input "x" : !stg.tensor<[B, S, 12], f32>
// CHECK-NEXT: %0 = stg.reshape %x : !stg.tensor<[B, S, 12], f32> -> !stg.tensor<[B, S, 2, 6], f32>
// CHECK-NEXT: %1 = stg.transpose %0 perm [0 : i64, 2 : i64, 1 : i64, 3 : i64] : !stg.tensor<[B, S, 2, 6], f32> -> !stg.tensor<[B, 2, S, 6], f32>
// CHECK-NEXT: %2, %3 = stg.split %1 dim 3 : !stg.tensor<[B, 2, S, 6], f32> -> !stg.tensor<[B, 2, S, 3], f32>, !stg.tensor<[B, 2, S, 3], f32>
// CHECK-NEXT: %4 = stg.concat %3, %2 dim 3 : !stg.tensor<[B, 2, S, 3], f32>, !stg.tensor<[B, 2, S, 3], f32> -> !stg.tensor<[B, 2, S, 6], f32>
// CHECK-NEXT: %5 = stg.transpose %4 perm [0 : i64, 2 : i64, 1 : i64, 3 : i64] : !stg.tensor<[B, 2, S, 6], f32> -> !stg.tensor<[B, S, 2, 6], f32>
// CHECK-NEXT: %6 = stg.reshape %5 : !stg.tensor<[B, S, 2, 6], f32> -> !stg.tensor<[B, S, 12], f32>
// CHECK-NEXT: %7 = stg.elementwise add %6, %x : !stg.tensor<[B, S, 12], f32>, !stg.tensor<[B, S, 12], f32> -> !stg.tensor<[B, S, 12], f32>
// CHECK-NEXT: func.return %7 : !stg.tensor<[B, S, 12], f32>
