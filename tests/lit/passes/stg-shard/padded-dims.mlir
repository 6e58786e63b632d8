// A padded dim `H/fsdp:6` (docs/sharding.md, "Uneven shards"): it parses and prints
// back, a collective gathers it whole or scatters a whole dim into it, and
// stg-instantiate checks that its extent is the ceiling of the bound size.
// RUN: stagec-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: stagec-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(stg-instantiate{H=16 fsdp=3})' | filecheck %s --check-prefix=BOUND
// RUN: stagec-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(stg-instantiate{H=16 fsdp=4})' | filecheck %s --check-prefix=WRONG

stg.mesh @m [fsdp]
func.func @f(%p: !stg.tensor<[H] @fsdp, f32>) -> !stg.tensor<[H/fsdp:6], f32> {
  %w = stg.param "w" : !stg.tensor<[H/fsdp:6], f32>
  %g = stg.all_gather %w on @m [fsdp] : !stg.tensor<[H/fsdp:6], f32> -> !stg.tensor<[H], f32>
  %s = stg.reduce_scatter %p on @m [fsdp] : !stg.tensor<[H] @fsdp, f32> -> !stg.tensor<[H/fsdp:6], f32>
  func.return %s : !stg.tensor<[H/fsdp:6], f32>
}

// CHECK: %w = stg.param "w" : !stg.tensor<[H/fsdp:6], f32>
// CHECK: stg.all_gather %w on @m [fsdp] : !stg.tensor<[H/fsdp:6], f32> -> !stg.tensor<[H], f32>
// ceil(16/3) = 6
// BOUND: stg.param "w" : !stg.tensor<[16/fsdp:6], f32>
// ceil(16/4) = 4, not 6
// WRONG: padded extent 6 of H = 16 over fsdp = 4 is not ceil(16/4) = 4

// -----

stg.mesh @m [dp, fsdp]
%w = stg.param "w" : !stg.tensor<[H/dp/fsdp:3], f32>
%g = stg.all_gather %w on @m [fsdp] : !stg.tensor<[H/dp/fsdp:3], f32> -> !stg.tensor<[H/dp], f32>

// CHECK: dim 0 of [H/dp/fsdp:3] is padded, so it is gathered into or scattered from a whole dim, not [H/dp]
