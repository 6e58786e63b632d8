// stg-shard distributes an unsharded program; one that already communicates or
// carries layouts is refused, naming the op.
// RUN: not stagec-opt %s --pass-pipeline='builtin.module(stg-shard)' 2>&1 | filecheck %s

// CHECK: error: pass 'stg-shard' failed: {{.*}}stg-shard expects an unsharded program, but [B/tp, H] is already distributed
stg.mesh @m [tp = 2]
func.func @f() -> !stg.tensor<[B/tp, H], f32> {
  %x = stg.input "x" : !stg.tensor<[B/tp, H], f32>
  func.return %x : !stg.tensor<[B/tp, H], f32>
}
