// convert-torch-to-stg: aten.embedding of the input ids -> stg.embedding over the [V, H] table (V and H named from the table).
// The input is torch-mlir's FX import of a small module (Inputs/make_inputs.py).
// RUN: stagec-opt %S/Inputs/embedding.torch.mlir --pass-pipeline='builtin.module(convert-torch-to-stg)' | filecheck %s

// CHECK:      builtin.module attributes {stg.model = "torch", stg.config = {H = 8 : i64, V = 50 : i64}} {
// CHECK-NEXT: func.func @forward() -> !stg.tensor<[B, S, H], f32> {
// CHECK-NEXT: %input_ids = stg.input "input_ids" : !stg.tensor<[B, S], i64>
// CHECK-NEXT: %embed_tokens = stg.param "embed_tokens.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: %x = stg.embedding %embed_tokens, %input_ids : !stg.tensor<[V, H], f32>, !stg.tensor<[B, S], i64> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: func.return %x : !stg.tensor<[B, S, H], f32>
