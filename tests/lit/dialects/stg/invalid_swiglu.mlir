// RUN: stagec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// swiglu takes the gate and the up projection.
stg.mesh @m [dp, tp]
func.func @f(%g: !stg.tensor<[B, F], f32>) {
  %y = stg.elementwise swiglu %g : !stg.tensor<[B, F], f32> -> !stg.tensor<[B, F], f32>
  func.return
}

// CHECK: elementwise swiglu takes 2 operands, not 1

// -----

// A split gate splits the result (a whole up is sliced locally, for free).
stg.mesh @m [dp, tp]
func.func @f(%g: !stg.tensor<[B, F/tp], f32>, %u: !stg.tensor<[B, F], f32>) {
  %y = stg.elementwise swiglu %g, %u : !stg.tensor<[B, F/tp], f32>, !stg.tensor<[B, F], f32> -> !stg.tensor<[B, F], f32>
  func.return
}

// CHECK: elementwise swiglu: result should be [B, F/tp], not [B, F]

// -----

// silu is not linear: a partial-sum gate must be reduced first.
stg.mesh @m [dp, tp]
func.func @f(%g: !stg.tensor<[B, F] @tp, f32>, %u: !stg.tensor<[B, F], f32>) {
  %y = stg.elementwise swiglu %g, %u : !stg.tensor<[B, F] @tp, f32>, !stg.tensor<[B, F], f32> -> !stg.tensor<[B, F], f32>
  func.return
}

// CHECK: elementwise swiglu: operand [B, F] @tp is a partial sum over [tp]; this op is not linear, so all_reduce (or reduce_scatter) it first

// -----

// Both halves have one element type.
stg.mesh @m [dp, tp]
func.func @f(%g: !stg.tensor<[B, F], f32>, %u: !stg.tensor<[B, F], bf16>) {
  %y = stg.elementwise swiglu %g, %u : !stg.tensor<[B, F], f32>, !stg.tensor<[B, F], bf16> -> !stg.tensor<[B, F], f32>
  func.return
}

// CHECK: elementwise swiglu: operands have different element types (bf16, f32); insert an elementwise cast
