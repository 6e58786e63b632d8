// RUN: stagec-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(stg-autodiff{optimizer=sgd micro_batches=2},stg-pipeline{pp=4})' 2>&1 | filecheck %s

// What stg-pipeline refuses, each with the message a user sees.

// More stages than layers: every stage needs at least one.
// CHECK: error: pass 'stg-pipeline' failed: pp = 4 is more than the 2 layers of the model (L = 2): every stage needs at least one layer
builtin.module attributes {stg.config = {L = 2 : i64}} {
  func.func @forward() -> !stg.tensor<[], f32> {
    %x = stg.input "x" : !stg.tensor<[B, H], f32>
    %h = stg.repeat L carry(%hin = %x : !stg.tensor<[B, H], f32>) {
      %w = stg.param "layers.w" : !stg.tensor<[H, H], f32>
      %u = stg.einsum "bh,gh->bg" %hin, %w : !stg.tensor<[B, H], f32>, !stg.tensor<[H, H], f32> -> !stg.tensor<[B, H], f32>
      stg.yield %u : !stg.tensor<[B, H], f32>
    }
    %l = stg.reduce sum %h dims [0, 1] : !stg.tensor<[B, H], f32> -> !stg.tensor<[], f32>
    func.return %l : !stg.tensor<[], f32>
  }
}

// -----

// Two stacks count together (L + L2 layers).
// CHECK: error: pass 'stg-pipeline' failed: pp = 4 is more than the 3 layers of the model (L + L2 = 3): every stage needs at least one layer
builtin.module attributes {stg.config = {L = 1 : i64, L2 = 2 : i64}} {
  func.func @forward() -> !stg.tensor<[], f32> {
    %x = stg.input "x" : !stg.tensor<[B, H], f32>
    %h = stg.repeat L carry(%hin = %x : !stg.tensor<[B, H], f32>) {
      %w = stg.param "layers.w" : !stg.tensor<[H, H], f32>
      %u = stg.einsum "bh,gh->bg" %hin, %w : !stg.tensor<[B, H], f32>, !stg.tensor<[H, H], f32> -> !stg.tensor<[B, H], f32>
      stg.yield %u : !stg.tensor<[B, H], f32>
    }
    %h2 = stg.repeat L2 carry(%hin = %h : !stg.tensor<[B, H], f32>) {
      %w = stg.param "moe_layers.w" : !stg.tensor<[H, H], f32>
      %u = stg.einsum "bh,gh->bg" %hin, %w : !stg.tensor<[B, H], f32>, !stg.tensor<[H, H], f32> -> !stg.tensor<[B, H], f32>
      stg.yield %u : !stg.tensor<[B, H], f32>
    }
    %l = stg.reduce sum %h2 dims [0, 1] : !stg.tensor<[B, H], f32> -> !stg.tensor<[], f32>
    func.return %l : !stg.tensor<[], f32>
  }
}

// -----

// Nothing to cut into stages.
// CHECK: error: pass 'stg-pipeline' failed: the forward phase has no layer stack (stg.repeat) to cut into stages
func.func @forward() -> !stg.tensor<[], f32> {
  %w = stg.param "w" : !stg.tensor<[B], f32>
  %l = stg.reduce sum %w dims [0] : !stg.tensor<[B], f32> -> !stg.tensor<[], f32>
  func.return %l : !stg.tensor<[], f32>
}

// -----

// A step pipelined already.
// CHECK: errors.mlir:[[# @LINE + 1]]:1: error: pass 'stg-pipeline' failed: mesh @m already has a pp axis: is the step pipelined already?
stg.mesh @m [pp = 2]
func.func @forward() -> !stg.tensor<[], f32> {
  %x = stg.input "x" : !stg.tensor<[B, H], f32>
  %h = stg.repeat L carry(%hin = %x : !stg.tensor<[B, H], f32>) {
    %w = stg.param "layers.w" : !stg.tensor<[H, H], f32>
    %u = stg.einsum "bh,gh->bg" %hin, %w : !stg.tensor<[B, H], f32>, !stg.tensor<[H, H], f32> -> !stg.tensor<[B, H], f32>
    stg.yield %u : !stg.tensor<[B, H], f32>
  }
  %l = stg.reduce sum %h dims [0, 1] : !stg.tensor<[B, H], f32> -> !stg.tensor<[], f32>
  func.return %l : !stg.tensor<[], f32>
}
