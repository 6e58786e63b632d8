// convert-torch-to-stg: F.cross_entropy(logits.float().view(-1, V), labels.view(-1)) -> stg.cross_entropy on the unflattened [B, S, V] logits in their own type (f32 loss), as the templates write it.
// The input is torch-mlir's FX import of a small module (Inputs/make_inputs.py).
// RUN: stagec-opt %S/Inputs/cross-entropy.torch.mlir --pass-pipeline='builtin.module(convert-torch-to-stg)' | filecheck %s

// CHECK:      builtin.module attributes {stg.model = "torch", stg.config = {}} {
// CHECK-NEXT: func.func @forward() -> !stg.tensor<[], f32> {
// CHECK-NEXT: %logits = stg.input "logits" : !stg.tensor<[B, S, 50], bf16>
// CHECK-NEXT: %labels = stg.input "labels" : !stg.tensor<[B, S], i64>
// CHECK-NEXT: %loss = stg.cross_entropy %logits, %labels : !stg.tensor<[B, S, 50], bf16>, !stg.tensor<[B, S], i64> -> !stg.tensor<[], f32>
// CHECK-NEXT: func.return %loss : !stg.tensor<[], f32>
