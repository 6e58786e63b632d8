// convert-torch-to-stg: mean, sum and amax over the last dim -> stg.reduce mean/sum/max.
// The input is torch-mlir's FX import of a small module (Inputs/make_inputs.py).
// RUN: stagec-opt %S/Inputs/reductions.torch.mlir --pass-pipeline='builtin.module(convert-torch-to-stg)' | filecheck %s

// CHECK:      builtin.module attributes {stg.model = "torch", stg.config = {}} {
// CHECK-NEXT: func.func @forward() -> !stg.tensor<[B, S], f32> {
// CHECK-NEXT: %x = stg.input "x" : !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %0 = stg.reduce mean %x dims [2 : i64] : !stg.tensor<[B, S, 8], f32> -> !stg.tensor<[B, S], f32>
// CHECK-NEXT: %1 = stg.reduce sum %x dims [2 : i64] : !stg.tensor<[B, S, 8], f32> -> !stg.tensor<[B, S], f32>
// CHECK-NEXT: %2 = stg.reduce max %x dims [2 : i64] : !stg.tensor<[B, S, 8], f32> -> !stg.tensor<[B, S], f32>
// CHECK-NEXT: %3 = stg.elementwise add %0, %1 : !stg.tensor<[B, S], f32>, !stg.tensor<[B, S], f32> -> !stg.tensor<[B, S], f32>
// CHECK-NEXT: %4 = stg.elementwise sub %3, %2 : !stg.tensor<[B, S], f32>, !stg.tensor<[B, S], f32> -> !stg.tensor<[B, S], f32>
// CHECK-NEXT: func.return %4 : !stg.tensor<[B, S], f32>
