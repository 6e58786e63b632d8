// RUN: not stagec-opt %s -p stg-fully-shard 2>&1 | filecheck %s

// The gradient of a gathered parameter must accumulate partitioned (deepcompile.md §5.2).

stg.mesh @m [fsdp = 2]
func.func @full_grad(%x: !stg.tensor<[8, 16], bf16>, %dw: !stg.tensor<[16, 16], bf16>) {
  %w1 = stg.param "w" : !stg.tensor<[16/fsdp, 16], bf16>
  %g1 = stg.all_gather %w1 on @m [fsdp] : !stg.tensor<[16/fsdp, 16], bf16> -> !stg.tensor<[16, 16], bf16>
  %a = stg.einsum "bh,hf->bf" %x, %g1 : !stg.tensor<[8, 16], bf16>, !stg.tensor<[16, 16], bf16> -> !stg.tensor<[8, 16], bf16>
  stg.assign %dw to "grad" of "w" : !stg.tensor<[16, 16], bf16>
  func.return
}

// CHECK: the gradient of 'w' accumulates as !stg.tensor<[16, 16], bf16>, not partitioned as its parameter (!stg.tensor<[16/fsdp, 16], bf16>): fully-sharded training reduce-scatters each gradient

