// convert-torch-to-stg: MoE routing: softmax router probabilities, topk, normalized top-k weights scattered into scores, and stagec's moe_dispatch/moe_combine custom ops -> stg.moe_dispatch and stg.moe_combine (top_k 2, normalize) over the softmax scores; the capacity x.shape[0] // 2 is the size B*S/2; aten.einsum over the expert buffers -> stg.einsum.
// The input is torch-mlir's FX import of a small module (Inputs/make_inputs.py).
// RUN: stagec-opt %S/Inputs/moe-routing.torch.mlir --pass-pipeline='builtin.module(convert-torch-to-stg)' | filecheck %s

// CHECK:      builtin.module attributes {stg.model = "torch", stg.config = {}} {
// CHECK-NEXT: func.func @forward() -> !stg.tensor<[B*S, 8], f32> {
// CHECK-NEXT: %x = stg.input "x" : !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %gate = stg.param "gate.weight" : !stg.tensor<[4, 8], f32>
// CHECK-NEXT: %0 = stg.reshape %x : !stg.tensor<[B, S, 8], f32> -> !stg.tensor<[B*S, 8], f32>
// CHECK-NEXT: %1 = stg.einsum "to,io->ti" %0, %gate : !stg.tensor<[B*S, 8], f32>, !stg.tensor<[4, 8], f32> -> !stg.tensor<[B*S, 4], f32>
// CHECK-NEXT: %2 = stg.softmax %1 dim 1 : !stg.tensor<[B*S, 4], f32> -> !stg.tensor<[B*S, 4], f32>
// CHECK-NEXT: %dispatched = stg.moe_dispatch %0, %2 top_k 2 : !stg.tensor<[B*S, 8], f32>, !stg.tensor<[B*S, 4], f32> -> !stg.tensor<[4, (B*S/2), 8], f32>
// CHECK-NEXT: %w = stg.param "w" : !stg.tensor<[4, 6, 8], f32>
// CHECK-NEXT: %3 = stg.einsum "ech,efh->ecf" %dispatched, %w : !stg.tensor<[4, (B*S/2), 8], f32>, !stg.tensor<[4, 6, 8], f32> -> !stg.tensor<[4, (B*S/2), 6], f32>
// CHECK-NEXT: %w2 = stg.param "w2" : !stg.tensor<[4, 8, 6], f32>
// CHECK-NEXT: %4 = stg.elementwise silu %3 : !stg.tensor<[4, (B*S/2), 6], f32> -> !stg.tensor<[4, (B*S/2), 6], f32>
// CHECK-NEXT: %5 = stg.einsum "ecf,ehf->ech" %4, %w2 : !stg.tensor<[4, (B*S/2), 6], f32>, !stg.tensor<[4, 8, 6], f32> -> !stg.tensor<[4, (B*S/2), 8], f32>
// CHECK-NEXT: %combined = stg.moe_combine %5, %2 top_k 2 normalize : !stg.tensor<[4, (B*S/2), 8], f32>, !stg.tensor<[B*S, 4], f32> -> !stg.tensor<[B*S, 8], f32>
// CHECK-NEXT: func.return %combined : !stg.tensor<[B*S, 8], f32>
