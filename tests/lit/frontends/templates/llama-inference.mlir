// The Llama template's inference steps (docs/inference.md) on a small config.json: no
// labels and no loss; each layer appends its rotated keys and its values to the KV
// cache of T positions, `at 0` in a prefill (which attends over its own S keys) and
// `at T - S` in a decode step (which attends over the whole cache); the step returns
// the next token's logits. The printed IR reads back unchanged.
// RUN: stagec ir --model %S/Inputs/tiny-llama.json --phase decode --pass-pipeline 'builtin.module()' | filecheck %s --check-prefix=DECODE
// RUN: stagec ir --model %S/Inputs/tiny-llama.json --phase decode --pass-pipeline 'builtin.module()' | stagec-opt | filecheck %s --check-prefix=DECODE
// RUN: stagec ir --model %S/Inputs/tiny-llama.json --phase prefill --pass-pipeline 'builtin.module()' | filecheck %s --check-prefix=PREFILL
// RUN: stagec ir --model %S/Inputs/tiny-llama.json --phase prefill --pass-pipeline 'builtin.module()' | stagec-opt | filecheck %s --check-prefix=PREFILL

// DECODE:      func.func @decode() -> !stg.tensor<[B, S, V], bf16> {
// DECODE-NEXT:   %input_ids = stg.input "input_ids" : !stg.tensor<[B, S], i64>
// DECODE-NEXT:   %rope_angles = stg.input "rope.angles" : !stg.tensor<[S, 1, D], f32>
// DECODE-NOT:    "labels"
// DECODE:        %h = stg.repeat L carry(
// DECODE:          %k_rot = stg.elementwise rotary %{{.*}}, %rope_angles : !stg.tensor<[B, S, KV, D], bf16>, !stg.tensor<[S, 1, D], f32> -> !stg.tensor<[B, S, KV, D], bf16>
// DECODE-NEXT:     %key_cache = stg.kv_cache "model.layers.self_attn.key" append %k_rot at -S + T : !stg.tensor<[B, S, KV, D], bf16> -> !stg.tensor<[B, T, KV, D], bf16>
// DECODE-NEXT:     %value_cache = stg.kv_cache "model.layers.self_attn.value" append %{{.*}} at -S + T : !stg.tensor<[B, S, KV, D], bf16> -> !stg.tensor<[B, T, KV, D], bf16>
// DECODE-NEXT:     %attn = stg.attention %q_rot, %key_cache, %value_cache heads N kv_heads KV causal : !stg.tensor<[B, S, N, D], bf16>, !stg.tensor<[B, T, KV, D], bf16>, !stg.tensor<[B, T, KV, D], bf16> -> !stg.tensor<[B, S, N, D], bf16>
// DECODE:        %logits = stg.einsum "bsh,vh->bsv" %{{.*}}, %lm_head : !stg.tensor<[B, S, H], bf16>, !stg.tensor<[V, H], bf16> -> !stg.tensor<[B, S, V], bf16>
// DECODE-NEXT:   func.return %logits : !stg.tensor<[B, S, V], bf16>
// DECODE-NOT:    stg.cross_entropy

// PREFILL:      func.func @prefill() -> !stg.tensor<[B, 1, V], bf16> {
// PREFILL-NEXT:   %input_ids = stg.input "input_ids" : !stg.tensor<[B, S], i64>
// PREFILL-NOT:    "labels"
// PREFILL:          %key_cache = stg.kv_cache "model.layers.self_attn.key" append %k_rot at 0 : !stg.tensor<[B, S, KV, D], bf16> -> !stg.tensor<[B, T, KV, D], bf16>
// PREFILL-NEXT:     %value_cache = stg.kv_cache "model.layers.self_attn.value" append %[[V:.*]] at 0 : !stg.tensor<[B, S, KV, D], bf16> -> !stg.tensor<[B, T, KV, D], bf16>
// PREFILL-NEXT:     %attn = stg.attention %q_rot, %k_rot, %[[V]] heads N kv_heads KV causal : !stg.tensor<[B, S, N, D], bf16>, !stg.tensor<[B, S, KV, D], bf16>, !stg.tensor<[B, S, KV, D], bf16> -> !stg.tensor<[B, S, N, D], bf16>
// The LM head runs on the last prompt position only.
// PREFILL:        %lm_head = stg.param "lm_head.weight" : !stg.tensor<[V, H], bf16>
// PREFILL-NEXT:   %h_prompt, %h_last = stg.split %{{.*}} dim 1 : !stg.tensor<[B, S, H], bf16> -> !stg.tensor<[B, (S - 1), H], bf16>, !stg.tensor<[B, 1, H], bf16>
// PREFILL-NEXT:   %logits = stg.einsum "bsh,vh->bsv" %h_last, %lm_head : !stg.tensor<[B, 1, H], bf16>, !stg.tensor<[V, H], bf16> -> !stg.tensor<[B, 1, V], bf16>
// PREFILL-NEXT:   func.return %logits : !stg.tensor<[B, 1, V], bf16>
