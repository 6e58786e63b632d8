// RUN: stagec ir --model %S/Inputs/tiny-llama.json --dtype f64 --pass-pipeline 'builtin.module(stg-autodiff{micro_batches=4},cse,stg-pipeline{pp=2 schedule=1f1b})' | filecheck %s

// The tiny Llama template (L = 2 layers, stg.config binds L) on two stages: L is a
// multiple of pp, so the counts stay symbolic. Each stage reads the rotary angles
// itself; only the activation (tag 0) and its cotangent (tag 1) cross the stages.

// CHECK:       stg.mesh @mesh [pp = 2]
// CHECK-LABEL: func.func @stage0_forward(%input_ids: !stg.tensor<[B, S], i64>)
// CHECK:         %embed_tokens = stg.param "model.embed_tokens.weight" : !stg.tensor<[V, H], f64>
// CHECK:         %rope_angles = stg.input "rope.angles" : !stg.tensor<[S, 1, D], f32>
// CHECK:         %[[H:[0-9]+]], {{.*}} = stg.repeat L/2 offset 0 of L carry(%h = %x : !stg.tensor<[B, S, H], f64>) {
// CHECK:         stg.send %[[H]] to @mesh[pp = 1] tag 0 : !stg.tensor<[B, S, H], f64>
// CHECK-NOT:     stg.send
// CHECK-LABEL: func.func @stage0_backward(
// CHECK:         stg.recv from @mesh[pp = 1] tag 1 : !stg.tensor<[B, S, H], f64>
// CHECK:         stg.repeat L/2 offset 0 of L carry({{.*}}) scan({{.*}}) reverse {
// CHECK:         stg.vjp(%embed_tokens, %input_ids)
// CHECK-NOT:     stg.send
// CHECK-LABEL: func.func @train_step_stage0() attributes {stg.stage = {pp = 0 : i64}} {
// CHECK:         stg.phase optimizer {
// CHECK:           "model.embed_tokens.weight"
// CHECK-NOT:       "lm_head.weight"
// CHECK:           stg.repeat L/2 offset 0 of L {
// CHECK-NOT:     all_reduce_stages
// CHECK-LABEL: func.func @stage1_forward(%labels: !stg.tensor<[B, S], i64>)
// CHECK:         %[[X:[0-9]+]] = stg.recv from @mesh[pp = 0] tag 0 : !stg.tensor<[B, S, H], f64>
// CHECK:         %rope_angles = stg.input "rope.angles" : !stg.tensor<[S, 1, D], f32>
// CHECK-NEXT:    {{.*}} = stg.repeat L/2 offset L/2 of L carry(%h = %[[X]] : !stg.tensor<[B, S, H], f64>) {
// CHECK:         stg.param "model.norm.weight"
// CHECK:         stg.param "lm_head.weight"
// CHECK:         stg.cross_entropy
// CHECK-LABEL: func.func @stage1_backward(
// CHECK:         %[[G:[0-9]+]] = stg.repeat L/2 offset L/2 of L carry({{.*}}) scan({{.*}}) reverse {
// CHECK:         stg.send %[[G]] to @mesh[pp = 0] tag 1 : !stg.tensor<[B, S, H], f64>
// CHECK-LABEL: func.func @train_step_stage1() -> !stg.tensor<[], f64> attributes {stg.stage = {pp = 1 : i64}} {
// CHECK:         stg.phase optimizer {
// CHECK-NOT:       "model.embed_tokens.weight"
// CHECK:           stg.repeat L/2 offset L/2 of L {
