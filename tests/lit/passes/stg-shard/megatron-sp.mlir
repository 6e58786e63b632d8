// Megatron tensor + sequence parallelism on the Llama template (forward): the
// residual stream and norms hold a sequence shard [B, S/tp, H]; each column-parallel
// projection gathers its input (one reshard shared by q, k and v), each row-parallel
// one leaves a partial sum that is reduce-scattered back into the sequence shard;
// the vocab-parallel embedding's partial output enters the layer stack by a
// reduce-scatter and the head's logits stay vocab-split into the loss.
// RUN: stagec ir --model %S/Inputs/tiny-llama.json --pass-pipeline 'builtin.module(stg-shard{dp=2 tp=2 sp=true})' | filecheck %s
// RUN: stagec ir --model %S/Inputs/tiny-llama.json --pass-pipeline 'builtin.module(stg-shard{dp=2 tp=2 sp=true},stg-match-collectives)' | filecheck %s --check-prefix=MATCHED

// CHECK:      stg.mesh @mesh [dp = 2, tp = 2]
// CHECK:      %input_ids = stg.input "input_ids" : !stg.tensor<[B/dp, S], i64>
// CHECK:      %embed_tokens = stg.param "model.embed_tokens.weight" : !stg.tensor<[V/tp, H], bf16>
// CHECK-NEXT: %x = stg.embedding %embed_tokens, %input_ids : {{.*}} -> !stg.tensor<[B/dp, S, H] @tp, bf16>
// CHECK-NEXT: %[[IN:.*]] = stg.reshard %x on @mesh : !stg.tensor<[B/dp, S, H] @tp, bf16> -> !stg.tensor<[B/dp, S/tp, H], bf16>
// CHECK-NEXT: stg.repeat L carry(%[[H:.*]] = %[[IN]] : !stg.tensor<[B/dp, S/tp, H], bf16>)
// CHECK:      %[[N1:.*]] = stg.norm rms %[[H]], {{.*}} -> !stg.tensor<[B/dp, S/tp, H], bf16>
// CHECK-NEXT: %q_proj = stg.param "model.layers.self_attn.q_proj.weight" : !stg.tensor<[D*N/tp, H], bf16>
// CHECK-NEXT: %[[G:.*]] = stg.reshard %[[N1]] on @mesh : !stg.tensor<[B/dp, S/tp, H], bf16> -> !stg.tensor<[B/dp, S, H], bf16>
// CHECK-NEXT: %q = stg.einsum "bsh,nh->bsn" %[[G]], %q_proj : {{.*}} -> !stg.tensor<[B/dp, S, D*N/tp], bf16>
// CHECK:      %k = stg.einsum "bsh,kh->bsk" %[[G]], %k_proj
// CHECK:      %v = stg.einsum "bsh,kh->bsk" %[[G]], %v_proj
// CHECK:      stg.attention {{.*}} -> !stg.tensor<[B/dp, S, N/tp, D], bf16>
// CHECK:      %o = stg.einsum "bsn,hn->bsh" {{.*}} -> !stg.tensor<[B/dp, S, H] @tp, bf16>
// CHECK-NEXT: %[[O:.*]] = stg.reshard %o on @mesh : !stg.tensor<[B/dp, S, H] @tp, bf16> -> !stg.tensor<[B/dp, S/tp, H], bf16>
// CHECK-NEXT: %h_attn = stg.elementwise add %[[H]], %[[O]] : !stg.tensor<[B/dp, S/tp, H], bf16>, !stg.tensor<[B/dp, S/tp, H], bf16>
// CHECK:      %down = stg.einsum "bsf,hf->bsh" {{.*}} -> !stg.tensor<[B/dp, S, H] @tp, bf16>
// CHECK-NEXT: stg.reshard %down on @mesh : !stg.tensor<[B/dp, S, H] @tp, bf16> -> !stg.tensor<[B/dp, S/tp, H], bf16>
// CHECK:      stg.yield %{{.*}} : !stg.tensor<[B/dp, S/tp, H], bf16>
// CHECK:      %logits = stg.einsum "bsh,vh->bsv" {{.*}} -> !stg.tensor<[B/dp, S, V/tp], bf16>
// CHECK-NEXT: %loss = stg.cross_entropy %logits, %labels : !stg.tensor<[B/dp, S, V/tp], bf16>, !stg.tensor<[B/dp, S], i64> -> !stg.tensor<[] @dp, f32>
// CHECK-NEXT: %[[L:.*]] = stg.reshard %loss on @mesh : !stg.tensor<[] @dp, f32> -> !stg.tensor<[], f32>
// CHECK-NEXT: func.return %[[L]]

// The matched collectives: per layer two all-gathers and two reduce-scatters over tp.
// MATCHED:     stg.reduce_scatter %x on @mesh [tp] : !stg.tensor<[B/dp, S, H] @tp, bf16> -> !stg.tensor<[B/dp, S/tp, H], bf16>
// MATCHED:     stg.repeat L
// MATCHED:     stg.all_gather {{.*}} on @mesh [tp] : !stg.tensor<[B/dp, S/tp, H], bf16> -> !stg.tensor<[B/dp, S, H], bf16>
// MATCHED:     stg.reduce_scatter %o on @mesh [tp]
// MATCHED:     stg.all_gather {{.*}} on @mesh [tp] : !stg.tensor<[B/dp, S/tp, H], bf16> -> !stg.tensor<[B/dp, S, H], bf16>
// MATCHED:     stg.reduce_scatter %down on @mesh [tp]
// MATCHED:     stg.yield
// MATCHED:     stg.all_gather {{.*}} on @mesh [tp] : !stg.tensor<[B/dp, S/tp, H], bf16> -> !stg.tensor<[B/dp, S, H], bf16>
// MATCHED:     stg.all_reduce %loss on @mesh [dp] : !stg.tensor<[] @dp, f32> -> !stg.tensor<[], f32>
// MATCHED-NOT: stg.reshard
