// RUN: stagec-opt %s -p 'stg-fully-shard,stg-schedule,stg-fsdp2' | filecheck %s
// RUN: stagec-opt %s -p 'stg-fully-shard,stg-schedule,stg-fsdp2{prefetch=0}' | filecheck %s --check-prefix=NOPREFETCH

// FSDP2 with fully_shard on every decoder layer and on the root: the root's parameter
// (e, of no layer) is one group, each layer's parameters (wa, wb of layer K of 2)
// another. A group is one all-gather at its first member's place; with prefetch=1
// (FSDP2's default) group k+1 is issued right after group k's first wait; the group's
// releases move to its last one (reshard after forward: the unsharded group is freed
// at once).

stg.mesh @m [fsdp = 2]
func.func @two_layers(%x: !stg.tensor<[8, 64], bf16>) {
  %e = stg.param "e" : !stg.tensor<[64/fsdp, 64], bf16>
  %ge = stg.all_gather %e on @m [fsdp] : !stg.tensor<[64/fsdp, 64], bf16> -> !stg.tensor<[64, 64], bf16>
  %h = stg.einsum "bh,hf->bf" %x, %ge : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
  %wa0 = stg.param "wa" layer 0 of 2 : !stg.tensor<[64/fsdp, 64], bf16>
  %ga0 = stg.all_gather %wa0 on @m [fsdp] : !stg.tensor<[64/fsdp, 64], bf16> -> !stg.tensor<[64, 64], bf16>
  %a0 = stg.einsum "bh,hf->bf" %h, %ga0 : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
  %wb0 = stg.param "wb" layer 0 of 2 : !stg.tensor<[64/fsdp, 64], bf16>
  %gb0 = stg.all_gather %wb0 on @m [fsdp] : !stg.tensor<[64/fsdp, 64], bf16> -> !stg.tensor<[64, 64], bf16>
  %b0 = stg.einsum "bh,hf->bf" %a0, %gb0 : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
  %wa1 = stg.param "wa" layer 1 of 2 : !stg.tensor<[64/fsdp, 64], bf16>
  %ga1 = stg.all_gather %wa1 on @m [fsdp] : !stg.tensor<[64/fsdp, 64], bf16> -> !stg.tensor<[64, 64], bf16>
  %a1 = stg.einsum "bh,hf->bf" %b0, %ga1 : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
  %wb1 = stg.param "wb" layer 1 of 2 : !stg.tensor<[64/fsdp, 64], bf16>
  %gb1 = stg.all_gather %wb1 on @m [fsdp] : !stg.tensor<[64/fsdp, 64], bf16> -> !stg.tensor<[64, 64], bf16>
  %b1 = stg.einsum "bh,hf->bf" %a1, %gb1 : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
  func.return
}

// CHECK-LABEL: func.func @two_layers
// CHECK-NEXT:    %e = stg.param "e"
// CHECK-NEXT:    %ge_t = stg.all_gather %e on @m [fsdp] async stream "fsdp"
// CHECK-NEXT:    %ge = stg.wait %ge_t
// CHECK-NEXT:    %wa0 = stg.param "wa" layer 0 of 2
// CHECK-NEXT:    %wb0 = stg.param "wb" layer 0 of 2
// CHECK-NEXT:    %ga0_t, %gb0_t = stg.group async stream "fsdp" {
// CHECK-NEXT:      stg.all_gather %wa0 on @m [fsdp] :
// CHECK-NEXT:      stg.all_gather %wb0 on @m [fsdp] :
// CHECK-NEXT:      stg.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %h = stg.einsum "bh,hf->bf" %x, %ge
// CHECK-NEXT:    stg.release %ge
// CHECK-NEXT:    %ga0 = stg.wait %ga0_t
// CHECK-NEXT:    %wa1 = stg.param "wa" layer 1 of 2
// CHECK-NEXT:    %wb1 = stg.param "wb" layer 1 of 2
// CHECK-NEXT:    %ga1_t, %gb1_t = stg.group async stream "fsdp" {
// CHECK-NEXT:      stg.all_gather %wa1 on @m [fsdp] :
// CHECK-NEXT:      stg.all_gather %wb1 on @m [fsdp] :
// CHECK-NEXT:      stg.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %a0 = stg.einsum "bh,hf->bf" %h, %ga0
// CHECK-NEXT:    %gb0 = stg.wait %gb0_t
// CHECK-NEXT:    %b0 = stg.einsum "bh,hf->bf" %a0, %gb0
// CHECK-NEXT:    stg.release %gb0
// CHECK-NEXT:    stg.release %ga0
// CHECK-NEXT:    %ga1 = stg.wait %ga1_t
// CHECK-NEXT:    %a1 = stg.einsum "bh,hf->bf" %b0, %ga1
// CHECK-NEXT:    %gb1 = stg.wait %gb1_t
// CHECK-NEXT:    %b1 = stg.einsum "bh,hf->bf" %a1, %gb1
// CHECK-NEXT:    stg.release %gb1
// CHECK-NEXT:    stg.release %ga1
// CHECK-NEXT:    func.return

// Without prefetch each group stands where its first member stood.
// NOPREFETCH-LABEL: func.func @two_layers
// NOPREFETCH:         %h = stg.einsum "bh,hf->bf" %x, %ge
// NOPREFETCH-NEXT:    stg.release %ge
// NOPREFETCH-NEXT:    %wa0 = stg.param "wa" layer 0 of 2
// NOPREFETCH-NEXT:    %wb0 = stg.param "wb" layer 0 of 2
// NOPREFETCH-NEXT:    %ga0_t, %gb0_t = stg.group async stream "fsdp" {
// NOPREFETCH:         %ga0 = stg.wait %ga0_t
// NOPREFETCH-NEXT:    %a0 = stg.einsum "bh,hf->bf" %h, %ga0
