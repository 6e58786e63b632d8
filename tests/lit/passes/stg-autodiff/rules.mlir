// RUN: stagec-opt %s --split-input-file --pass-pipeline='builtin.module(stg-autodiff{optimizer=none})' | filecheck %s

// Each case differentiates one op: the loss is the sum of its result, so the seed
// cotangent is a tensor of ones.

// add: both operands get the cotangent; only the parameter is stored
func.func @forward() -> !stg.tensor<[], f32> {
  %x = stg.input "x" : !stg.tensor<[B, H], f32>
  %w = stg.param "w" : !stg.tensor<[B, H], f32>
  %y = stg.elementwise add %x, %w : !stg.tensor<[B, H], f32>, !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
  %l = stg.reduce sum %y dims [0, 1] : !stg.tensor<[B, H], f32> -> !stg.tensor<[], f32>
  func.return %l : !stg.tensor<[], f32>
}

// CHECK-LABEL: func.func @train_step
// CHECK:      stg.phase backward {
// CHECK-NEXT: %0 = stg.fill 1.000000e+00 : !stg.tensor<[], f32>
// CHECK-NEXT: %1 = stg.reshape %0 : !stg.tensor<[], f32> -> !stg.tensor<[1, 1], f32>
// CHECK-NEXT: %2 = stg.elementwise copy %1 : !stg.tensor<[1, 1], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT: stg.assign %2 to "grad" of "w" : !stg.tensor<[B, H], f32>
// CHECK-NEXT: stg.yield
// CHECK-NEXT: }

// -----

// a broadcast bias sums its cotangent over the broadcast dim
func.func @forward() -> !stg.tensor<[], f32> {
  %x = stg.input "x" : !stg.tensor<[B, H], f32>
  %b = stg.param "b" : !stg.tensor<[H], f32>
  %y = stg.elementwise add %x, %b : !stg.tensor<[B, H], f32>, !stg.tensor<[H], f32> -> !stg.tensor<[B, H], f32>
  %l = stg.reduce sum %y dims [0, 1] : !stg.tensor<[B, H], f32> -> !stg.tensor<[], f32>
  func.return %l : !stg.tensor<[], f32>
}

// CHECK-LABEL: func.func @train_step
// CHECK:      stg.phase backward {
// CHECK-NEXT: %0 = stg.fill 1.000000e+00 : !stg.tensor<[], f32>
// CHECK-NEXT: %1 = stg.reshape %0 : !stg.tensor<[], f32> -> !stg.tensor<[1, 1], f32>
// CHECK-NEXT: %2 = stg.elementwise copy %1 : !stg.tensor<[1, 1], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT: %3 = stg.reduce sum %2 dims [0 : i64] : !stg.tensor<[B, H], f32> -> !stg.tensor<[H], f32>
// CHECK-NEXT: stg.assign %3 to "grad" of "b" : !stg.tensor<[H], f32>
// CHECK-NEXT: stg.yield
// CHECK-NEXT: }

// -----

// mul: the other factor scales the cotangent; no work for the input
func.func @forward() -> !stg.tensor<[], f32> {
  %x = stg.input "x" : !stg.tensor<[B, H], f32>
  %w = stg.param "w" : !stg.tensor<[B, H], f32>
  %y = stg.elementwise mul %x, %w : !stg.tensor<[B, H], f32>, !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
  %l = stg.reduce sum %y dims [0, 1] : !stg.tensor<[B, H], f32> -> !stg.tensor<[], f32>
  func.return %l : !stg.tensor<[], f32>
}

// CHECK-LABEL: func.func @train_step
// CHECK:      stg.phase backward {
// CHECK-NEXT: %0 = stg.fill 1.000000e+00 : !stg.tensor<[], f32>
// CHECK-NEXT: %1 = stg.reshape %0 : !stg.tensor<[], f32> -> !stg.tensor<[1, 1], f32>
// CHECK-NEXT: %2 = stg.elementwise copy %1 : !stg.tensor<[1, 1], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT: %3 = stg.elementwise mul %2, %x : !stg.tensor<[B, H], f32>, !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT: stg.assign %3 to "grad" of "w" : !stg.tensor<[B, H], f32>
// CHECK-NEXT: stg.yield
// CHECK-NEXT: }

// -----

// div: d/db = -(dy / b) * y, reusing dy / b
func.func @forward() -> !stg.tensor<[], f32> {
  %w = stg.param "w" : !stg.tensor<[B, H], f32>
  %y = stg.elementwise div %w, %w : !stg.tensor<[B, H], f32>, !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
  %l = stg.reduce sum %y dims [0, 1] : !stg.tensor<[B, H], f32> -> !stg.tensor<[], f32>
  func.return %l : !stg.tensor<[], f32>
}

