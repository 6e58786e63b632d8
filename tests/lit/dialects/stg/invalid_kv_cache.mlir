// RUN: stagec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Only the sequence (dim 1) of the entries and the cache may differ.
func.func @f(%k: !stg.tensor<[B, S, KV, D], bf16>) {
  %c = stg.kv_cache "key" append %k at 0 : !stg.tensor<[B, S, KV, D], bf16> -> !stg.tensor<[B, T, N, D], bf16>
  func.return
}

// CHECK: 'stg.kv_cache' "key": dim 2 of the new entries [B, S, KV, D] and of the cache [B, T, N, D] differ; only the sequence (dim 1) may

// -----

// Each rank caches whole sequences.
stg.mesh @m [cp]
func.func @f(%k: !stg.tensor<[B, S/cp, KV, D], bf16>) {
  %c = stg.kv_cache "key" append %k at 0 : !stg.tensor<[B, S/cp, KV, D], bf16> -> !stg.tensor<[B, T, KV, D], bf16>
  func.return
}

// CHECK: 'stg.kv_cache' "key": the new entries split the sequence over cp; each rank caches whole sequences

// -----

// Four entries at position 6 overrun a cache of 8 positions.
func.func @f(%k: !stg.tensor<[B, 4, KV, D], bf16>) {
  %c = stg.kv_cache "key" append %k at 6 : !stg.tensor<[B, 4, KV, D], bf16> -> !stg.tensor<[B, 8, KV, D], bf16>
  func.return
}

// CHECK: 'stg.kv_cache' "key": 4 entries at 6 overrun the cache's 8 positions

// -----

// The cache holds the entries' element type.
func.func @f(%k: !stg.tensor<[B, S, KV, D], bf16>) {
  %c = stg.kv_cache "key" append %k at 0 : !stg.tensor<[B, S, KV, D], bf16> -> !stg.tensor<[B, T, KV, D], f32>
  func.return
}

// CHECK: 'stg.kv_cache' "key": the cache holds f32, not the entries' bf16
