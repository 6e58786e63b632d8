func.func @forward() -> !stg.tensor<[], f64> {
  %ids = stg.input "input_ids" : !stg.tensor<[B, S], i64>
  %labels = stg.input "labels" : !stg.tensor<[B, S], i64>
  %theta = stg.input "rope.angles" : !stg.tensor<[S, 1, D], f64>
  %emb = stg.param "model.embed_tokens.weight" : !stg.tensor<[V, H], f64>
  %x = stg.embedding %emb, %ids : !stg.tensor<[V, H], f64>, !stg.tensor<[B, S], i64> -> !stg.tensor<[B, S, H], f64>
  %h = stg.repeat L carry(%hin = %x : !stg.tensor<[B, S, H], f64>) {
    %ln = stg.param "model.layers.input_layernorm.weight" : !stg.tensor<[H], f64>
    %n = stg.norm rms %hin, %ln {eps = 1.0e-6 : f64} : !stg.tensor<[B, S, H], f64>, !stg.tensor<[H], f64> -> !stg.tensor<[B, S, H], f64>
    %wq = stg.param "model.layers.self_attn.q_proj.weight" : !stg.tensor<[N*D, H], f64>
    %wk = stg.param "model.layers.self_attn.k_proj.weight" : !stg.tensor<[KV*D, H], f64>
    %wv = stg.param "model.layers.self_attn.v_proj.weight" : !stg.tensor<[KV*D, H], f64>
    %wo = stg.param "model.layers.self_attn.o_proj.weight" : !stg.tensor<[H, N*D], f64>
    %q = stg.einsum "bsh,fh->bsf" %n, %wq : !stg.tensor<[B, S, H], f64>, !stg.tensor<[N*D, H], f64> -> !stg.tensor<[B, S, N*D], f64>
    %k = stg.einsum "bsh,fh->bsf" %n, %wk : !stg.tensor<[B, S, H], f64>, !stg.tensor<[KV*D, H], f64> -> !stg.tensor<[B, S, KV*D], f64>
    %v = stg.einsum "bsh,fh->bsf" %n, %wv : !stg.tensor<[B, S, H], f64>, !stg.tensor<[KV*D, H], f64> -> !stg.tensor<[B, S, KV*D], f64>
    %q4 = stg.reshape %q : !stg.tensor<[B, S, N*D], f64> -> !stg.tensor<[B, S, N, D], f64>
    %k4 = stg.reshape %k : !stg.tensor<[B, S, KV*D], f64> -> !stg.tensor<[B, S, KV, D], f64>
    %v4 = stg.reshape %v : !stg.tensor<[B, S, KV*D], f64> -> !stg.tensor<[B, S, KV, D], f64>
    %qr = stg.elementwise rotary %q4, %theta : !stg.tensor<[B, S, N, D], f64>, !stg.tensor<[S, 1, D], f64> -> !stg.tensor<[B, S, N, D], f64>
    %kr = stg.elementwise rotary %k4, %theta : !stg.tensor<[B, S, KV, D], f64>, !stg.tensor<[S, 1, D], f64> -> !stg.tensor<[B, S, KV, D], f64>
    %o = stg.attention %qr, %kr, %v4 heads N kv_heads KV causal : !stg.tensor<[B, S, N, D], f64>, !stg.tensor<[B, S, KV, D], f64>, !stg.tensor<[B, S, KV, D], f64> -> !stg.tensor<[B, S, N, D], f64>
    %o3 = stg.reshape %o : !stg.tensor<[B, S, N, D], f64> -> !stg.tensor<[B, S, N*D], f64>
    %att = stg.einsum "bsf,hf->bsh" %o3, %wo : !stg.tensor<[B, S, N*D], f64>, !stg.tensor<[H, N*D], f64> -> !stg.tensor<[B, S, H], f64>
    %h1 = stg.elementwise add %hin, %att : !stg.tensor<[B, S, H], f64>, !stg.tensor<[B, S, H], f64> -> !stg.tensor<[B, S, H], f64>
    %ln2 = stg.param "model.layers.post_attention_layernorm.weight" : !stg.tensor<[H], f64>
    %n2 = stg.norm rms %h1, %ln2 {eps = 1.0e-6 : f64} : !stg.tensor<[B, S, H], f64>, !stg.tensor<[H], f64> -> !stg.tensor<[B, S, H], f64>
    %wg = stg.param "model.layers.mlp.gate_proj.weight" : !stg.tensor<[F, H], f64>
    %wu = stg.param "model.layers.mlp.up_proj.weight" : !stg.tensor<[F, H], f64>
    %wd = stg.param "model.layers.mlp.down_proj.weight" : !stg.tensor<[H, F], f64>
    %g = stg.einsum "bsh,fh->bsf" %n2, %wg : !stg.tensor<[B, S, H], f64>, !stg.tensor<[F, H], f64> -> !stg.tensor<[B, S, F], f64>
    %u = stg.einsum "bsh,fh->bsf" %n2, %wu : !stg.tensor<[B, S, H], f64>, !stg.tensor<[F, H], f64> -> !stg.tensor<[B, S, F], f64>
    %a = stg.elementwise silu %g : !stg.tensor<[B, S, F], f64> -> !stg.tensor<[B, S, F], f64>
    %m = stg.elementwise mul %a, %u : !stg.tensor<[B, S, F], f64>, !stg.tensor<[B, S, F], f64> -> !stg.tensor<[B, S, F], f64>
    %d = stg.einsum "bsf,hf->bsh" %m, %wd : !stg.tensor<[B, S, F], f64>, !stg.tensor<[H, F], f64> -> !stg.tensor<[B, S, H], f64>
    %h2 = stg.elementwise add %h1, %d : !stg.tensor<[B, S, H], f64>, !stg.tensor<[B, S, H], f64> -> !stg.tensor<[B, S, H], f64>
    stg.yield %h2 : !stg.tensor<[B, S, H], f64>
  }
  %fn = stg.param "model.norm.weight" : !stg.tensor<[H], f64>
  %hn = stg.norm rms %h, %fn {eps = 1.0e-6 : f64} : !stg.tensor<[B, S, H], f64>, !stg.tensor<[H], f64> -> !stg.tensor<[B, S, H], f64>
  %head = stg.param "lm_head.weight" : !stg.tensor<[V, H], f64>
  %logits = stg.einsum "bsh,vh->bsv" %hn, %head : !stg.tensor<[B, S, H], f64>, !stg.tensor<[V, H], f64> -> !stg.tensor<[B, S, V], f64>
  %loss = stg.cross_entropy %logits, %labels : !stg.tensor<[B, S, V], f64>, !stg.tensor<[B, S], i64> -> !stg.tensor<[], f64>
  func.return %loss : !stg.tensor<[], f64>
}
