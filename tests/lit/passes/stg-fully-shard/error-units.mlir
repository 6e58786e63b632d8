// RUN: not stagec-opt %s -p stg-fully-shard 2>&1 | filecheck %s

// stg-fully-shard is the per-parameter alternative to stg-fsdp-units' per-unit groups.
stg.mesh @m [fsdp = 2]
func.func @units(%x: !stg.tensor<[8, 16], bf16>) {
  %w1 = stg.param "w" : !stg.tensor<[16/fsdp, 16], bf16>
  %w2 = stg.param "v" : !stg.tensor<[16/fsdp, 16], bf16>
  %a, %b = stg.group {
    %0 = stg.all_gather %w1 on @m [fsdp] : !stg.tensor<[16/fsdp, 16], bf16> -> !stg.tensor<[16, 16], bf16>
    %1 = stg.all_gather %w2 on @m [fsdp] : !stg.tensor<[16/fsdp, 16], bf16> -> !stg.tensor<[16, 16], bf16>
    stg.yield %0, %1 : !stg.tensor<[16, 16], bf16>, !stg.tensor<[16, 16], bf16>
  } : !stg.tensor<[16, 16], bf16>, !stg.tensor<[16, 16], bf16>
  func.return
}

// CHECK: run it instead of stg-fsdp-units, not after it
