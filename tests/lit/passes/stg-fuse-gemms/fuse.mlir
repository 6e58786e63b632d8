// RUN: stagec-opt %s --split-input-file -p stg-fuse-gemms | filecheck %s

// Q, K and V read one input with one equation shape: one GEMM kernel (Megatron's
// fused QKV); the views a member reads later in the block move up to the group.

stg.mesh @m [tp = 2]
func.func @qkv(%x: !stg.tensor<[B, H], bf16>) {
  %wq = stg.param "wq" : !stg.tensor<[H, H/tp], bf16>
  %q = stg.einsum "bh,hd->bd" %x, %wq : !stg.tensor<[B, H], bf16>, !stg.tensor<[H, H/tp], bf16> -> !stg.tensor<[B, H/tp], bf16>
  %r = stg.elementwise silu %q : !stg.tensor<[B, H/tp], bf16> -> !stg.tensor<[B, H/tp], bf16>
  %wk = stg.param "wk" : !stg.tensor<[H, H/tp], bf16>
  %k = stg.einsum "bh,hd->bd" %x, %wk : !stg.tensor<[B, H], bf16>, !stg.tensor<[H, H/tp], bf16> -> !stg.tensor<[B, H/tp], bf16>
  %o = stg.elementwise add %r, %k : !stg.tensor<[B, H/tp], bf16>, !stg.tensor<[B, H/tp], bf16> -> !stg.tensor<[B, H/tp], bf16>
  func.return
}

// CHECK-LABEL: func.func @qkv
// CHECK-NEXT:    %wq = stg.param "wq"
// CHECK-NEXT:    %wk = stg.param "wk"
// CHECK-NEXT:    %q, %k = stg.group {
// CHECK-NEXT:      %{{.*}} = stg.einsum "bh,hd->bd" %x, %wq
// CHECK-NEXT:      %{{.*}} = stg.einsum "bh,hd->bd" %x, %wk
// CHECK-NEXT:      stg.yield
// CHECK-NEXT:    } : !stg.tensor<[B, H/tp], bf16>, !stg.tensor<[B, H/tp], bf16>
// CHECK-NEXT:    %r = stg.elementwise silu %q
// CHECK-NEXT:    %o = stg.elementwise add %r, %k

// -----

// Input gradients that are only summed: one GEMM with the sum folded in.

func.func @summed(%dq: !stg.tensor<[B, D], bf16>, %dk: !stg.tensor<[B, D], bf16>, %wq: !stg.tensor<[D, H], bf16>, %wk: !stg.tensor<[D, H], bf16>) {
  %a = stg.einsum "bd,dh->bh" %dq, %wq : !stg.tensor<[B, D], bf16>, !stg.tensor<[D, H], bf16> -> !stg.tensor<[B, H], bf16>
  %b = stg.einsum "bd,dh->bh" %dk, %wk : !stg.tensor<[B, D], bf16>, !stg.tensor<[D, H], bf16> -> !stg.tensor<[B, H], bf16>
  %s = stg.elementwise add %a, %b : !stg.tensor<[B, H], bf16>, !stg.tensor<[B, H], bf16> -> !stg.tensor<[B, H], bf16>
  %t = stg.elementwise silu %s : !stg.tensor<[B, H], bf16> -> !stg.tensor<[B, H], bf16>
  func.return
}

// CHECK-LABEL: func.func @summed
// CHECK-NEXT:    %s = stg.group {
// CHECK-NEXT:      %{{.*}} = stg.einsum "bd,dh->bh" %dq, %wq
// CHECK-NEXT:      %{{.*}} = stg.einsum "bd,dh->bh" %dk, %wk
// CHECK-NEXT:      %{{.*}} = stg.elementwise add
// CHECK-NEXT:      stg.yield
// CHECK-NEXT:    } : !stg.tensor<[B, H], bf16>
// CHECK-NEXT:    %t = stg.elementwise silu %s

// -----

// A member whose input is computed after the first member cannot be issued with it.

func.func @apart(%x: !stg.tensor<[B, H], bf16>, %w1: !stg.tensor<[H, H], bf16>, %w2: !stg.tensor<[H, H], bf16>) {
  %a = stg.einsum "bh,hd->bd" %x, %w1 : !stg.tensor<[B, H], bf16>, !stg.tensor<[H, H], bf16> -> !stg.tensor<[B, H], bf16>
  %w3 = stg.elementwise silu %w1 : !stg.tensor<[H, H], bf16> -> !stg.tensor<[H, H], bf16>
  %b = stg.einsum "bh,hd->bd" %x, %w3 : !stg.tensor<[B, H], bf16>, !stg.tensor<[H, H], bf16> -> !stg.tensor<[B, H], bf16>
  func.return
}

// CHECK-LABEL: func.func @apart
// CHECK-NOT:     stg.group
// CHECK:         func.return
