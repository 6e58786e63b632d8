// convert-torch-to-stg: aten.matmul of a and b^T (a transpose folded into the einsum's subscripts, no stg.transpose).
// The input is torch-mlir's FX import of a small module (Inputs/make_inputs.py).
// RUN: stagec-opt %S/Inputs/matmul.torch.mlir --pass-pipeline='builtin.module(convert-torch-to-stg)' | filecheck %s

// CHECK:      builtin.module attributes {stg.model = "torch", stg.config = {}} {
// CHECK-NEXT: func.func @forward() -> !stg.tensor<[B, S, 5], f32> {
// CHECK-NEXT: %b = stg.input "b" : !stg.tensor<[B, 5, 8], f32>
// CHECK-NEXT: %a = stg.input "a" : !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %0 = stg.einsum "amk,ank->amn" %a, %b : !stg.tensor<[B, S, 8], f32>, !stg.tensor<[B, 5, 8], f32> -> !stg.tensor<[B, S, 5], f32>
// CHECK-NEXT: func.return %0 : !stg.tensor<[B, S, 5], f32>
