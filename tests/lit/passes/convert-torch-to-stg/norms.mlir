// convert-torch-to-stg: aten.layer_norm and aten.rms_norm -> stg.norm layer/rms with their eps; torch ops weight * (x * rsqrt(mean(x^2) + eps)) (Llama's RMSNorm, decomposed) -> one stg.norm rms.
// The input is torch-mlir's FX import of a small module (Inputs/make_inputs.py).
// RUN: stagec-opt %S/Inputs/norms.torch.mlir --pass-pipeline='builtin.module(convert-torch-to-stg)' | filecheck %s

// CHECK:      builtin.module attributes {stg.model = "torch", stg.config = {}} {
// CHECK-NEXT: func.func @forward() -> !stg.tensor<[B, S, 8], f32> {
// CHECK-NEXT: %x = stg.input "x" : !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %weight = stg.param "weight" : !stg.tensor<[8], f32>
// CHECK-NEXT: %0 = stg.norm rms %x, %weight {eps = 1.000000e-05 : f64} : !stg.tensor<[B, S, 8], f32>, !stg.tensor<[8], f32> -> !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %ln = stg.param "ln.weight" : !stg.tensor<[8], f32>
// CHECK-NEXT: %ln_bias = stg.param "ln.bias" : !stg.tensor<[8], f32>
// CHECK-NEXT: %1 = stg.norm layer %x, %ln, %ln_bias {eps = 1.000000e-05 : f64} : !stg.tensor<[B, S, 8], f32>, !stg.tensor<[8], f32>, !stg.tensor<[8], f32> -> !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %rms = stg.param "rms.weight" : !stg.tensor<[8], f32>
// CHECK-NEXT: %2 = stg.norm rms %x, %rms {eps = 1.000000e-06 : f64} : !stg.tensor<[B, S, 8], f32>, !stg.tensor<[8], f32> -> !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %3 = stg.elementwise add %1, %2 : !stg.tensor<[B, S, 8], f32>, !stg.tensor<[B, S, 8], f32> -> !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %4 = stg.elementwise add %3, %0 : !stg.tensor<[B, S, 8], f32>, !stg.tensor<[B, S, 8], f32> -> !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: func.return %4 : !stg.tensor<[B, S, 8], f32>
