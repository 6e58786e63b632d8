// convert-torch-to-stg: causal aten.scaled_dot_product_attention with GQA (4 query heads over 2 kv heads): the [B, heads, S, D] transposes fold into stg.attention's [B, S, heads, D] operands; heads are N and KV (read off the attention), head_dim D.
// The input is torch-mlir's FX import of a small module (Inputs/make_inputs.py).
// RUN: stagec-opt %S/Inputs/attention.torch.mlir --pass-pipeline='builtin.module(convert-torch-to-stg)' | filecheck %s

// CHECK:      builtin.module attributes {stg.model = "torch", stg.config = {N = 4 : i64, KV = 2 : i64, D = 8 : i64}} {
// CHECK-NEXT: func.func @forward() -> !stg.tensor<[B, S, N, D], f32> {
// CHECK-NEXT: %q = stg.input "q" : !stg.tensor<[B, S, N, D], f32>
// CHECK-NEXT: %k = stg.input "k" : !stg.tensor<[B, S, KV, D], f32>
// CHECK-NEXT: %v = stg.input "v" : !stg.tensor<[B, S, KV, D], f32>
// CHECK-NEXT: %attn = stg.attention %q, %k, %v heads N kv_heads KV causal : !stg.tensor<[B, S, N, D], f32>, !stg.tensor<[B, S, KV, D], f32>, !stg.tensor<[B, S, KV, D], f32> -> !stg.tensor<[B, S, N, D], f32>
// CHECK-NEXT: func.return %attn : !stg.tensor<[B, S, N, D], f32>
