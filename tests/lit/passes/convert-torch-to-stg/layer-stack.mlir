// convert-torch-to-stg on a whole model: a 2-layer Llama-style decoder written in plain
// PyTorch (tests/unit/torch_frontend/llama_torch.py), exported unrolled. The two layers'
// identical ops fold into one stg.repeat L body whose parameters drop the layer index
// (model.layers.0.mlp.up_proj.weight -> model.layers.mlp.up_proj.weight); the sizes are
// the model's symbols, read off the graph; the program is the Llama template's op for op.
// RUN: stagec-opt %S/Inputs/llama.torch.mlir --pass-pipeline='builtin.module(convert-torch-to-stg)' | filecheck %s
// Without folding the layers stay unrolled, their parameters named with the index:
// RUN: stagec-opt %S/Inputs/llama.torch.mlir --pass-pipeline='builtin.module(convert-torch-to-stg{fold=false})' | filecheck %s --check-prefix=UNROLLED

// UNROLLED-NOT: stg.repeat
// UNROLLED: stg.param "model.layers.0.self_attn.q_proj.weight"
// UNROLLED: stg.param "model.layers.1.self_attn.q_proj.weight"

// CHECK:      builtin.module attributes {stg.model = "torch", stg.config = {H = 32 : i64, L = 2 : i64, V = 64 : i64, N = 4 : i64, KV = 2 : i64, D = 8 : i64, F = 48 : i64}} {
// CHECK-NEXT: func.func @forward() -> !stg.tensor<[], f32> {
// CHECK-NEXT: %input_ids = stg.input "input_ids" : !stg.tensor<[B, S], i64>
// CHECK-NEXT: %rope_angles = stg.input "rope.angles" : !stg.tensor<[S, 1, D], f32>
// CHECK-NEXT: %labels = stg.input "labels" : !stg.tensor<[B, S], i64>
// CHECK-NEXT: %embed_tokens = stg.param "model.embed_tokens.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: %x = stg.embedding %embed_tokens, %input_ids : !stg.tensor<[V, H], f32>, !stg.tensor<[B, S], i64> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: %h = stg.repeat L carry(%h_1 = %x : !stg.tensor<[B, S, H], f32>) {
// CHECK-NEXT: %input_layernorm = stg.param "model.layers.input_layernorm.weight" : !stg.tensor<[H], f32>
// CHECK-NEXT: %0 = stg.norm rms %h_1, %input_layernorm {eps = 1.000000e-05 : f64} : !stg.tensor<[B, S, H], f32>, !stg.tensor<[H], f32> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: %q_proj = stg.param "model.layers.self_attn.q_proj.weight" : !stg.tensor<[D*N, H], f32>
// CHECK-NEXT: %1 = stg.einsum "bsh,nh->bsn" %0, %q_proj : !stg.tensor<[B, S, H], f32>, !stg.tensor<[D*N, H], f32> -> !stg.tensor<[B, S, D*N], f32>
// CHECK-NEXT: %k_proj = stg.param "model.layers.self_attn.k_proj.weight" : !stg.tensor<[D*KV, H], f32>
// CHECK-NEXT: %2 = stg.einsum "bsh,kh->bsk" %0, %k_proj : !stg.tensor<[B, S, H], f32>, !stg.tensor<[D*KV, H], f32> -> !stg.tensor<[B, S, D*KV], f32>
// CHECK-NEXT: %v_proj = stg.param "model.layers.self_attn.v_proj.weight" : !stg.tensor<[D*KV, H], f32>
// CHECK-NEXT: %3 = stg.einsum "bsh,kh->bsk" %0, %v_proj : !stg.tensor<[B, S, H], f32>, !stg.tensor<[D*KV, H], f32> -> !stg.tensor<[B, S, D*KV], f32>
// CHECK-NEXT: %4 = stg.reshape %2 : !stg.tensor<[B, S, D*KV], f32> -> !stg.tensor<[B, S, KV, D], f32>
// CHECK-NEXT: %5 = stg.elementwise rotary %4, %rope_angles : !stg.tensor<[B, S, KV, D], f32>, !stg.tensor<[S, 1, D], f32> -> !stg.tensor<[B, S, KV, D], f32>
// CHECK-NEXT: %6 = stg.reshape %1 : !stg.tensor<[B, S, D*N], f32> -> !stg.tensor<[B, S, N, D], f32>
// CHECK-NEXT: %7 = stg.elementwise rotary %6, %rope_angles : !stg.tensor<[B, S, N, D], f32>, !stg.tensor<[S, 1, D], f32> -> !stg.tensor<[B, S, N, D], f32>
// CHECK-NEXT: %8 = stg.reshape %3 : !stg.tensor<[B, S, D*KV], f32> -> !stg.tensor<[B, S, KV, D], f32>
// CHECK-NEXT: %attn = stg.attention %7, %5, %8 heads N kv_heads KV causal : !stg.tensor<[B, S, N, D], f32>, !stg.tensor<[B, S, KV, D], f32>, !stg.tensor<[B, S, KV, D], f32> -> !stg.tensor<[B, S, N, D], f32>
// CHECK-NEXT: %o_proj = stg.param "model.layers.self_attn.o_proj.weight" : !stg.tensor<[H, D*N], f32>
// CHECK-NEXT: %9 = stg.reshape %attn : !stg.tensor<[B, S, N, D], f32> -> !stg.tensor<[B, S, D*N], f32>
// CHECK-NEXT: %10 = stg.einsum "bsn,hn->bsh" %9, %o_proj : !stg.tensor<[B, S, D*N], f32>, !stg.tensor<[H, D*N], f32> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: %post_attention_layernorm = stg.param "model.layers.post_attention_layernorm.weight" : !stg.tensor<[H], f32>
// CHECK-NEXT: %11 = stg.elementwise add %h_1, %10 : !stg.tensor<[B, S, H], f32>, !stg.tensor<[B, S, H], f32> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: %12 = stg.norm rms %11, %post_attention_layernorm {eps = 1.000000e-05 : f64} : !stg.tensor<[B, S, H], f32>, !stg.tensor<[H], f32> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: %gate_proj = stg.param "model.layers.mlp.gate_proj.weight" : !stg.tensor<[F, H], f32>
// CHECK-NEXT: %13 = stg.einsum "bsh,fh->bsf" %12, %gate_proj : !stg.tensor<[B, S, H], f32>, !stg.tensor<[F, H], f32> -> !stg.tensor<[B, S, F], f32>
// CHECK-NEXT: %up_proj = stg.param "model.layers.mlp.up_proj.weight" : !stg.tensor<[F, H], f32>
// CHECK-NEXT: %14 = stg.einsum "bsh,fh->bsf" %12, %up_proj : !stg.tensor<[B, S, H], f32>, !stg.tensor<[F, H], f32> -> !stg.tensor<[B, S, F], f32>
// CHECK-NEXT: %down_proj = stg.param "model.layers.mlp.down_proj.weight" : !stg.tensor<[H, F], f32>
// CHECK-NEXT: %15 = stg.elementwise silu %13 : !stg.tensor<[B, S, F], f32> -> !stg.tensor<[B, S, F], f32>
// CHECK-NEXT: %16 = stg.elementwise mul %15, %14 : !stg.tensor<[B, S, F], f32>, !stg.tensor<[B, S, F], f32> -> !stg.tensor<[B, S, F], f32>
// CHECK-NEXT: %17 = stg.einsum "bsf,hf->bsh" %16, %down_proj : !stg.tensor<[B, S, F], f32>, !stg.tensor<[H, F], f32> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: %18 = stg.elementwise add %11, %17 : !stg.tensor<[B, S, H], f32>, !stg.tensor<[B, S, H], f32> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: stg.yield %18 : !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: }
// CHECK-NEXT: %norm = stg.param "model.norm.weight" : !stg.tensor<[H], f32>
// CHECK-NEXT: %19 = stg.norm rms %h, %norm {eps = 1.000000e-05 : f64} : !stg.tensor<[B, S, H], f32>, !stg.tensor<[H], f32> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: %lm_head = stg.param "lm_head.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: %20 = stg.einsum "bsh,vh->bsv" %19, %lm_head : !stg.tensor<[B, S, H], f32>, !stg.tensor<[V, H], f32> -> !stg.tensor<[B, S, V], f32>
// CHECK-NEXT: %loss = stg.cross_entropy %20, %labels : !stg.tensor<[B, S, V], f32>, !stg.tensor<[B, S], i64> -> !stg.tensor<[], f32>
// CHECK-NEXT: func.return %loss : !stg.tensor<[], f32>
// CHECK-NEXT: }
// CHECK-NEXT: }
