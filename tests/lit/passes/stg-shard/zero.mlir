// ZeRO over the data-parallel axis (the tiny Llama, AdamW in mixed precision, dp = 2).
// zero=1 (Megatron's distributed optimizer): the fp32 master weights and Adam moments
// of each rank hold half of every parameter; the gradient is accumulated whole (a
// partial sum over dp) and reduce-scattered into that half once per step, the half is
// updated, cast to bf16 and all-gathered into the parameter.
// RUN: stagec ir --model %S/Inputs/tiny-llama.json --pass-pipeline 'builtin.module(stg-autodiff{optimizer=adamw micro_batches=2},stg-shard{dp=2 zero=1},stg-match-collectives)' | filecheck %s
// zero=2 keeps the gradient buffer sharded too: each micro-batch's bf16 gradient is
// reduce-scattered into it, and the step needs no gradient collective.
// RUN: stagec ir --model %S/Inputs/tiny-llama.json --pass-pipeline 'builtin.module(stg-autodiff{optimizer=adamw micro_batches=2},stg-shard{dp=2 zero=2},stg-match-collectives)' | filecheck %s --check-prefix=ZERO2
// RUN: not stagec ir --model %S/Inputs/tiny-llama.json --pass-pipeline 'builtin.module(stg-autodiff,stg-shard{tp=2 zero=1})' 2>&1 | filecheck %s --check-prefix=NODP
// RUN: not stagec ir --model %S/Inputs/tiny-llama.json --pass-pipeline 'builtin.module(stg-autodiff,stg-shard{dp=2 zero=3})' 2>&1 | filecheck %s --check-prefix=STAGE

// CHECK:      stg.mesh @mesh [dp = 2]
// CHECK:      %q_proj = stg.param "model.layers.self_attn.q_proj.weight" : !stg.tensor<[D*N, H], bf16>
// CHECK:      stg.assign %{{.*}} to "grad" of "model.layers.self_attn.q_proj.weight" : !stg.tensor<[D*N, H] @dp, f32>
// CHECK:      %[[M:.*]] = stg.optimizer_state "master" of "model.layers.self_attn.q_proj.weight" : !stg.tensor<[D*N/dp, H], f32>
// CHECK-NEXT: %[[G:.*]] = stg.optimizer_state "grad" of "model.layers.self_attn.q_proj.weight" : !stg.tensor<[D*N, H] @dp, f32>
// CHECK-NEXT: %[[A:.*]] = stg.optimizer_state "exp_avg" of "model.layers.self_attn.q_proj.weight" : !stg.tensor<[D*N/dp, H], f32>
// CHECK-NEXT: %[[V:.*]] = stg.optimizer_state "exp_avg_sq" of "model.layers.self_attn.q_proj.weight" : !stg.tensor<[D*N/dp, H], f32>
// CHECK-NEXT: %[[T:.*]] = stg.optimizer_state "step" of "model.layers.self_attn.q_proj.weight" : !stg.tensor<[], f32>
// CHECK-NEXT: %[[S:.*]] = stg.reduce_scatter %[[G]] on @mesh [dp] : !stg.tensor<[D*N, H] @dp, f32> -> !stg.tensor<[D*N/dp, H], f32>
// CHECK-NEXT: %[[U:.*]], %{{.*}}, %{{.*}}, %{{.*}} = stg.adam %[[M]], %[[S]], %[[A]], %[[V]], %[[T]]
// CHECK:      %[[C:.*]] = stg.elementwise cast %[[U]] : !stg.tensor<[D*N/dp, H], f32> -> !stg.tensor<[D*N/dp, H], bf16>
// CHECK-NEXT: %[[P:.*]] = stg.all_gather %[[C]] on @mesh [dp] : !stg.tensor<[D*N/dp, H], bf16> -> !stg.tensor<[D*N, H], bf16>
// CHECK-NEXT: stg.assign %[[P]] to "model.layers.self_attn.q_proj.weight" : !stg.tensor<[D*N, H], bf16>
// CHECK-NOT:  stg.all_reduce %{{.*}} [D*N, H]

// ZERO2:      %[[G:.*]] = stg.optimizer_state "grad" of "model.layers.self_attn.q_proj.weight" : !stg.tensor<[D*N/dp, H], f32>
// ZERO2-NEXT: %[[S:.*]] = stg.reduce_scatter %{{.*}} on @mesh [dp] : !stg.tensor<[D*N, H] @dp, bf16> -> !stg.tensor<[D*N/dp, H], bf16>
// ZERO2-NEXT: %[[C:.*]] = stg.elementwise cast %[[S]] : !stg.tensor<[D*N/dp, H], bf16> -> !stg.tensor<[D*N/dp, H], f32>
// ZERO2-NEXT: %[[N:.*]] = stg.elementwise add %[[G]], %[[C]]
// ZERO2-NEXT: stg.assign %[[N]] to "grad" of "model.layers.self_attn.q_proj.weight" : !stg.tensor<[D*N/dp, H], f32>
// ZERO2:      stg.optimizer_state "grad" of "model.layers.self_attn.q_proj.weight" : !stg.tensor<[D*N/dp, H], f32>
// ZERO2-NOT:  stg.reduce_scatter
// ZERO2:      stg.all_gather %{{.*}} on @mesh [dp] : !stg.tensor<[D*N/dp, H], bf16> -> !stg.tensor<[D*N, H], bf16>
// ZERO2-NEXT: stg.assign %{{.*}} to "model.layers.self_attn.q_proj.weight"

// NODP:  zero=1 shards optimizer states over the data-parallel axes dp, ep, cp; give one of them (fsdp alone already shards them)
// STAGE: zero = 3: give 1 (optimizer states) or 2 (and gradients); fsdp is ZeRO-3
