// `stagec import MODULE:FACTORY`: a plain-PyTorch Llama-style decoder (the unit tests'
// llama_torch.py, tiny by default) -> torch.export -> torch-mlir -> stg. The torch dialect
// it can emit instead goes through stagec-opt's convert-torch-to-stg to the same program.
// RUN: env PYTHONPATH=%S/../../../unit/torch_frontend stagec import llama_torch:make_model -o %t.stg.mlir
// RUN: filecheck %s < %t.stg.mlir
// RUN: env PYTHONPATH=%S/../../../unit/torch_frontend stagec import llama_torch:make_model --emit torch -o %t.torch.mlir
// RUN: filecheck %s --check-prefix=TORCH < %t.torch.mlir
// RUN: stagec-opt %t.torch.mlir --pass-pipeline='builtin.module(convert-torch-to-stg{model=make_model})' | filecheck %s
// RUN: not stagec import no_such_module:make -o %t.none 2>&1 | filecheck %s --check-prefix=ERROR

// CHECK:      builtin.module attributes {stg.model = "make_model", stg.config = {H = 32 : i64, L = 2 : i64, V = 64 : i64, N = 4 : i64, KV = 2 : i64, D = 8 : i64, F = 48 : i64}} {
// CHECK-NEXT:   func.func @forward() -> !stg.tensor<[], f32> {
// CHECK:          %h = stg.repeat L carry(%h_1 = %x : !stg.tensor<[B, S, H], bf16>) {
// CHECK:            stg.attention %{{.*}}, %{{.*}}, %{{.*}} heads N kv_heads KV causal
// CHECK:          %loss = stg.cross_entropy %{{.*}}, %labels : !stg.tensor<[B, S, V], bf16>, !stg.tensor<[B, S], i64> -> !stg.tensor<[], f32>

// TORCH:      func.func @forward(%model_embed_tokens_weight: !torch.vtensor<[64,32],bf16> {torch.name = "model.embed_tokens.weight", torch.kind = "parameter"},
// TORCH-SAME:   %input_ids: !torch.vtensor<[?,?],si64> {torch.name = "input_ids", torch.kind = "input"}
// TORCH:      "torch.symbolic_int"() <{{.*}}symbol_name = "B"}>
// TORCH:      "torch.aten.scaled_dot_product_attention"

// ERROR: stagec: error: FACTORY 'no_such_module:make': cannot import 'no_such_module': No module named 'no_such_module'
