// The other templates on their named configs, one behaviour each: Mixtral's routed
// experts, DeepSeek-MoE's dense-then-MoE stacks with shared experts, DeepSeek-V2's MLA,
// GPT-3's learned positions and tied head, Mamba's selective scan; all read back.
// RUN: stagec ir --model mixtral-8x7b --pass-pipeline 'builtin.module()' | filecheck %s --check-prefix=MIXTRAL
// RUN: stagec ir --model deepseek-moe-16b --pass-pipeline 'builtin.module()' | filecheck %s --check-prefix=DSMOE
// RUN: stagec ir --model deepseek-v2-lite --pass-pipeline 'builtin.module()' | filecheck %s --check-prefix=MLA
// RUN: stagec ir --model gpt3-175b --pass-pipeline 'builtin.module()' | filecheck %s --check-prefix=GPT
// RUN: stagec ir --model mamba-130m --pass-pipeline 'builtin.module()' | stagec-opt | filecheck %s --check-prefix=MAMBA

// Top-2 of E experts at capacity C = 2*B*S/E, SwiGLU experts as batched einsums, and
// the combine renormalising the two weights.
// MIXTRAL:      stg.config = {H = 4096 : i64, L = 32 : i64, V = 32000 : i64, N = 32 : i64, KV = 8 : i64, D = 128 : i64, E = 8 : i64, FE = 14336 : i64}
// MIXTRAL:      %tokens = stg.reshape %{{.*}} : !stg.tensor<[B, S, H], bf16> -> !stg.tensor<[B*S, H], bf16>
// MIXTRAL-NEXT: %gate = stg.param "model.layers.block_sparse_moe.gate.weight" : !stg.tensor<[E, H], bf16>
// MIXTRAL-NEXT: %router_logits = stg.einsum "th,eh->te" %tokens, %gate
// MIXTRAL-NEXT: %[[F32:.*]] = stg.elementwise cast %router_logits : !stg.tensor<[B*S, E], bf16> -> !stg.tensor<[B*S, E], f32>
// MIXTRAL-NEXT: %scores = stg.softmax %[[F32]] dim 1 : !stg.tensor<[B*S, E], f32>
// MIXTRAL-NEXT: %dispatched = stg.moe_dispatch %tokens, %scores top_k 2 : !stg.tensor<[B*S, H], bf16>, !stg.tensor<[B*S, E], f32> -> !stg.tensor<[E, (2*B*S/E), H], bf16>
// MIXTRAL-NEXT: %w1 = stg.param "model.layers.block_sparse_moe.experts.w1.weight" : !stg.tensor<[E, FE, H], bf16>
// MIXTRAL-NEXT: %expert_gate = stg.einsum "ech,efh->ecf" %dispatched, %w1
// MIXTRAL-NEXT: %w3 = stg.param "model.layers.block_sparse_moe.experts.w3.weight" : !stg.tensor<[E, FE, H], bf16>
// MIXTRAL-NEXT: %expert_up = stg.einsum "ech,efh->ecf" %dispatched, %w3
// MIXTRAL:      %w2 = stg.param "model.layers.block_sparse_moe.experts.w2.weight" : !stg.tensor<[E, H, FE], bf16>
// MIXTRAL-NEXT: %expert_out = stg.einsum "ecf,ehf->ech" %expert_act, %w2 : {{.*}} -> !stg.tensor<[E, (2*B*S/E), H], bf16>
// MIXTRAL-NEXT: %combined = stg.moe_combine %expert_out, %scores top_k 2 normalize : !stg.tensor<[E, (2*B*S/E), H], bf16>, !stg.tensor<[B*S, E], f32> -> !stg.tensor<[B*S, H], bf16>

// first_k_dense_replace = 1: a dense stack of L = 1, then L2 = 27 MoE layers under
// model.moe_layers; top-6 unnormalised, plus the shared experts' SwiGLU of FS.
// DSMOE:      stg.config = {H = 2048 : i64, L = 1 : i64, L2 = 27 : i64, V = 102400 : i64, N = 16 : i64, KV = 16 : i64, D = 128 : i64, F = 10944 : i64, E = 64 : i64, FE = 1408 : i64, FS = 2816 : i64}
// DSMOE:      %h = stg.repeat L carry
// DSMOE:        stg.param "model.layers.mlp.down_proj.weight" : !stg.tensor<[H, F], bf16>
// DSMOE:      %h_2 = stg.repeat L2 carry(%{{.*}} = %h : !stg.tensor<[B, S, H], bf16>) {
// DSMOE:        stg.param "model.moe_layers.self_attn.q_proj.weight"
// DSMOE:        %combined = stg.moe_combine %expert_out, %scores top_k 6 : !stg.tensor<[E, (6*B*S/E), H], bf16>
// DSMOE:        stg.param "model.moe_layers.mlp.shared_experts.down_proj.weight" : !stg.tensor<[H, FS], bf16>
// DSMOE-NEXT:   %[[SHARED:.*]] = stg.einsum "bsf,hf->bsh"
// DSMOE-NEXT:   stg.elementwise add %routed, %[[SHARED]]

