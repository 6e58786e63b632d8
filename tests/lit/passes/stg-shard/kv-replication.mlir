// tp beyond the key/value heads: the tiny Llama (N = 4 query heads over KV = 2
// key/value heads) on tp = 4 runs on the mesh [tp_kv = 2, tp_q = 2]. Query heads,
// ffn, vocabulary and (with sp) the residual stream's sequence split over both axes,
// so every tp collective spans all 4 ranks; the k/v projections, their activations
// and the attention's key/value operands split over tp_kv only - each key/value head
// is held whole by the 2 ranks whose query heads read it. The k/v gradients are then
// partial over tp_q: they reach dx as part of its tp partial sum, and the k/v weight
// gradients are all-reduced over tp_q once per step, before the optimizer.
// RUN: stagec ir --model %S/Inputs/tiny-llama.json --pass-pipeline 'builtin.module(stg-autodiff{optimizer=adamw},stg-shard{tp=4 sp=true},stg-match-collectives)' | filecheck %s
// A single key/value head (MQA) needs no tp_kv axis.
// RUN: sed 's/"num_key_value_heads": 2/"num_key_value_heads": 1/' %S/Inputs/tiny-llama.json > %t.json
// RUN: stagec ir --model %t.json --pass-pipeline 'builtin.module(stg-shard{tp=4})' | filecheck %s --check-prefix=MQA

// CHECK:      stg.mesh @mesh [tp_kv = 2, tp_q = 2]
// CHECK:      stg.reduce_scatter %x on @mesh [tp_kv, tp_q] : !stg.tensor<[B, S, H] @tp_kv*tp_q, bf16> -> !stg.tensor<[B, S/tp_kv/tp_q, H], bf16>
// CHECK:      %[[G:.*]] = stg.all_gather %{{.*}} on @mesh [tp_kv, tp_q] : !stg.tensor<[B, S/tp_kv/tp_q, H], bf16> -> !stg.tensor<[B, S, H], bf16>
// CHECK-NEXT: %q = stg.einsum "bsh,nh->bsn" %[[G]], %q_proj : {{.*}} -> !stg.tensor<[B, S, D*N/tp_kv/tp_q], bf16>
// CHECK:      %k_proj = stg.param "model.layers.self_attn.k_proj.weight" : !stg.tensor<[D*KV/tp_kv, H], bf16>
// CHECK-NEXT: %k = stg.einsum "bsh,kh->bsk" %[[G]], %k_proj : {{.*}} -> !stg.tensor<[B, S, D*KV/tp_kv], bf16>
// CHECK:      %v = stg.einsum "bsh,kh->bsk" %[[G]], %v_proj : {{.*}} -> !stg.tensor<[B, S, D*KV/tp_kv], bf16>
// CHECK:      %attn = stg.attention {{.*}} : !stg.tensor<[B, S, N/tp_kv/tp_q, D], bf16>, !stg.tensor<[B, S, KV/tp_kv, D], bf16>, !stg.tensor<[B, S, KV/tp_kv, D], bf16> -> !stg.tensor<[B, S, N/tp_kv/tp_q, D], bf16>
// CHECK:      stg.reduce_scatter %o on @mesh [tp_kv, tp_q]
// CHECK:      stg.reduce_scatter %down on @mesh [tp_kv, tp_q]

// Backward: the attention's k/v gradients are partial over tp_q and stay so.
// CHECK:      stg.vjp({{.*}}) wrt [0, 1, 2]
// CHECK:      -> (!stg.tensor<[B, S, N/tp_kv/tp_q, D], bf16>, !stg.tensor<[B, S, KV/tp_kv, D] @tp_q, bf16>, !stg.tensor<[B, S, KV/tp_kv, D] @tp_q, bf16>)
// CHECK:      stg.einsum "bsk,kh->bsh" {{.*}} : !stg.tensor<[B, S, D*KV/tp_kv] @tp_q, bf16>, !stg.tensor<[D*KV/tp_kv, H], bf16> -> !stg.tensor<[B, S, H] @tp_kv*tp_q, bf16>
// CHECK:      stg.einsum "bsk,bsh->kh" {{.*}} -> !stg.tensor<[D*KV/tp_kv, H] @tp_q, bf16>
// CHECK:      stg.assign %{{.*}} to "grad" of "model.layers.self_attn.k_proj.weight" : !stg.tensor<[D*KV/tp_kv, H] @tp_q, f32>

// Optimizer: one all-reduce over tp_q per k/v weight, and no other tp_q collective.
// CHECK:      %[[KG:.*]] = stg.optimizer_state "grad" of "model.layers.self_attn.k_proj.weight" : !stg.tensor<[D*KV/tp_kv, H] @tp_q, f32>
// CHECK:      %[[KR:.*]] = stg.all_reduce %[[KG]] on @mesh [tp_q] : !stg.tensor<[D*KV/tp_kv, H] @tp_q, f32> -> !stg.tensor<[D*KV/tp_kv, H], f32>
// CHECK-NEXT: stg.adam %{{.*}}, %[[KR]],
// CHECK:      stg.all_reduce %{{.*}} on @mesh [tp_q] : !stg.tensor<[D*KV/tp_kv, H] @tp_q, f32> -> !stg.tensor<[D*KV/tp_kv, H], f32>
// CHECK-NOT:  on @mesh [tp_q]
// CHECK-NOT:  on @mesh [tp_kv]
// CHECK-NOT:  stg.reshard

// MQA:     stg.mesh @mesh [tp_q = 4]
// MQA:     %k_proj = stg.param "model.layers.self_attn.k_proj.weight" : !stg.tensor<[D*KV, H], bf16>
// MQA:     stg.attention {{.*}} : !stg.tensor<[B, S, N/tp_q, D], bf16>, !stg.tensor<[B, S, KV, D], bf16>, !stg.tensor<[B, S, KV, D], bf16> -> !stg.tensor<[B, S, N/tp_q, D], bf16>