// CHECK-LABEL: func.func @train_step
// CHECK:      stg.phase backward {
// CHECK-NEXT: %0 = stg.fill 1.000000e+00 : !stg.tensor<[], f32>
// CHECK-NEXT: %1 = stg.reshape %0 : !stg.tensor<[], f32> -> !stg.tensor<[1, 1], f32>
// CHECK-NEXT: %2 = stg.elementwise copy %1 : !stg.tensor<[1, 1], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT: %w_1 = stg.param "w" : !stg.tensor<[B, H], f32>
// CHECK-NEXT: %3 = stg.elementwise div %2, %w_1 : !stg.tensor<[B, H], f32>, !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT: %4 = stg.elementwise mul %3, %y : !stg.tensor<[B, H], f32>, !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT: %5 = stg.elementwise neg %4 : !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT: %6 = stg.elementwise add %3, %5 : !stg.tensor<[B, H], f32>, !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT: stg.assign %6 to "grad" of "w" : !stg.tensor<[B, H], f32>
// CHECK-NEXT: stg.yield
// CHECK-NEXT: }

// -----

// exp reuses its result
func.func @forward() -> !stg.tensor<[], f32> {
  %w = stg.param "w" : !stg.tensor<[B, H], f32>
  %y = stg.elementwise exp %w : !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
  %l = stg.reduce sum %y dims [0, 1] : !stg.tensor<[B, H], f32> -> !stg.tensor<[], f32>
  func.return %l : !stg.tensor<[], f32>
}

// CHECK-LABEL: func.func @train_step
// CHECK:      stg.phase backward {
// CHECK-NEXT: %0 = stg.fill 1.000000e+00 : !stg.tensor<[], f32>
// CHECK-NEXT: %1 = stg.reshape %0 : !stg.tensor<[], f32> -> !stg.tensor<[1, 1], f32>
// CHECK-NEXT: %2 = stg.elementwise copy %1 : !stg.tensor<[1, 1], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT: %3 = stg.elementwise mul %2, %y : !stg.tensor<[B, H], f32>, !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT: stg.assign %3 to "grad" of "w" : !stg.tensor<[B, H], f32>
// CHECK-NEXT: stg.yield
// CHECK-NEXT: }

// -----

// rsqrt: dy * -0.5 * y^3
func.func @forward() -> !stg.tensor<[], f32> {
  %w = stg.param "w" : !stg.tensor<[B, H], f32>
  %y = stg.elementwise rsqrt %w : !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
  %l = stg.reduce sum %y dims [0, 1] : !stg.tensor<[B, H], f32> -> !stg.tensor<[], f32>
  func.return %l : !stg.tensor<[], f32>
}

// CHECK-LABEL: func.func @train_step
// CHECK:      stg.phase backward {
// CHECK-NEXT: %0 = stg.fill 1.000000e+00 : !stg.tensor<[], f32>
// CHECK-NEXT: %1 = stg.reshape %0 : !stg.tensor<[], f32> -> !stg.tensor<[1, 1], f32>
// CHECK-NEXT: %2 = stg.elementwise copy %1 : !stg.tensor<[1, 1], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT: %3 = stg.elementwise square %y : !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT: %4 = stg.elementwise mul %y, %3 : !stg.tensor<[B, H], f32>, !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT: %5 = stg.elementwise mul %2, %4 : !stg.tensor<[B, H], f32>, !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT: %6 = stg.elementwise scale %5 by -5.000000e-01 : !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT: stg.assign %6 to "grad" of "w" : !stg.tensor<[B, H], f32>
// CHECK-NEXT: stg.yield
// CHECK-NEXT: }

// -----

// scale by the same factor
func.func @forward() -> !stg.tensor<[], f32> {
  %w = stg.param "w" : !stg.tensor<[B, H], f32>
  %y = stg.elementwise scale %w by 2.5 : !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
  %l = stg.reduce sum %y dims [0, 1] : !stg.tensor<[B, H], f32> -> !stg.tensor<[], f32>
  func.return %l : !stg.tensor<[], f32>
}