// Multi-head latent attention: N heads of DN + DR from q_proj; a KVR latent and one DR rope key from
// kv_a_proj_with_mqa; kv_b_proj to k_nope and v; the rope key copied to all heads.
// MLA:      %rope_angles = stg.input "rope.angles" : !stg.tensor<[S, 1, DR], f32>
// MLA:      %q_nope, %q_pe = stg.split %{{.*}} dim 3 : !stg.tensor<[B, S, N, (DN + DR)], bf16> -> !stg.tensor<[B, S, N, DN], bf16>, !stg.tensor<[B, S, N, DR], bf16>
// MLA:      %latent = stg.einsum "bsh,kh->bsk" %{{.*}}, %kv_a_proj_with_mqa : !stg.tensor<[B, S, H], bf16>, !stg.tensor<[(DR + KVR), H], bf16>
// MLA-NEXT: %c_kv, %k_pe = stg.split %latent dim 2
// MLA:      %kv = stg.einsum "bsk,nk->bsn" %{{.*}}, %kv_b_proj : !stg.tensor<[B, S, KVR], bf16>, !stg.tensor<[(DN*N + DV*N), KVR], bf16>
// MLA:      %k_nope, %v = stg.split %{{.*}} dim 3 : !stg.tensor<[B, S, N, (DN + DV)], bf16> -> !stg.tensor<[B, S, N, DN], bf16>, !stg.tensor<[B, S, N, DV], bf16>
// MLA-NEXT: %q_rot = stg.elementwise rotary %q_pe, %rope_angles
// MLA:      %k_rot_heads = stg.elementwise copy %k_rot : !stg.tensor<[B, S, 1, DR], bf16> -> !stg.tensor<[B, S, N, DR], bf16>
// MLA-NEXT: %query = stg.concat %q_nope, %q_rot dim 3
// MLA-NEXT: %key = stg.concat %k_nope, %k_rot_heads dim 3
// MLA-NEXT: %attn = stg.attention %query, %key, %v heads N kv_heads N causal : !stg.tensor<[B, S, N, (DN + DR)], bf16>, !stg.tensor<[B, S, N, (DN + DR)], bf16>, !stg.tensor<[B, S, N, DV], bf16> -> !stg.tensor<[B, S, N, DV], bf16>

// GPT-3: token plus learned position embeddings, LayerNorm with bias, fused qkv (weight [3, N*D, H])
// with bias split three ways, GeLU FFN, the head tied to the token table.
// GPT:      %position_ids = stg.input "position_ids" : !stg.tensor<[B, S], i64>
// GPT:      %wpe = stg.param "transformer.wpe.weight" : !stg.tensor<[P, H], bf16>
// GPT:      stg.norm layer %{{.*}}, %ln1, %ln_1_bias
// GPT:      %c_attn = stg.param "transformer.h.attn.c_attn.weight" : !stg.tensor<[3, D*N, H], bf16>
// GPT-NEXT: stg.einsum "bsh,knh->bskn"
// GPT:      %qkv = stg.elementwise add %{{.*}}, %c_attn_bias : !stg.tensor<[B, S, 3, D*N], bf16>, !stg.tensor<[3, D*N], bf16>
// GPT-NEXT: %q, %k, %v = stg.split %qkv dim 2
// GPT:      %attn = stg.attention {{.*}} heads N kv_heads N causal
// GPT:      stg.elementwise gelu %fc
// GPT:      %[[TIED:.*]] = stg.param "transformer.wte.weight" : !stg.tensor<[V, H], bf16>
// GPT-NEXT: %logits = stg.einsum "bsh,vh->bsv" %{{.*}}, %[[TIED]]
// GPT-NOT:  lm_head

// Mamba, as stage.md Table X's dt, dA, deltaB, the scan over S, C.h + D*x.
// MAMBA:      stg.config = {H = 768 : i64, L = 24 : i64, V = 50280 : i64, DI = 1536 : i64, DS = 16 : i64, R = 48 : i64}
// MAMBA:      %dt = stg.elementwise softplus %dt_lin : !stg.tensor<[B, S, DI], bf16>
// MAMBA:      %A = stg.elementwise neg
// MAMBA-NEXT: %[[DTA:.*]] = stg.einsum "bsd,dn->bsdn" %dt, %A : !stg.tensor<[B, S, DI], bf16>, !stg.tensor<[DI, DS], bf16> -> !stg.tensor<[B, S, DI, DS], bf16>
// MAMBA-NEXT: %dA = stg.elementwise exp %[[DTA]]
// MAMBA-NEXT: %dB = stg.einsum "bsn,bsd->bsdn" %Bc, %dt
// MAMBA-NEXT: %deltaB = stg.einsum "bsdn,bsd->bsdn" %dB, %u
// MAMBA-NEXT: %hs = stg.ssm_scan %dA, %deltaB dim 1 : !stg.tensor<[B, S, DI, DS], bf16>, !stg.tensor<[B, S, DI, DS], bf16> -> !stg.tensor<[B, S, DI, DS], bf16>
// MAMBA-NEXT: %[[Y0:.*]] = stg.einsum "bsdn,bsn->bsd" %hs, %Cc
// MAMBA:      %y = stg.elementwise add %[[Y0]], %{{.*}}
// MAMBA:      stg.param "backbone.embeddings.weight" : !stg.tensor<[V, H], bf16>
// MAMBA-NEXT: %logits = stg.einsum "bsh,vh->bsv"
