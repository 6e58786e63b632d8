// RUN: stagec-opt %s | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// A decode step appends one token's keys at T - S to a cache of T positions, split
// over dp (batch) and tp (kv heads) as its entries are; the position reads back as an
// expression of the symbols.
stg.mesh @m [dp, tp]
func.func @decode(%k: !stg.tensor<[B/dp, S, KV/tp, D], bf16>) -> !stg.tensor<[B/dp, T, KV/tp, D], bf16> {
  %c = stg.kv_cache "model.layers.self_attn.key" append %k at T - S : !stg.tensor<[B/dp, S, KV/tp, D], bf16> -> !stg.tensor<[B/dp, T, KV/tp, D], bf16>
  func.return %c : !stg.tensor<[B/dp, T, KV/tp, D], bf16>
}

// CHECK: %{{.*}} = stg.kv_cache "model.layers.self_attn.key" append %{{.*}} at -S + T : !stg.tensor<[B/dp, S, KV/tp, D], bf16> -> !stg.tensor<[B/dp, T, KV/tp, D], bf16>
// GENERIC: "stg.kv_cache"(%{{.*}}) <{name = "model.layers.self_attn.key", at = #stg.expr<-S + T>}>
