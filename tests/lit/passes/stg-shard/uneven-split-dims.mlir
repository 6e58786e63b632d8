// A padded dim is padded over all of its axes, so fsdp pads only a dim no other axis
// splits (docs/sharding.md, "Uneven shards"): where every dim is split already and
// fsdp divides none of the rank's extents, stg-shard says so.
// RUN: not stagec-opt %s --pass-pipeline='builtin.module(stg-shard{override="w=[H/a, F/b]"})' 2>&1 | filecheck %s
// CHECK: uneven-split-dims.mlir:[[# @LINE + 5]]:10: error: pass 'stg-shard' failed: fsdp = 4 divides no dim of 'w' [H/a, F/b] (held as [3, 5] per rank), and every dim it could pad is split over other axes already - give fsdp a size dividing one of its dims
builtin.module attributes {stg.config = {H = 6 : i64, F = 10 : i64}} {
  stg.mesh @m [fsdp = 4, a = 2, b = 2]
  func.func @f() -> !stg.tensor<[B, F], f32> {
    %x = stg.input "x" : !stg.tensor<[B, H], f32>
    %w = stg.param "w" : !stg.tensor<[H, F], f32>
    %y = stg.einsum "bh,hf->bf" %x, %w : !stg.tensor<[B, H], f32>, !stg.tensor<[H, F], f32> -> !stg.tensor<[B, F], f32>
    func.return %y : !stg.tensor<[B, F], f32>
  }
}
