// RUN: stagec-opt %s -p 'stg-fully-shard,stg-schedule,stg-fsdp2' | filecheck %s
// RUN: stagec-opt %s -p 'stg-fully-shard,stg-schedule,stg-fsdp2{root-reshard-after-forward=true}' | filecheck %s --check-prefix=RESHARD

// FSDP2's root group: `fully_shard` on the root model sets its reshard_after_forward
// to False, so the root's parameters (of no layer: the embedding "e", the output
// projection "o") are gathered once, as one group, before the forward and freed at
// once after their last use in the backward - "e" stays gathered although the
// backward does not read it, because FSDP2 frees a group whole (post-backward). The
// decoder layer "w" is resharded after the forward and gathered again in the backward.
// With root-reshard-after-forward=true the root is gathered in each graph as the layers are.

stg.mesh @m [fsdp = 2]
func.func @step(%x: !stg.tensor<[8, 64], bf16>, %dy: !stg.tensor<[8, 32], bf16>) {
  %h = stg.phase forward {
    %e = stg.param "e" : !stg.tensor<[64/fsdp, 64], bf16>
    %ge = stg.all_gather %e on @m [fsdp] : !stg.tensor<[64/fsdp, 64], bf16> -> !stg.tensor<[64, 64], bf16>
    %h0 = stg.einsum "bh,hf->bf" %x, %ge : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
    %w0 = stg.param "w" layer 0 of 1 : !stg.tensor<[64/fsdp, 64], bf16>
    %gw0 = stg.all_gather %w0 on @m [fsdp] : !stg.tensor<[64/fsdp, 64], bf16> -> !stg.tensor<[64, 64], bf16>
    %h1 = stg.einsum "bh,hf->bf" %h0, %gw0 : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
    %o = stg.param "o" : !stg.tensor<[64/fsdp, 32], bf16>
    %go = stg.all_gather %o on @m [fsdp] : !stg.tensor<[64/fsdp, 32], bf16> -> !stg.tensor<[64, 32], bf16>
    %y = stg.einsum "bh,ho->bo" %h1, %go : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 32], bf16> -> !stg.tensor<[8, 32], bf16>
    stg.yield %h1 : !stg.tensor<[8, 64], bf16>
  }
  stg.phase backward {
    %o2 = stg.param "o" : !stg.tensor<[64/fsdp, 32], bf16>
    %go2 = stg.all_gather %o2 on @m [fsdp] : !stg.tensor<[64/fsdp, 32], bf16> -> !stg.tensor<[64, 32], bf16>
    %d1 = stg.einsum "bo,ho->bh" %dy, %go2 : !stg.tensor<[8, 32], bf16>, !stg.tensor<[64, 32], bf16> -> !stg.tensor<[8, 64], bf16>
    %v0 = stg.param "w" layer 0 of 1 : !stg.tensor<[64/fsdp, 64], bf16>
    %gv0 = stg.all_gather %v0 on @m [fsdp] : !stg.tensor<[64/fsdp, 64], bf16> -> !stg.tensor<[64, 64], bf16>
    %dx = stg.einsum "bf,hf->bh" %d1, %gv0 : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
    stg.yield
  }
  func.return
}

// CHECK-LABEL: func.func @step
// CHECK-NEXT:    %e = stg.param "e"
// CHECK-NEXT:    %o = stg.param "o"
// CHECK-NEXT:    %ge_t, %go_t = stg.group async stream "fsdp" {
// CHECK-NEXT:      stg.all_gather %e on @m [fsdp]
// CHECK-NEXT:      stg.all_gather %o on @m [fsdp]
// CHECK-NEXT:      stg.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %ge = stg.wait %ge_t
// CHECK-NEXT:    %go = stg.wait %go_t
// CHECK-NEXT:    %h = stg.phase forward {
// CHECK-NEXT:      %h0 = stg.einsum "bh,hf->bf" %x, %ge
// CHECK-NEXT:      %w0 = stg.param "w" layer 0 of 1
// CHECK-NEXT:      %gw0_t = stg.all_gather %w0 on @m [fsdp] async stream "fsdp"
// CHECK-NEXT:      %gw0 = stg.wait %gw0_t
// CHECK-NEXT:      %h1 = stg.einsum "bh,hf->bf" %h0, %gw0
// CHECK-NEXT:      stg.release %gw0
// CHECK-NEXT:      %y = stg.einsum "bh,ho->bo" %h1, %go
// CHECK-NEXT:      stg.yield %h1
// CHECK-NEXT:    }
// CHECK-NEXT:    stg.phase backward {
// CHECK-NEXT:      %d1 = stg.einsum "bo,ho->bh" %dy, %go
// CHECK-NEXT:      %v0 = stg.param "w" layer 0 of 1
// CHECK-NEXT:      %gv0_t = stg.all_gather %v0 on @m [fsdp] async stream "fsdp"
// CHECK-NEXT:      %gv0 = stg.wait %gv0_t
// CHECK-NEXT:      %dx = stg.einsum "bf,hf->bh" %d1, %gv0
// CHECK-NEXT:      stg.release %gv0
// CHECK-NEXT:      stg.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    stg.release %go
// CHECK-NEXT:    stg.release %ge
// CHECK-NEXT:    func.return

// RESHARD-LABEL: func.func @step
// RESHARD-NEXT:    %h = stg.phase forward {
// RESHARD-NEXT:      %e = stg.param "e"
// RESHARD-NEXT:      %o = stg.param "o"
// RESHARD-NEXT:      %ge_t, %go_t = stg.group async stream "fsdp" {
// RESHARD:           stg.release %go
// RESHARD-NEXT:      stg.release %ge
// RESHARD-NEXT:      stg.yield %h1
// RESHARD-NEXT:    }
// RESHARD-NEXT:    stg.phase backward {
// RESHARD-NEXT:      %o2 = stg.param "o"
// RESHARD-NEXT:      %go2_t = stg.all_gather %o2 on @m [fsdp] async stream "fsdp"
