// convert-torch-to-stg: GPT-2's Conv1D, aten.addmm(bias, x.view(-1, in), W[in, out]) -> an einsum over the weight as stored + the bias; gelu_new written as torch arithmetic (0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3)))) -> one stg.elementwise gelu.
// The input is torch-mlir's FX import of a small module (Inputs/make_inputs.py).
// RUN: stagec-opt %S/Inputs/conv1d-gelu.torch.mlir --pass-pipeline='builtin.module(convert-torch-to-stg)' | filecheck %s

// CHECK:      builtin.module attributes {stg.model = "torch", stg.config = {}} {
// CHECK-NEXT: func.func @forward() -> !stg.tensor<[B, S, 12], f32> {
// CHECK-NEXT: %x = stg.input "x" : !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %weight = stg.param "weight" : !stg.tensor<[8, 12], f32>
// CHECK-NEXT: %0 = stg.reshape %x : !stg.tensor<[B, S, 8], f32> -> !stg.tensor<[B*S, 8], f32>
// CHECK-NEXT: %1 = stg.einsum "to,oi->ti" %0, %weight : !stg.tensor<[B*S, 8], f32>, !stg.tensor<[8, 12], f32> -> !stg.tensor<[B*S, 12], f32>
// CHECK-NEXT: %bias = stg.param "bias" : !stg.tensor<[12], f32>
// CHECK-NEXT: %2 = stg.elementwise add %1, %bias : !stg.tensor<[B*S, 12], f32>, !stg.tensor<[12], f32> -> !stg.tensor<[B*S, 12], f32>
// CHECK-NEXT: %3 = stg.reshape %2 : !stg.tensor<[B*S, 12], f32> -> !stg.tensor<[B, S, 12], f32>
// CHECK-NEXT: %4 = stg.elementwise gelu %3 : !stg.tensor<[B, S, 12], f32> -> !stg.tensor<[B, S, 12], f32>
// CHECK-NEXT: func.return %4 : !stg.tensor<[B, S, 12], f32>
