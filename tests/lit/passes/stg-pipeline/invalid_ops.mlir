// RUN: stagec-opt %s --split-input-file --parsing-diagnostics --verify-diagnostics | filecheck %s

// The verifier of the ops stg-pipeline emits: a slice of a layer stack must fit in
// the stack, and stg.all_reduce_stages sums over distinct coordinates of one axis.

func.func @f(%x: !stg.tensor<[B], f32>) {
  %y = stg.repeat 4 offset 6 of 8 carry(%h = %x : !stg.tensor<[B], f32>) {
    stg.yield %h : !stg.tensor<[B], f32>
  }
  func.return
}

// CHECK: 'stg.repeat': layers [6, 10) do not fit in a stack of 8

// -----

func.func @f(%x: !stg.tensor<[B], f32>) {
  %y = stg.repeat L/2 offset L/2 + 1 of L carry(%h = %x : !stg.tensor<[B], f32>) {
    stg.yield %h : !stg.tensor<[B], f32>
  }
  func.return
}

// CHECK: 'stg.repeat': layers [(L + 2)/2, L + 1) do not fit in a stack of L

// -----

func.func @f(%x: !stg.tensor<[B], f32>) {
  %y = stg.repeat 2 offset -1 of 8 carry(%h = %x : !stg.tensor<[B], f32>) {
    stg.yield %h : !stg.tensor<[B], f32>
  }
  func.return
}

// CHECK: 'stg.repeat': offset must be a non-negative integer, not -1

// -----

func.func @f(%x: !stg.tensor<[B], f32>) {
  %y = stg.repeat 2 offset 2 carry(%h = %x : !stg.tensor<[B], f32>) {
    stg.yield %h : !stg.tensor<[B], f32>
  }
  func.return
}

// CHECK: Expected 'of' (the size of the layer stack the offset is in)

// -----

stg.mesh @m [pp = 4]
func.func @f(%g: !stg.tensor<[V, H], f32>) {
  %s = stg.all_reduce_stages %g on @m [pp] among [0, 4] : !stg.tensor<[V, H], f32> -> !stg.tensor<[V, H], f32>
  func.return
}

// CHECK: 'stg.all_reduce_stages': coordinate 4 must be >= 0 and < 4, the size of 'pp'

// -----

stg.mesh @m [pp = 4]
func.func @f(%g: !stg.tensor<[V, H], f32>) {
  %s = stg.all_reduce_stages %g on @m [pp] among [1, 1] : !stg.tensor<[V, H], f32> -> !stg.tensor<[V, H], f32>
  func.return
}

// CHECK: 'stg.all_reduce_stages': 'among' must list at least two distinct coordinates, not [1, 1]

// -----

stg.mesh @m [pp = 4, tp = 2]
func.func @f(%g: !stg.tensor<[V, H], f32>) {
  %s = stg.all_reduce_stages %g on @m [pp, tp] among [0, 1] : !stg.tensor<[V, H], f32> -> !stg.tensor<[V, H], f32>
  func.return
}

// CHECK: 'stg.all_reduce_stages' sums over the coordinates of one mesh axis, not [pp, tp]

// -----

stg.mesh @m [pp = 4, tp = 2]
func.func @f(%g: !stg.tensor<[V, H/tp], f32>) {
  %s = stg.all_reduce_stages %g on @m [pp] among [0, 3] : !stg.tensor<[V, H/tp], f32> -> !stg.tensor<[V, H], f32>
  func.return
}

// CHECK: 'stg.all_reduce_stages': the result must have the input's distribution [V, H/tp], not [V, H]

// -----

stg.mesh @m [pp = 4]
func.func @f(%g: !stg.tensor<[V, H], f32>) {
  %s = stg.all_reduce_stages %g on @m [dp] among [0, 3] : !stg.tensor<[V, H], f32> -> !stg.tensor<[V, H], f32>
  func.return
}

// CHECK: 'stg.all_reduce_stages': axis 'dp' is not an axis of mesh @m (pp)
