// convert-torch-to-stg: aten.linear with a bias -> stg.einsum over the weight in torch's [out, in] orientation + elementwise add of the bias.
// The input is torch-mlir's FX import of a small module (Inputs/make_inputs.py).
// RUN: stagec-opt %S/Inputs/linear.torch.mlir --pass-pipeline='builtin.module(convert-torch-to-stg)' | filecheck %s

// CHECK:      builtin.module attributes {stg.model = "torch", stg.config = {}} {
// CHECK-NEXT: func.func @forward() -> !stg.tensor<[B, S, 12], f32> {
// CHECK-NEXT: %x = stg.input "x" : !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %proj = stg.param "proj.weight" : !stg.tensor<[12, 8], f32>
// CHECK-NEXT: %0 = stg.einsum "bso,io->bsi" %x, %proj : !stg.tensor<[B, S, 8], f32>, !stg.tensor<[12, 8], f32> -> !stg.tensor<[B, S, 12], f32>
// CHECK-NEXT: %proj_bias = stg.param "proj.bias" : !stg.tensor<[12], f32>
// CHECK-NEXT: %1 = stg.elementwise add %0, %proj_bias : !stg.tensor<[B, S, 12], f32>, !stg.tensor<[12], f32> -> !stg.tensor<[B, S, 12], f32>
// CHECK-NEXT: func.return %1 : !stg.tensor<[B, S, 12], f32>
