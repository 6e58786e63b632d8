// RUN: stagec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Rules that compare whole !stg.tensor types. Each case differs from a valid program
// only in a tensor's layout, shape or element type, so it is caught only if two
// !stg.tensor types with different parameters compare unequal.

// stg.wait yields exactly the token's payload (generic form).
stg.mesh @m [dp, tp]
func.func @f(%t: !stg.token<!stg.tensor<[B/dp, H], bf16>>) {
  %x = "stg.wait"(%t) : (!stg.token<!stg.tensor<[B/dp, H], bf16>>) -> !stg.tensor<[B, H], bf16>
  func.return
}

// CHECK: 'stg.wait' must yield the token's payload !stg.tensor<[B/dp, H], bf16>, not !stg.tensor<[B, H], bf16>

// -----

// A repeat body's arguments have the carried values' types (generic form).
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>) {
  %y = "stg.repeat"(%x) <{count = #stg.expr<2>, operandSegmentSizes = array<i32: 1, 0>}> ({
  ^bb0(%c: !stg.tensor<[B, H], f32>):
    "stg.yield"(%x) : (!stg.tensor<[B/dp, H], f32>) -> ()
  }) : (!stg.tensor<[B/dp, H], f32>) -> !stg.tensor<[B/dp, H], f32>
  func.return
}

// CHECK: 'stg.repeat': the body's arguments must be the carried values then the scanned slices

// -----

// The body yields the carried values' types.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>, %z: !stg.tensor<[B, H], f32>) {
  %y = stg.repeat 2 carry(%c = %x : !stg.tensor<[B/dp, H], f32>) {
    stg.yield %z : !stg.tensor<[B, H], f32>
  }
  func.return
}

// CHECK: 'stg.repeat': the body must yield the carried values' types first

// -----

stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>, %z: !stg.tensor<[B/dp, H], bf16>) {
  %y = stg.microbatch M carry(%c = %x : !stg.tensor<[B/dp, H], f32>) {
    stg.yield %z : !stg.tensor<[B/dp, H], bf16>
  }
  func.return
}

// CHECK: 'stg.microbatch': the body must yield the carried values' types first

// -----

// The results are the carried values' types (generic form) ...
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>) {
  %y = "stg.repeat"(%x) <{count = #stg.expr<2>, operandSegmentSizes = array<i32: 1, 0>}> ({
  ^bb0(%c: !stg.tensor<[B/dp, H], f32>):
    "stg.yield"(%c) : (!stg.tensor<[B/dp, H], f32>) -> ()
  }) : (!stg.tensor<[B/dp, H], f32>) -> !stg.tensor<[B, H] @tp, f32>
  func.return
}

// CHECK: 'stg.repeat': results must be the carried values then the stacked per-iteration outputs

// -----

// ... then the per-iteration outputs stacked with a leading [count] dim.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>) {
  "stg.repeat"() <{count = #stg.expr<L>, operandSegmentSizes = array<i32: 0, 0>}> ({
    "stg.yield"(%x) : (!stg.tensor<[B/dp, H], f32>) -> ()
  }) : () -> !stg.tensor<[B/dp, H], f32>
  func.return
}

// CHECK: 'stg.repeat': results must be the carried values then the stacked per-iteration outputs

// -----

// A phase's results have the yielded values' types (generic form).
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>) {
  %y = "stg.phase"() <{kind = #stg<phase_kind forward>}> ({
    "stg.yield"(%x) : (!stg.tensor<[B/dp, H], f32>) -> ()
  }) : () -> !stg.tensor<[B/dp, H/tp], f32>
  func.return
}

// CHECK: 'stg.phase': results must be the yielded values

// -----

// Upstream rules compare types too: func.return against the function's signature.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>) -> !stg.tensor<[B, H], f32> {
  func.return %x : !stg.tensor<[B/dp, H], f32>
}

// CHECK: Expected arguments to have the same types as the function output types
