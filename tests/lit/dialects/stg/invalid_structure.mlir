// RUN: stagec-opt %s --split-input-file --verify-diagnostics --allow-unregistered-dialect | filecheck %s

// Structure ops: repeat, microbatch, phase and yield. (Bodies whose types differ from
// the carried values' or the results': type_equality.mlir.) Unregistered ops stand
// for a foreign terminator: xDSL itself rejects a body that ends with a non-terminator.

// A loop count is a positive integer ...
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>) {
  %y = stg.repeat 0 carry(%c = %x : !stg.tensor<[B/dp, H], f32>) {
    stg.yield %c : !stg.tensor<[B/dp, H], f32>
  }
  func.return
}

// CHECK: 'stg.repeat': count must be a positive integer, not 0

// -----

// ... not a fraction.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>) {
  %y = stg.microbatch 1/2 carry(%c = %x : !stg.tensor<[B/dp, H], f32>) {
    stg.yield %c : !stg.tensor<[B/dp, H], f32>
  }
  func.return
}

// CHECK: 'stg.microbatch': count must be a positive integer, not 1/2

// -----

// A scanned value has a leading [count] dim ...
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>) {
  stg.repeat L scan(%s = %x : !stg.tensor<[B/dp, H], f32>) {
    stg.yield
  }
  func.return
}

// CHECK: 'stg.repeat': a scanned value needs a leading, unsplit [L] dim, not [B/dp, H]

// -----

// ... that is not split ...
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[L/dp, H], f32>) {
  stg.repeat L scan(%s = %x : !stg.tensor<[L/dp, H], f32>) {
    stg.yield
  }
  func.return
}

// CHECK: 'stg.repeat': a scanned value needs a leading, unsplit [L] dim, not [L/dp, H]

// -----

// ... and exists.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[], f32>) {
  stg.microbatch M scan(%s = %x : !stg.tensor<[], f32>) {
    stg.yield
  }
  func.return
}

// CHECK: 'stg.microbatch': a scanned value needs a leading, unsplit [M] dim, not []

// -----

// The body's arguments are the carried values, then the scanned slices (generic form).
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>) {
  %y = "stg.repeat"(%x) <{count = #stg.expr<2>, operandSegmentSizes = array<i32: 1, 0>}> ({
  ^bb0:
    "stg.yield"(%x) : (!stg.tensor<[B/dp, H], f32>) -> ()
  }) : (!stg.tensor<[B/dp, H], f32>) -> !stg.tensor<[B/dp, H], f32>
  func.return
}

// CHECK: 'stg.repeat': the body's arguments must be the carried values then the scanned slices

// -----

stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[4, H], f32>) {
  "stg.repeat"(%x) <{count = #stg.expr<4>, operandSegmentSizes = array<i32: 0, 1>}> ({
  ^bb0(%a: !stg.tensor<[4, H], f32>, %b: !stg.tensor<[H], f32>):
    "stg.yield"() : () -> ()
  }) : (!stg.tensor<[4, H], f32>) -> ()
  func.return
}

// CHECK: 'stg.repeat': the body's arguments must be the carried values then the scanned slices

// -----

// The body ends with stg.yield.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>) {
  %y = stg.repeat 2 carry(%c = %x : !stg.tensor<[B/dp, H], f32>) {
    "foreign.terminator"() : () -> ()
  }
  func.return
}

// CHECK: 'stg.repeat': the body must end with stg.yield

// -----

// It yields the carried values first.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>) {
  %y = stg.microbatch M carry(%c = %x : !stg.tensor<[B/dp, H], f32>) {
    stg.yield
  }
  func.return
}

// CHECK: 'stg.microbatch': the body must yield the carried values' types first

// -----

// The results are the carried values then the stacked outputs (generic form).
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>) {
  "stg.repeat"(%x) <{count = #stg.expr<2>, operandSegmentSizes = array<i32: 1, 0>}> ({
  ^bb0(%c: !stg.tensor<[B/dp, H], f32>):
    "stg.yield"(%c) : (!stg.tensor<[B/dp, H], f32>) -> ()
  }) : (!stg.tensor<[B/dp, H], f32>) -> ()
  func.return
}

// CHECK: 'stg.repeat': results must be the carried values then the stacked per-iteration outputs

// -----

stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>) {
  %y, %z = "stg.repeat"(%x) <{count = #stg.expr<2>, operandSegmentSizes = array<i32: 1, 0>}> ({
  ^bb0(%c: !stg.tensor<[B/dp, H], f32>):
    "stg.yield"(%c) : (!stg.tensor<[B/dp, H], f32>) -> ()
  }) : (!stg.tensor<[B/dp, H], f32>) -> (!stg.tensor<[B/dp, H], f32>, !stg.tensor<[B/dp, H], f32>)
  func.return
}

// CHECK: 'stg.repeat': results must be the carried values then the stacked per-iteration outputs

// -----

// A phase body ends with stg.yield.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>) {
  stg.phase forward {
    "foreign.terminator"() : () -> ()
  }
  func.return
}

// CHECK: 'stg.phase': the body must end with stg.yield

// -----

// A phase's results are the yielded values (generic form).
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>) {
  "stg.phase"() <{kind = #stg<phase_kind backward>}> ({
    "stg.yield"(%x) : (!stg.tensor<[B/dp, H], f32>) -> ()
  }) : () -> ()
  func.return
}

// CHECK: 'stg.phase': results must be the yielded values

// -----

// stg.yield ends only stg.repeat, stg.microbatch and stg.phase bodies.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>) {
  stg.yield %x : !stg.tensor<[B/dp, H], f32>
}

// CHECK: 'stg.yield' expects parent op to be one of 'stg.repeat', 'stg.microbatch', 'stg.phase'
