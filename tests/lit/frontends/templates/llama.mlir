// The Llama template on a small config.json: one stg.repeat L of pre-norm layers
// (GQA with rotary q/k from the f32 rope.angles input, the SwiGLU FFN), then the final
// RMSNorm, the untied LM head and the loss; the printed IR reads back unchanged.
// RUN: stagec ir --model %S/Inputs/tiny-llama.json --pass-pipeline 'builtin.module()' | filecheck %s
// RUN: stagec ir --model %S/Inputs/tiny-llama.json --pass-pipeline 'builtin.module()' | stagec-opt | filecheck %s
// RUN: stagec ir --model %S/Inputs/tiny-llama.json --dtype f64 --pass-pipeline 'builtin.module()' | filecheck %s --check-prefix=F64

// CHECK:      builtin.module attributes {stg.model = "tiny-llama", stg.config = {H = 16 : i64, L = 2 : i64, V = 32 : i64, N = 4 : i64, KV = 2 : i64, D = 4 : i64, F = 24 : i64}} {
// CHECK-NEXT:   func.func @forward() -> !stg.tensor<[], f32> {
// CHECK-NEXT:     %input_ids = stg.input "input_ids" : !stg.tensor<[B, S], i64>
// CHECK-NEXT:     %labels = stg.input "labels" : !stg.tensor<[B, S], i64>
// CHECK-NEXT:     %rope_angles = stg.input "rope.angles" : !stg.tensor<[S, 1, D], f32>
// CHECK-NEXT:     %embed_tokens = stg.param "model.embed_tokens.weight" : !stg.tensor<[V, H], bf16>
// CHECK-NEXT:     %x = stg.embedding %embed_tokens, %input_ids : !stg.tensor<[V, H], bf16>, !stg.tensor<[B, S], i64> -> !stg.tensor<[B, S, H], bf16>

// The layer stack: one body, a count, the layer's own (per-layer stacked) parameters.
// CHECK-NEXT:     %h = stg.repeat L carry(%[[IN:.*]] = %x : !stg.tensor<[B, S, H], bf16>) {
// CHECK-NEXT:       %input_layernorm = stg.param "model.layers.input_layernorm.weight" : !stg.tensor<[H], bf16>
// CHECK-NEXT:       %[[N1:.*]] = stg.norm rms %[[IN]], %input_layernorm {eps = 1.000000e-05 : f64}

// Attention: q [B, S, N, D], k and v [B, S, KV, D], rotary on q and k, GQA.
// CHECK-NEXT:       %q_proj = stg.param "model.layers.self_attn.q_proj.weight" : !stg.tensor<[D*N, H], bf16>
// CHECK-NEXT:       %q = stg.einsum "bsh,nh->bsn" %[[N1]], %q_proj : {{.*}} -> !stg.tensor<[B, S, D*N], bf16>
// CHECK-NEXT:       %[[Q:.*]] = stg.reshape %q : !stg.tensor<[B, S, D*N], bf16> -> !stg.tensor<[B, S, N, D], bf16>
// CHECK-NEXT:       %k_proj = stg.param "model.layers.self_attn.k_proj.weight" : !stg.tensor<[D*KV, H], bf16>
// CHECK-NEXT:       %k = stg.einsum "bsh,kh->bsk" %[[N1]], %k_proj
// CHECK-NEXT:       %[[K:.*]] = stg.reshape %k : !stg.tensor<[B, S, D*KV], bf16> -> !stg.tensor<[B, S, KV, D], bf16>
// CHECK-NEXT:       %v_proj = stg.param "model.layers.self_attn.v_proj.weight" : !stg.tensor<[D*KV, H], bf16>
// CHECK-NEXT:       %v = stg.einsum "bsh,kh->bsk" %[[N1]], %v_proj
// CHECK-NEXT:       %[[V:.*]] = stg.reshape %v : !stg.tensor<[B, S, D*KV], bf16> -> !stg.tensor<[B, S, KV, D], bf16>
// CHECK-NEXT:       %q_rot = stg.elementwise rotary %[[Q]], %rope_angles : !stg.tensor<[B, S, N, D], bf16>, !stg.tensor<[S, 1, D], f32> -> !stg.tensor<[B, S, N, D], bf16>
// CHECK-NEXT:       %k_rot = stg.elementwise rotary %[[K]], %rope_angles : !stg.tensor<[B, S, KV, D], bf16>, !stg.tensor<[S, 1, D], f32> -> !stg.tensor<[B, S, KV, D], bf16>
// CHECK-NEXT:       %attn = stg.attention %q_rot, %k_rot, %[[V]] heads N kv_heads KV causal : !stg.tensor<[B, S, N, D], bf16>, !stg.tensor<[B, S, KV, D], bf16>, !stg.tensor<[B, S, KV, D], bf16> -> !stg.tensor<[B, S, N, D], bf16>
// CHECK-NEXT:       %[[O:.*]] = stg.reshape %attn : !stg.tensor<[B, S, N, D], bf16> -> !stg.tensor<[B, S, D*N], bf16>
// CHECK-NEXT:       %o_proj = stg.param "model.layers.self_attn.o_proj.weight" : !stg.tensor<[H, D*N], bf16>
// CHECK-NEXT:       %o = stg.einsum "bsn,hn->bsh" %[[O]], %o_proj : {{.*}} -> !stg.tensor<[B, S, H], bf16>
// CHECK-NEXT:       %h_attn = stg.elementwise add %[[IN]], %o