// CHECK-LABEL: func.func @train_step
// CHECK:      stg.phase backward {
// CHECK-NEXT: %0 = stg.fill 1.000000e+00 : !stg.tensor<[], f32>
// CHECK-NEXT: %1 = stg.reshape %0 : !stg.tensor<[], f32> -> !stg.tensor<[1, 1], f32>
// CHECK-NEXT: %2 = stg.elementwise copy %1 : !stg.tensor<[1, 1], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT: %3 = stg.elementwise scale %2 by 2.500000e+00 : !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT: stg.assign %3 to "grad" of "w" : !stg.tensor<[B, H], f32>
// CHECK-NEXT: stg.yield
// CHECK-NEXT: }

// -----

// activations use their *_grad kind on the forward input
func.func @forward() -> !stg.tensor<[], f32> {
  %w = stg.param "w" : !stg.tensor<[B, H], f32>
  %y = stg.elementwise gelu %w : !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
  %l = stg.reduce sum %y dims [0, 1] : !stg.tensor<[B, H], f32> -> !stg.tensor<[], f32>
  func.return %l : !stg.tensor<[], f32>
}

// CHECK-LABEL: func.func @train_step
// CHECK:      stg.phase backward {
// CHECK-NEXT: %0 = stg.fill 1.000000e+00 : !stg.tensor<[], f32>
// CHECK-NEXT: %1 = stg.reshape %0 : !stg.tensor<[], f32> -> !stg.tensor<[1, 1], f32>
// CHECK-NEXT: %2 = stg.elementwise copy %1 : !stg.tensor<[1, 1], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT: %w_1 = stg.param "w" : !stg.tensor<[B, H], f32>
// CHECK-NEXT: %3 = stg.elementwise gelu_grad %2, %w_1 : !stg.tensor<[B, H], f32>, !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT: stg.assign %3 to "grad" of "w" : !stg.tensor<[B, H], f32>
// CHECK-NEXT: stg.yield
// CHECK-NEXT: }

// -----

// cast back to the operand's element type
func.func @forward() -> !stg.tensor<[], f32> {
  %w = stg.param "w" : !stg.tensor<[B, H], bf16>
  %y = stg.elementwise cast %w : !stg.tensor<[B, H], bf16> -> !stg.tensor<[B, H], f32>
  %l = stg.reduce sum %y dims [0, 1] : !stg.tensor<[B, H], f32> -> !stg.tensor<[], f32>
  func.return %l : !stg.tensor<[], f32>
}

// CHECK-LABEL: func.func @train_step
// CHECK:      stg.phase backward {
// CHECK-NEXT: %0 = stg.fill 1.000000e+00 : !stg.tensor<[], f32>
// CHECK-NEXT: %1 = stg.reshape %0 : !stg.tensor<[], f32> -> !stg.tensor<[1, 1], f32>
// CHECK-NEXT: %2 = stg.elementwise copy %1 : !stg.tensor<[1, 1], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT: %3 = stg.elementwise cast %2 : !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], bf16>
// CHECK-NEXT: %4 = stg.elementwise cast %3 : !stg.tensor<[B, H], bf16> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT: stg.assign %4 to "grad" of "w" : !stg.tensor<[B, H], f32>
// CHECK-NEXT: stg.yield
// CHECK-NEXT: }

// -----

// rotary: the transpose of a rotation by theta is a rotation by -theta
func.func @forward() -> !stg.tensor<[], f32> {
  %w = stg.param "w" : !stg.tensor<[S, N, D], f32>
  %t = stg.input "rope.angles" : !stg.tensor<[S, 1, D], f32>
  %y = stg.elementwise rotary %w, %t : !stg.tensor<[S, N, D], f32>, !stg.tensor<[S, 1, D], f32> -> !stg.tensor<[S, N, D], f32>
  %l = stg.reduce sum %y dims [0, 1, 2] : !stg.tensor<[S, N, D], f32> -> !stg.tensor<[], f32>
  func.return %l : !stg.tensor<[], f32>
}

// CHECK-LABEL: func.func @train_step
// CHECK:      stg.phase backward {
// CHECK-NEXT: %0 = stg.fill 1.000000e+00 : !stg.tensor<[], f32>
// CHECK-NEXT: %1 = stg.reshape %0 : !stg.tensor<[], f32> -> !stg.tensor<[1, 1, 1], f32>
// CHECK-NEXT: %2 = stg.elementwise copy %1 : !stg.tensor<[1, 1, 1], f32> -> !stg.tensor<[S, N, D], f32>
// CHECK-NEXT: %3 = stg.elementwise neg %t : !stg.tensor<[S, 1, D], f32> -> !stg.tensor<[S, 1, D], f32>
// CHECK-NEXT: %4 = stg.elementwise rotary %2, %3 : !stg.tensor<[S, N, D], f32>, !stg.tensor<[S, 1, D], f32> -> !stg.tensor<[S, N, D], f32>
// CHECK-NEXT: stg.assign %4 to "grad" of "w" : !stg.tensor<[S, N, D], f32>
// CHECK-NEXT: stg.yield
// CHECK-NEXT: }

