// RUN: stagec-opt %s --split-input-file -p stg-fully-shard | filecheck %s
// RUN: stagec-opt %s --split-input-file -p stg-fully-shard,stg-fully-shard | filecheck %s
// RUN: stagec-opt %s --split-input-file -p stg-fully-shard,stg-insert-releases | filecheck %s

// deepcompile.md Fig. 4: %w has two users; stg-shard gathered it before each. One
// all-gather before the first use serves both, and the buffer is released right
// after the second (the last) use; %v is released after its only use.

stg.mesh @m [fsdp = 2]
func.func @fig4(%x: !stg.tensor<[8, 16], bf16>) {
  %w1 = stg.param "w" : !stg.tensor<[16/fsdp, 16], bf16>
  %g1 = stg.all_gather %w1 on @m [fsdp] : !stg.tensor<[16/fsdp, 16], bf16> -> !stg.tensor<[16, 16], bf16>
  %a = stg.einsum "bh,hf->bf" %x, %g1 : !stg.tensor<[8, 16], bf16>, !stg.tensor<[16, 16], bf16> -> !stg.tensor<[8, 16], bf16>
  %v1 = stg.param "v" : !stg.tensor<[16/fsdp, 16], bf16>
  %gv = stg.all_gather %v1 on @m [fsdp] : !stg.tensor<[16/fsdp, 16], bf16> -> !stg.tensor<[16, 16], bf16>
  %b = stg.einsum "bh,hf->bf" %a, %gv : !stg.tensor<[8, 16], bf16>, !stg.tensor<[16, 16], bf16> -> !stg.tensor<[8, 16], bf16>
  %w2 = stg.param "w" : !stg.tensor<[16/fsdp, 16], bf16>
  %g2 = stg.all_gather %w2 on @m [fsdp] : !stg.tensor<[16/fsdp, 16], bf16> -> !stg.tensor<[16, 16], bf16>
  %c = stg.einsum "bh,hf->bf" %b, %g2 : !stg.tensor<[8, 16], bf16>, !stg.tensor<[16, 16], bf16> -> !stg.tensor<[8, 16], bf16>
  %d = stg.elementwise silu %c : !stg.tensor<[8, 16], bf16> -> !stg.tensor<[8, 16], bf16>
  func.return
}

// CHECK-LABEL: func.func @fig4
// CHECK-NEXT:    %w1 = stg.param "w"
// CHECK-NEXT:    %g1 = stg.all_gather %w1
// CHECK-NEXT:    %a = stg.einsum "bh,hf->bf" %x, %g1
// CHECK-NEXT:    %v1 = stg.param "v"
// CHECK-NEXT:    %gv = stg.all_gather %v1
// CHECK-NEXT:    %b = stg.einsum "bh,hf->bf" %a, %gv
// CHECK-NEXT:    stg.release %gv
// CHECK-NEXT:    %c = stg.einsum "bh,hf->bf" %b, %g1
// CHECK-NEXT:    stg.release %g1
// CHECK-NEXT:    %d = stg.elementwise silu %c
// CHECK-NEXT:    func.return

// -----

// A recomputed layer: the recompute phase gathers %w at its first use and yields the
// buffer, the backward's own gather goes, and the buffer dies after the backward use.

stg.mesh @m [fsdp = 2]
func.func @recompute(%x: !stg.tensor<[8, 16], bf16>, %dy: !stg.tensor<[8, 16], bf16>) {
  stg.phase backward {
    %y = stg.phase recompute {
      %w1 = stg.param "w" : !stg.tensor<[16/fsdp, 16], bf16>
      %g1 = stg.all_gather %w1 on @m [fsdp] : !stg.tensor<[16/fsdp, 16], bf16> -> !stg.tensor<[16, 16], bf16>
      %y1 = stg.einsum "bh,hf->bf" %x, %g1 : !stg.tensor<[8, 16], bf16>, !stg.tensor<[16, 16], bf16> -> !stg.tensor<[8, 16], bf16>
      stg.yield %y1 : !stg.tensor<[8, 16], bf16>
    }
    %s = stg.elementwise silu %y : !stg.tensor<[8, 16], bf16> -> !stg.tensor<[8, 16], bf16>
    %w2 = stg.param "w" : !stg.tensor<[16/fsdp, 16], bf16>
    %g2 = stg.all_gather %w2 on @m [fsdp] : !stg.tensor<[16/fsdp, 16], bf16> -> !stg.tensor<[16, 16], bf16>
    %dx = stg.einsum "bf,hf->bh" %dy, %g2 : !stg.tensor<[8, 16], bf16>, !stg.tensor<[16, 16], bf16> -> !stg.tensor<[8, 16], bf16>
    %z = stg.elementwise add %dx, %s : !stg.tensor<[8, 16], bf16>, !stg.tensor<[8, 16], bf16> -> !stg.tensor<[8, 16], bf16>
    stg.yield
  }
  func.return
}

// CHECK-LABEL: func.func @recompute
// CHECK:         %y, %g1 = stg.phase recompute {
// CHECK-NEXT:      %w1 = stg.param "w"
// CHECK-NEXT:      %g1_1 = stg.all_gather %w1
// CHECK-NEXT:      %y1 = stg.einsum "bh,hf->bf" %x, %g1_1
// CHECK-NEXT:      stg.yield %y1, %g1_1
// CHECK-NEXT:    }
// CHECK-NEXT:    %s = stg.elementwise silu %y
// CHECK-NEXT:    %dx = stg.einsum "bf,hf->bh" %dy, %g1
// CHECK-NEXT:    stg.release %g1
// CHECK-NEXT:    %z = stg.elementwise add %dx, %s
// CHECK-NOT:     stg.all_gather
// CHECK:         func.return

// -----

// The forward and the backward are two graphs: each gathers %w and releases it in
// its own phase (keeping it across them is stg-unshard's decision).

stg.mesh @m [fsdp = 2]
func.func @graphs(%x: !stg.tensor<[8, 16], bf16>) {
  %y = stg.phase forward {
    %w1 = stg.param "w" : !stg.tensor<[16/fsdp, 16], bf16>
    %g1 = stg.all_gather %w1 on @m [fsdp] : !stg.tensor<[16/fsdp, 16], bf16> -> !stg.tensor<[16, 16], bf16>
    %y1 = stg.einsum "bh,hf->bf" %x, %g1 : !stg.tensor<[8, 16], bf16>, !stg.tensor<[16, 16], bf16> -> !stg.tensor<[8, 16], bf16>
    stg.yield %y1 : !stg.tensor<[8, 16], bf16>
  }
  stg.phase backward {
    %w2 = stg.param "w" : !stg.tensor<[16/fsdp, 16], bf16>
    %g2 = stg.all_gather %w2 on @m [fsdp] : !stg.tensor<[16/fsdp, 16], bf16> -> !stg.tensor<[16, 16], bf16>
    %dx = stg.einsum "bf,hf->bh" %y, %g2 : !stg.tensor<[8, 16], bf16>, !stg.tensor<[16, 16], bf16> -> !stg.tensor<[8, 16], bf16>
    stg.yield
  }
  func.return
}

// CHECK-LABEL: func.func @graphs
// CHECK:         %g1 = stg.all_gather %w1
// CHECK-NEXT:    %y1 = stg.einsum
// CHECK-NEXT:    stg.release %g1
// CHECK:         %g2 = stg.all_gather %w2
// CHECK-NEXT:    %dx = stg.einsum
// CHECK-NEXT:    stg.release %g2
