// convert-torch-to-stg: token and position embeddings: an embedding of arange positions (position-only) reads the program's position_ids input; its table is [P, H].
// The input is torch-mlir's FX import of a small module (Inputs/make_inputs.py).
// RUN: stagec-opt %S/Inputs/positions.torch.mlir --pass-pipeline='builtin.module(convert-torch-to-stg)' | filecheck %s

// CHECK:      builtin.module attributes {stg.model = "torch", stg.config = {H = 8 : i64, V = 50 : i64, P = 16 : i64}} {
// CHECK-NEXT: func.func @forward() -> !stg.tensor<[B, S, H], f32> {
// CHECK-NEXT: %input_ids = stg.input "input_ids" : !stg.tensor<[B, S], i64>
// CHECK-NEXT: %position_ids = stg.input "position_ids" : !stg.tensor<[B, S], i64>
// CHECK-NEXT: %wte = stg.param "wte.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: %x = stg.embedding %wte, %input_ids : !stg.tensor<[V, H], f32>, !stg.tensor<[B, S], i64> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: %wpe = stg.param "wpe.weight" : !stg.tensor<[P, H], f32>
// CHECK-NEXT: %x_1 = stg.embedding %wpe, %position_ids : !stg.tensor<[P, H], f32>, !stg.tensor<[B, S], i64> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: %0 = stg.elementwise add %x, %x_1 : !stg.tensor<[B, S, H], f32>, !stg.tensor<[B, S, H], f32> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: func.return %0 : !stg.tensor<[B, S, H], f32>
