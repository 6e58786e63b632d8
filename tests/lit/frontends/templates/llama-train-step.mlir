// The small Llama template after stg-autodiff (AdamW, block recompute, bf16 with fp32
// master weights), symbolic and then instantiated: the forward phase saves one input
// per layer, stacked [L, B, S, H]; the backward walks the layer stack in reverse,
// re-running each layer in a recompute phase, with attention's gradient one fused
// vjp; the optimizer phase updates the stacked layer parameters inside a repeat.
// RUN: stagec ir --model %S/Inputs/tiny-llama.json --pass-pipeline 'builtin.module(stg-autodiff{optimizer=adamw recompute=true})' | filecheck %s
// RUN: stagec ir --model %S/Inputs/tiny-llama.json --pass-pipeline 'builtin.module(stg-autodiff{optimizer=adamw recompute=true},stg-instantiate{B=2 S=8})' | filecheck %s --check-prefix=NUM
// RUN: stagec ir --model %S/Inputs/tiny-llama.json --pass-pipeline 'builtin.module(stg-autodiff{optimizer=adamw recompute=true},stg-instantiate{B=2 S=8})' | stagec-opt | filecheck %s --check-prefix=NUM

// CHECK:      func.func @train_step() -> !stg.tensor<[], f32> {
// CHECK:        %h, %[[SAVED:.*]], %{{.*}}, %logits, %loss = stg.phase forward {
// CHECK:          %h_1, %[[STACK:.*]] = stg.repeat L carry(%[[HIN:.*]] = %x : !stg.tensor<[B, S, H], bf16>) {
// CHECK:            stg.attention %q_rot, %k_rot, %{{.*}} heads N kv_heads KV causal
// CHECK:            stg.yield %{{.*}}, %[[HIN]] : !stg.tensor<[B, S, H], bf16>, !stg.tensor<[B, S, H], bf16>
// CHECK:          stg.yield %h_1, %[[STACK]], {{.*}} : !stg.tensor<[B, S, H], bf16>, !stg.tensor<[L, B, S, H], bf16>,
// CHECK:        stg.phase backward {
// CHECK:          stg.repeat L carry(%{{.*}} = %{{.*}} : !stg.tensor<[B, S, H], bf16>) scan(%[[LAYER_IN:.*]] = %[[SAVED]] : !stg.tensor<[L, B, S, H], bf16>) reverse {
// CHECK-NEXT:       = stg.phase recompute {
// CHECK-NEXT:         stg.param "model.layers.input_layernorm.weight"
// CHECK-NEXT:         stg.norm rms %[[LAYER_IN]]
// CHECK:            stg.vjp(%q_rot_1, %k_rot_1, %{{.*}}) wrt [0, 1, 2] cotangents(%{{.*}} : !stg.tensor<[B, S, N, D], bf16>) {
// CHECK-NEXT:       ^bb0(
// CHECK-NEXT:         stg.attention
// CHECK:            %[[GQ:[0-9]+]] = stg.elementwise cast %{{.*}} : !stg.tensor<[D*N, H], bf16> -> !stg.tensor<[D*N, H], f32>
// CHECK:            stg.assign %[[GQ]] to "grad" of "model.layers.self_attn.q_proj.weight" : !stg.tensor<[D*N, H], f32>
// CHECK:          stg.assign %{{.*}} to "grad" of "model.embed_tokens.weight" : !stg.tensor<[V, H], f32>
// CHECK:        stg.phase optimizer {
// CHECK:          stg.repeat L {
// CHECK:            %[[M:[0-9]+]] = stg.optimizer_state "master" of "model.layers.self_attn.q_proj.weight" : !stg.tensor<[D*N, H], f32>
// CHECK:            %[[W:[0-9]+]], {{.*}} = stg.adam %[[M]], {{.*}} decoupled
// CHECK:            stg.assign %[[W]] to "master" of "model.layers.self_attn.q_proj.weight" : !stg.tensor<[D*N, H], f32>
// CHECK-NEXT:       %[[BF:[0-9]+]] = stg.elementwise cast %[[W]] : !stg.tensor<[D*N, H], f32> -> !stg.tensor<[D*N, H], bf16>
// CHECK-NEXT:       stg.assign %[[BF]] to "model.layers.self_attn.q_proj.weight" : !stg.tensor<[D*N, H], bf16>
// CHECK:        func.return %loss : !stg.tensor<[], f32>

// After stg-instantiate{B=2 S=8} with the config's H = 16, L = 2, N = 4, KV = 2, D = 4:
// NUM:      stg.config = {H = 16 : i64, L = 2 : i64, V = 32 : i64, N = 4 : i64, KV = 2 : i64, D = 4 : i64, F = 24 : i64
// NUM:      stg.repeat 2 carry(%{{.*}} = %x : !stg.tensor<[2, 8, 16], bf16>) {
// NUM:        stg.attention %q_rot, %k_rot, %{{.*}} heads 4 kv_heads 2 causal : !stg.tensor<[2, 8, 4, 4], bf16>, !stg.tensor<[2, 8, 2, 4], bf16>, !stg.tensor<[2, 8, 2, 4], bf16> -> !stg.tensor<[2, 8, 4, 4], bf16>
// NUM:      !stg.tensor<[2, 2, 8, 16], bf16>
// NUM:      stg.repeat 2 carry({{.*}}) scan(%{{.*}} = %{{.*}} : !stg.tensor<[2, 2, 8, 16], bf16>) reverse {
// NUM:      stg.optimizer_state "master" of "model.layers.self_attn.q_proj.weight" : !stg.tensor<[16, 16], f32>
