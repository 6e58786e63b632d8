// RUN: not stagec-opt %s -p stg-zero3 2>&1 | filecheck %s

// stg-zero3 moves the asynchronous all-gathers of the scheduled form.

stg.mesh @m [fsdp = 2]
func.func @one(%x: !stg.tensor<[8, 64], bf16>) {
  %w1 = stg.param "w1" : !stg.tensor<[64/fsdp, 64], bf16>
  %g1 = stg.all_gather %w1 on @m [fsdp] : !stg.tensor<[64/fsdp, 64], bf16> -> !stg.tensor<[64, 64], bf16>
  %a = stg.einsum "bh,hf->bf" %x, %g1 : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
  func.return
}

// CHECK: stg-zero3 moves asynchronous all-gathers: run stg-fully-shard and stg-schedule first (a function is not stg.scheduled)