// -----

// einsum: one einsum per operand, the result's indices first
func.func @forward() -> !stg.tensor<[], f32> {
  %x = stg.input "x" : !stg.tensor<[B, H], f32>
  %w = stg.param "w" : !stg.tensor<[F, H], f32>
  %y = stg.einsum "bh,fh->bf" %x, %w : !stg.tensor<[B, H], f32>, !stg.tensor<[F, H], f32> -> !stg.tensor<[B, F], f32>
  %l = stg.reduce sum %y dims [0, 1] : !stg.tensor<[B, F], f32> -> !stg.tensor<[], f32>
  func.return %l : !stg.tensor<[], f32>
}

// CHECK-LABEL: func.func @train_step
// CHECK:      stg.phase backward {
// CHECK-NEXT: %0 = stg.fill 1.000000e+00 : !stg.tensor<[], f32>
// CHECK-NEXT: %1 = stg.reshape %0 : !stg.tensor<[], f32> -> !stg.tensor<[1, 1], f32>
// CHECK-NEXT: %2 = stg.elementwise copy %1 : !stg.tensor<[1, 1], f32> -> !stg.tensor<[B, F], f32>
// CHECK-NEXT: %w_1 = stg.param "w" : !stg.tensor<[F, H], f32>
// CHECK-NEXT: %3 = stg.einsum "bf,fh->bh" %2, %w_1 : !stg.tensor<[B, F], f32>, !stg.tensor<[F, H], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT: %4 = stg.einsum "bf,bh->fh" %2, %x : !stg.tensor<[B, F], f32>, !stg.tensor<[B, H], f32> -> !stg.tensor<[F, H], f32>
// CHECK-NEXT: stg.assign %4 to "grad" of "w" : !stg.tensor<[F, H], f32>
// CHECK-NEXT: stg.yield
// CHECK-NEXT: }

// -----

// reshape and transpose invert
func.func @forward() -> !stg.tensor<[], f32> {
  %w = stg.param "w" : !stg.tensor<[B, N, D], f32>
  %r = stg.reshape %w : !stg.tensor<[B, N, D], f32> -> !stg.tensor<[B, N*D], f32>
  %y = stg.transpose %r perm [1, 0] : !stg.tensor<[B, N*D], f32> -> !stg.tensor<[N*D, B], f32>
  %l = stg.reduce sum %y dims [0, 1] : !stg.tensor<[N*D, B], f32> -> !stg.tensor<[], f32>
  func.return %l : !stg.tensor<[], f32>
}

// CHECK-LABEL: func.func @train_step
// CHECK:      stg.phase backward {
// CHECK-NEXT: %0 = stg.fill 1.000000e+00 : !stg.tensor<[], f32>
// CHECK-NEXT: %1 = stg.reshape %0 : !stg.tensor<[], f32> -> !stg.tensor<[1, 1], f32>
// CHECK-NEXT: %2 = stg.elementwise copy %1 : !stg.tensor<[1, 1], f32> -> !stg.tensor<[D*N, B], f32>
// CHECK-NEXT: %3 = stg.transpose %2 perm [1 : i64, 0 : i64] : !stg.tensor<[D*N, B], f32> -> !stg.tensor<[B, D*N], f32>
// CHECK-NEXT: %4 = stg.reshape %3 : !stg.tensor<[B, D*N], f32> -> !stg.tensor<[B, N, D], f32>
// CHECK-NEXT: stg.assign %4 to "grad" of "w" : !stg.tensor<[B, N, D], f32>
// CHECK-NEXT: stg.yield
// CHECK-NEXT: }

// -----

// split: a piece without a cotangent contributes zeros to the concat
func.func @forward() -> !stg.tensor<[], f32> {
  %w = stg.param "w" : !stg.tensor<[B, 2*H], f32>
  %y, %z = stg.split %w dim 1 : !stg.tensor<[B, 2*H], f32> -> !stg.tensor<[B, H], f32>, !stg.tensor<[B, H], f32>
  %l = stg.reduce sum %y dims [0, 1] : !stg.tensor<[B, H], f32> -> !stg.tensor<[], f32>
  func.return %l : !stg.tensor<[], f32>
}

