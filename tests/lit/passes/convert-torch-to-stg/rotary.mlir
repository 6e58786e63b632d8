// convert-torch-to-stg: the rotary embedding as torch writes it, x * cos + rotate_half(x) * sin with cos/sin from arange and an inv_freq buffer -> stg.elementwise rotary over the rope.angles input [S, 1, D].
// The input is torch-mlir's FX import of a small module (Inputs/make_inputs.py).
// RUN: stagec-opt %S/Inputs/rotary.torch.mlir --pass-pipeline='builtin.module(convert-torch-to-stg)' | filecheck %s

// CHECK:      builtin.module attributes {stg.model = "torch", stg.config = {}} {
// CHECK-NEXT: func.func @forward() -> !stg.tensor<[B, S, 4, 8], f32> {
// CHECK-NEXT: %q = stg.input "q" : !stg.tensor<[B, S, 4, 8], f32>
// CHECK-NEXT: %rope_angles = stg.input "rope.angles" : !stg.tensor<[S, 1, 8], f32>
// CHECK-NEXT: %0 = stg.elementwise rotary %q, %rope_angles : !stg.tensor<[B, S, 4, 8], f32>, !stg.tensor<[S, 1, 8], f32> -> !stg.tensor<[B, S, 4, 8], f32>
// CHECK-NEXT: func.return %0 : !stg.tensor<[B, S, 4, 8], f32>
