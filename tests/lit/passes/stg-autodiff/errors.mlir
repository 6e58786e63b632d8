// RUN: stagec-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(stg-autodiff)' 2>&1 | filecheck %s
// RUN: not stagec-opt %s --split-input-file --pass-pipeline='builtin.module(stg-autodiff{optimizer=rmsprop})' 2>&1 | filecheck %s --check-prefix=OPTION

// OPTION: error: pass 'stg-autodiff' failed: optimizer=rmsprop is not one of adamw, adam, sgd, none

// CHECK: error: pass 'stg-autodiff' failed: the module has no func.func @forward to differentiate
func.func @model() {
  func.return
}

// -----

// CHECK: errors.mlir:16:3: error: pass 'stg-autodiff' failed: @forward must return a scalar float loss, not !stg.tensor<[B], f32>
func.func @forward() -> !stg.tensor<[B], f32> {
  %w = stg.param "w" : !stg.tensor<[B], f32>
  func.return %w : !stg.tensor<[B], f32>
}

// -----

// CHECK: errors.mlir:24:8: error: pass 'stg-autodiff' failed: 'stg.elementwise': elementwise max has no gradient in stg-autodiff
func.func @forward() -> !stg.tensor<[], f32> {
  %w = stg.param "w" : !stg.tensor<[B], f32>
  %m = stg.elementwise max %w, %w : !stg.tensor<[B], f32>, !stg.tensor<[B], f32> -> !stg.tensor<[B], f32>
  %l = stg.reduce sum %m dims [0] : !stg.tensor<[B], f32> -> !stg.tensor<[], f32>
  func.return %l : !stg.tensor<[], f32>
}

// -----

// CHECK: errors.mlir:34:8: error: pass 'stg-autodiff' failed: 'stg.opaque': no gradient rule in stg-autodiff
func.func @forward() -> !stg.tensor<[], f32> {
  %w = stg.param "w" : !stg.tensor<[B], f32>
  %o = stg.opaque "kernel" (%w) flops <B> bytes <B> : (!stg.tensor<[B], f32>) -> (!stg.tensor<[B], f32>)
  %l = stg.reduce sum %o dims [0] : !stg.tensor<[B], f32> -> !stg.tensor<[], f32>
  func.return %l : !stg.tensor<[], f32>
}

// -----

// CHECK: error: pass 'stg-autodiff' failed: the loss does not depend on any parameter
func.func @forward() -> !stg.tensor<[], f32> {
  %x = stg.input "x" : !stg.tensor<[B], f32>
  %l = stg.reduce sum %x dims [0] : !stg.tensor<[B], f32> -> !stg.tensor<[], f32>
  func.return %l : !stg.tensor<[], f32>
}

// -----

// CHECK: errors.mlir:53:8: error: pass 'stg-autodiff' failed: 'stg.param' in @forward uses the distributed tensor [B/tp]; run stg-autodiff before stg-shard
stg.mesh @m [tp = 2]
func.func @forward() -> !stg.tensor<[] @tp, f32> {
  %w = stg.param "w" : !stg.tensor<[B/tp], f32>
  %l = stg.reduce sum %w dims [0] : !stg.tensor<[B/tp], f32> -> !stg.tensor<[] @tp, f32>
  func.return %l : !stg.tensor<[] @tp, f32>
}