// SwiGLU: down(silu(gate(x)) * up(x)), weights [out, in].
// CHECK-NEXT:       %post_attention_layernorm = stg.param "model.layers.post_attention_layernorm.weight"
// CHECK-NEXT:       %[[N2:.*]] = stg.norm rms %h_attn, %post_attention_layernorm
// CHECK-NEXT:       %gate_proj = stg.param "model.layers.mlp.gate_proj.weight" : !stg.tensor<[F, H], bf16>
// CHECK-NEXT:       %gate = stg.einsum "bsh,fh->bsf" %[[N2]], %gate_proj : {{.*}} -> !stg.tensor<[B, S, F], bf16>
// CHECK-NEXT:       %up_proj = stg.param "model.layers.mlp.up_proj.weight" : !stg.tensor<[F, H], bf16>
// CHECK-NEXT:       %up = stg.einsum "bsh,fh->bsf" %[[N2]], %up_proj : {{.*}} -> !stg.tensor<[B, S, F], bf16>
// CHECK-NEXT:       %[[SILU:.*]] = stg.elementwise silu %gate : !stg.tensor<[B, S, F], bf16> -> !stg.tensor<[B, S, F], bf16>
// CHECK-NEXT:       %act = stg.elementwise mul %[[SILU]], %up
// CHECK-NEXT:       %down_proj = stg.param "model.layers.mlp.down_proj.weight" : !stg.tensor<[H, F], bf16>
// CHECK-NEXT:       %down = stg.einsum "bsf,hf->bsh" %act, %down_proj : {{.*}} -> !stg.tensor<[B, S, H], bf16>
// CHECK-NEXT:       %[[OUT:.*]] = stg.elementwise add %h_attn, %down
// CHECK-NEXT:       stg.yield %[[OUT]] : !stg.tensor<[B, S, H], bf16>
// CHECK-NEXT:     }

// Final norm, untied head, mean token cross-entropy in f32.
// CHECK-NEXT:     %norm = stg.param "model.norm.weight" : !stg.tensor<[H], bf16>
// CHECK-NEXT:     %[[NF:.*]] = stg.norm rms %h, %norm
// CHECK-NEXT:     %lm_head = stg.param "lm_head.weight" : !stg.tensor<[V, H], bf16>
// CHECK-NEXT:     %logits = stg.einsum "bsh,vh->bsv" %[[NF]], %lm_head : !stg.tensor<[B, S, H], bf16>, !stg.tensor<[V, H], bf16> -> !stg.tensor<[B, S, V], bf16>
// CHECK-NEXT:     %loss = stg.cross_entropy %logits, %labels : !stg.tensor<[B, S, V], bf16>, !stg.tensor<[B, S], i64> -> !stg.tensor<[], f32>
// CHECK-NEXT:     func.return %loss : !stg.tensor<[], f32>
// CHECK-NEXT:   }
// CHECK-NEXT: }

// F64:     func.func @forward() -> !stg.tensor<[], f64> {
// F64:       stg.input "rope.angles" : !stg.tensor<[S, 1, D], f32>
// F64:       stg.param "model.embed_tokens.weight" : !stg.tensor<[V, H], f64>
// F64:       stg.elementwise rotary {{.*}} : !stg.tensor<[B, S, N, D], f64>, !stg.tensor<[S, 1, D], f32> -> !stg.tensor<[B, S, N, D], f64>
// F64:       stg.cross_entropy {{.*}} -> !stg.tensor<[], f64>
