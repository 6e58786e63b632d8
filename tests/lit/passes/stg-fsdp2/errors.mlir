// RUN: not stagec-opt %s -p stg-fsdp2 2>&1 | filecheck %s --check-prefix=UNSCHEDULED
// RUN: not stagec-opt %s -p 'stg-fully-shard,stg-schedule,stg-fsdp2{reshard-after-forward=false}' 2>&1 | filecheck %s --check-prefix=KEEP

// stg-fsdp2 groups the asynchronous all-gathers of the scheduled form; keeping a
// gathered layer from the forward into the backward crosses graphs (stg-unshard).

stg.mesh @m [fsdp = 2]
func.func @one(%x: !stg.tensor<[8, 64], bf16>) {
  %w1 = stg.param "w1" : !stg.tensor<[64/fsdp, 64], bf16>
  %g1 = stg.all_gather %w1 on @m [fsdp] : !stg.tensor<[64/fsdp, 64], bf16> -> !stg.tensor<[64, 64], bf16>
  %a = stg.einsum "bh,hf->bf" %x, %g1 : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
  func.return
}

// UNSCHEDULED: stg-fsdp2 groups asynchronous all-gathers: run stg-fully-shard and stg-schedule first (a function is not stg.scheduled)
// KEEP: stg-fsdp2: reshard-after-forward=false keeps each gathered layer from the forward into the backward, across graphs: that is stg-unshard's rewrite, not this baseline's
