// RUN: stagec-opt %s | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

stg.mesh @m [dp, tp]
%w = stg.param "layers.mlp.w1" : !stg.tensor<[H, 4*H/tp], bf16>
%b = stg.param "layers.mlp.b1" {trainable} : !stg.tensor<[4*H/tp], f32>
%s = stg.param "scale" : !stg.tensor<[], f32>
%ids = stg.input "input_ids" : !stg.tensor<[B/dp, S], i64>
%mask = stg.input "mask" : !stg.tensor<[B/dp, S], i1>
%m = stg.optimizer_state "exp_avg" of "layers.mlp.w1" : !stg.tensor<[H, 4*H/tp], f32>
%v = stg.optimizer_state "exp_avg_sq" of "layers.mlp.w1" {zero_stage = 1 : i64} : !stg.tensor<[H/dp, 4*H/tp], f32>

// CHECK:      builtin.module {
// CHECK-NEXT:   stg.mesh @m [dp, tp]
// CHECK-NEXT:   %w = stg.param "layers.mlp.w1" : !stg.tensor<[H, 4*H/tp], bf16>
// CHECK-NEXT:   %b = stg.param "layers.mlp.b1" {trainable} : !stg.tensor<[4*H/tp], f32>
// CHECK-NEXT:   %s = stg.param "scale" : !stg.tensor<[], f32>
// CHECK-NEXT:   %ids = stg.input "input_ids" : !stg.tensor<[B/dp, S], i64>
// CHECK-NEXT:   %mask = stg.input "mask" : !stg.tensor<[B/dp, S], i1>
// CHECK-NEXT:   %m = stg.optimizer_state "exp_avg" of "layers.mlp.w1" : !stg.tensor<[H, 4*H/tp], f32>
// CHECK-NEXT:   %v = stg.optimizer_state "exp_avg_sq" of "layers.mlp.w1" {zero_stage = 1 : i64} : !stg.tensor<[H/dp, 4*H/tp], f32>
// CHECK-NEXT: }

// GENERIC:      "builtin.module"() ({
// GENERIC-NEXT:   "stg.mesh"() <{sym_name = "m", axes = ["dp", "tp"], sizes = [#stg.expr<dp>, #stg.expr<tp>]}> : () -> ()
// GENERIC-NEXT:   %w = "stg.param"() <{name = "layers.mlp.w1"}> : () -> !stg.tensor<[H, 4*H/tp], bf16>
// GENERIC-NEXT:   %b = "stg.param"() <{name = "layers.mlp.b1"}> {trainable} : () -> !stg.tensor<[4*H/tp], f32>
// GENERIC-NEXT:   %s = "stg.param"() <{name = "scale"}> : () -> !stg.tensor<[], f32>
// GENERIC-NEXT:   %ids = "stg.input"() <{name = "input_ids"}> : () -> !stg.tensor<[B/dp, S], i64>
// GENERIC-NEXT:   %mask = "stg.input"() <{name = "mask"}> : () -> !stg.tensor<[B/dp, S], i1>
// GENERIC-NEXT:   %m = "stg.optimizer_state"() <{name = "exp_avg", param = "layers.mlp.w1"}> : () -> !stg.tensor<[H, 4*H/tp], f32>
// GENERIC-NEXT:   %v = "stg.optimizer_state"() <{name = "exp_avg_sq", param = "layers.mlp.w1"}> {zero_stage = 1 : i64} : () -> !stg.tensor<[H/dp, 4*H/tp], f32>
// GENERIC-NEXT: }) : () -> ()
