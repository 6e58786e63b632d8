// convert-torch-to-stg: add/sub/mul/div (tensor and scalar: div by 2 is scale by 0.5, + 1.0 a filled scalar), neg, exp, rsqrt, silu, gelu (tanh), relu.
// The input is torch-mlir's FX import of a small module (Inputs/make_inputs.py).
// RUN: stagec-opt %S/Inputs/elementwise.torch.mlir --pass-pipeline='builtin.module(convert-torch-to-stg)' | filecheck %s

// CHECK:      builtin.module attributes {stg.model = "torch", stg.config = {}} {
// CHECK-NEXT: func.func @forward() -> !stg.tensor<[B, S, 8], f32> {
// CHECK-NEXT: %x = stg.input "x" : !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %y = stg.input "y" : !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %0 = stg.fill 1.000000e+00 : !stg.tensor<[], f32>
// CHECK-NEXT: %1 = stg.elementwise mul %y, %y : !stg.tensor<[B, S, 8], f32>, !stg.tensor<[B, S, 8], f32> -> !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %2 = stg.elementwise add %1, %0 : !stg.tensor<[B, S, 8], f32>, !stg.tensor<[], f32> -> !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %3 = stg.elementwise rsqrt %2 : !stg.tensor<[B, S, 8], f32> -> !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %4 = stg.elementwise neg %x : !stg.tensor<[B, S, 8], f32> -> !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %5 = stg.elementwise exp %4 : !stg.tensor<[B, S, 8], f32> -> !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %6 = stg.elementwise mul %5, %3 : !stg.tensor<[B, S, 8], f32>, !stg.tensor<[B, S, 8], f32> -> !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %7 = stg.elementwise relu %y : !stg.tensor<[B, S, 8], f32> -> !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %8 = stg.elementwise gelu %x : !stg.tensor<[B, S, 8], f32> -> !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %9 = stg.elementwise scale %y by 5.000000e-01 : !stg.tensor<[B, S, 8], f32> -> !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %10 = stg.elementwise add %x, %y : !stg.tensor<[B, S, 8], f32>, !stg.tensor<[B, S, 8], f32> -> !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %11 = stg.elementwise mul %10, %x : !stg.tensor<[B, S, 8], f32>, !stg.tensor<[B, S, 8], f32> -> !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %12 = stg.elementwise sub %11, %9 : !stg.tensor<[B, S, 8], f32>, !stg.tensor<[B, S, 8], f32> -> !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %13 = stg.elementwise silu %12 : !stg.tensor<[B, S, 8], f32> -> !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %14 = stg.elementwise add %13, %8 : !stg.tensor<[B, S, 8], f32>, !stg.tensor<[B, S, 8], f32> -> !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %15 = stg.elementwise add %14, %7 : !stg.tensor<[B, S, 8], f32>, !stg.tensor<[B, S, 8], f32> -> !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: %16 = stg.elementwise add %15, %6 : !stg.tensor<[B, S, 8], f32>, !stg.tensor<[B, S, 8], f32> -> !stg.tensor<[B, S, 8], f32>
// CHECK-NEXT: func.return %16 : !stg.tensor<[B, S, 8], f32>
