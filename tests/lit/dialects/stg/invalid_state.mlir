// RUN: stagec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// State ops: parameters, inputs and optimizer states.

stg.mesh @m [dp, tp]
%w = stg.param "" : !stg.tensor<[H, F/tp], bf16>

// CHECK: 'stg.param' needs a non-empty name

// -----

stg.mesh @m [dp, tp]
%x = stg.input "" : !stg.tensor<[B/dp, S], i64>

// CHECK: 'stg.input' needs a non-empty name

// -----

// State lives whole (or sharded), never as a partial sum.
stg.mesh @m [dp, tp]
%w = stg.param "w" : !stg.tensor<[H, F] @tp, bf16>

// CHECK: 'stg.param' "w" cannot be a partial sum

// -----

stg.mesh @m [dp, tp]
%x = stg.input "x" : !stg.tensor<[B, S] @dp, i64>

// CHECK: 'stg.input' "x" cannot be a partial sum

// -----

stg.mesh @m [dp, tp]
%v = stg.optimizer_state "exp_avg" of "w" : !stg.tensor<[H, F/tp] @dp, f32>

// CHECK: 'stg.optimizer_state' "exp_avg" cannot be a partial sum

// -----

stg.mesh @m [dp, tp]
%v = stg.optimizer_state "" of "w" : !stg.tensor<[H, F/tp], f32>

// CHECK: 'stg.optimizer_state' needs a non-empty name

// -----

// An optimizer state names its parameter.
stg.mesh @m [dp, tp]
%v = stg.optimizer_state "exp_avg" of "" : !stg.tensor<[H, F/tp], f32>

// CHECK: 'stg.optimizer_state' must name its parameter

// -----

// State is in device memory.
stg.mesh @m [dp, tp]
%w = stg.param "w" : !stg.host<[H, F/tp], bf16>

// CHECK: !stg.host<[H, F/tp], bf16> should be of base attribute stg.tensor
