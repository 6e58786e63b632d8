// convert-torch-to-stg: aten._softmax over the last dim -> stg.softmax.
// The input is torch-mlir's FX import of a small module (Inputs/make_inputs.py).
// RUN: stagec-opt %S/Inputs/softmax.torch.mlir --pass-pipeline='builtin.module(convert-torch-to-stg)' | filecheck %s

// CHECK:      builtin.module attributes {stg.model = "torch", stg.config = {}} {
// CHECK-NEXT: func.func @forward() -> !stg.tensor<[B, S, 8], f32> {
// CHECK-NEXT: %x = stg.input "x" : !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %0 = stg.softmax %x dim 2 : !stg.tensor<[B, S, 8], f32> -> !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: func.return %0 : !stg.tensor<[B, S, 8], f32>
