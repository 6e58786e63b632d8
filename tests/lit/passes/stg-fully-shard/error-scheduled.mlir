// RUN: not stagec-opt %s -p stg-fully-shard 2>&1 | filecheck %s

// stg-fully-shard decides before stg-schedule makes the gathers asynchronous.
stg.mesh @m [fsdp = 2]
func.func @scheduled(%x: !stg.tensor<[8, 16], bf16>) attributes {stg.scheduled} {
  func.return
}

// CHECK: stg-fully-shard runs before stg-schedule: the function is already scheduled