// CHECK-LABEL: func.func @train_step
// CHECK:      stg.phase backward {
// CHECK-NEXT: %0 = stg.fill 1.000000e+00 : !stg.tensor<[], f32>
// CHECK-NEXT: %1 = stg.reshape %0 : !stg.tensor<[], f32> -> !stg.tensor<[1, 1], f32>
// CHECK-NEXT: %2 = stg.elementwise copy %1 : !stg.tensor<[1, 1], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT: %3 = stg.fill 0.000000e+00 : !stg.tensor<[B, H], f32>
// CHECK-NEXT: %4 = stg.concat %2, %3 dim 1 : !stg.tensor<[B, H], f32>, !stg.tensor<[B, H], f32> -> !stg.tensor<[B, 2*H], f32>
// CHECK-NEXT: stg.assign %4 to "grad" of "w" : !stg.tensor<[B, 2*H], f32>
// CHECK-NEXT: stg.yield
// CHECK-NEXT: }

// -----

// reduce sum broadcasts back
func.func @forward() -> !stg.tensor<[], f32> {
  %w = stg.param "w" : !stg.tensor<[B, S, H], f32>
  %y = stg.reduce sum %w dims [1] : !stg.tensor<[B, S, H], f32> -> !stg.tensor<[B, H], f32>
  %l = stg.reduce sum %y dims [0, 1] : !stg.tensor<[B, H], f32> -> !stg.tensor<[], f32>
  func.return %l : !stg.tensor<[], f32>
}

// CHECK-LABEL: func.func @train_step
// CHECK:      stg.phase backward {
// CHECK-NEXT: %0 = stg.fill 1.000000e+00 : !stg.tensor<[], f32>
// CHECK-NEXT: %1 = stg.reshape %0 : !stg.tensor<[], f32> -> !stg.tensor<[1, 1], f32>
// CHECK-NEXT: %2 = stg.elementwise copy %1 : !stg.tensor<[1, 1], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT: %3 = stg.reshape %2 : !stg.tensor<[B, H], f32> -> !stg.tensor<[B, 1, H], f32>
// CHECK-NEXT: %4 = stg.elementwise copy %3 : !stg.tensor<[B, 1, H], f32> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: stg.assign %4 to "grad" of "w" : !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: stg.yield
// CHECK-NEXT: }

// -----

// norm: a vjp with respect to the weight only, since the input needs no gradient
func.func @forward() -> !stg.tensor<[], f32> {
  %x = stg.input "x" : !stg.tensor<[B, H], f32>
  %g = stg.param "g" : !stg.tensor<[H], f32>
  %y = stg.norm rms %x, %g {eps = 1.0e-05 : f64} : !stg.tensor<[B, H], f32>, !stg.tensor<[H], f32> -> !stg.tensor<[B, H], f32>
  %l = stg.reduce sum %y dims [0, 1] : !stg.tensor<[B, H], f32> -> !stg.tensor<[], f32>
  func.return %l : !stg.tensor<[], f32>
}

// CHECK-LABEL: func.func @train_step
// CHECK:      stg.phase backward {
// CHECK-NEXT: %0 = stg.fill 1.000000e+00 : !stg.tensor<[], f32>
// CHECK-NEXT: %1 = stg.reshape %0 : !stg.tensor<[], f32> -> !stg.tensor<[1, 1], f32>
// CHECK-NEXT: %2 = stg.elementwise copy %1 : !stg.tensor<[1, 1], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT: %g_1 = stg.param "g" : !stg.tensor<[H], f32>
// CHECK-NEXT: %3 = stg.vjp(%x, %g_1) wrt [1] cotangents(%2 : !stg.tensor<[B, H], f32>) {
// CHECK-NEXT: ^bb0(%4: !stg.tensor<[B, H], f32>, %5: !stg.tensor<[H], f32>):
// CHECK-NEXT: %y_1 = stg.norm rms %4, %5 {eps = 1.000000e-05 : f64} : !stg.tensor<[B, H], f32>, !stg.tensor<[H], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT: stg.yield %y_1 : !stg.tensor<[B, H], f32>
// CHECK-NEXT: } : (!stg.tensor<[B, H], f32>, !stg.tensor<[H], f32>) -> (!stg.tensor<[H], f32>)
// CHECK-NEXT: stg.assign %3 to "grad" of "g" : !stg.tensor<[H], f32>
// CHECK-NEXT: stg.yield
// CHECK-NEXT: }
