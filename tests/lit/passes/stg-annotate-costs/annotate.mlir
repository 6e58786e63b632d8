// RUN: stagec-opt %s --split-input-file --pass-pipeline='builtin.module(stg-annotate-costs)' | filecheck %s

// Each compute and communication op gets its per-rank FLOPs and bytes; ops without a
// cost (state, memory bookkeeping) get none. A GEMM is 2*B*H*F over the split, bytes
// are x + w + y at 2 bytes each; an all_reduce moves its local buffer.
// CHECK-LABEL: func.func @costs
// CHECK:      stg.input "x" : !stg.tensor
// CHECK:      stg.einsum "bh,hf->bf" %x, %w {stg.flops = #stg.expr<2*B*F*H/tp>, stg.bytes = #stg.expr<(2*B*H*tp + 2*B*F + 2*F*H)/tp>}
// CHECK:      stg.all_reduce %p on @m [tp] {stg.flops = #stg.expr<0>, stg.bytes = #stg.expr<2*B*H>}
stg.mesh @m [tp]
func.func @costs() {
  %x = stg.input "x" : !stg.tensor<[B, H], bf16>
  %w = stg.param "w" : !stg.tensor<[H, F/tp], bf16>
  %y = stg.einsum "bh,hf->bf" %x, %w : !stg.tensor<[B, H], bf16>, !stg.tensor<[H, F/tp], bf16> -> !stg.tensor<[B, F/tp], bf16>
  %w2 = stg.param "w2" : !stg.tensor<[F/tp, H], bf16>
  %p = stg.einsum "bf,fh->bh" %y, %w2 : !stg.tensor<[B, F/tp], bf16>, !stg.tensor<[F/tp, H], bf16> -> !stg.tensor<[B, H] @tp, bf16>
  %s = stg.all_reduce %p on @m [tp] : !stg.tensor<[B, H] @tp, bf16> -> !stg.tensor<[B, H], bf16>
  func.return
}

// -----

// Axis sizes the mesh binds to numbers are substituted: tp = 4.
// CHECK-LABEL: func.func @bound_mesh
// CHECK-SAME: stg.total_flops = #stg.expr<B*F*H/2>
// CHECK:      stg.einsum {{.*}} {stg.flops = #stg.expr<B*F*H/2>, stg.bytes = #stg.expr<(B*F + 4*B*H + F*H)/2>}
stg.mesh @m [tp = 4]
func.func @bound_mesh() {
  %x = stg.input "x" : !stg.tensor<[B, H], bf16>
  %w = stg.param "w" : !stg.tensor<[H, F/tp], bf16>
  %y = stg.einsum "bh,hf->bf" %x, %w : !stg.tensor<[B, H], bf16>, !stg.tensor<[H, F/tp], bf16> -> !stg.tensor<[B, F/tp], bf16>
  func.return
}

// -----

// A function's totals multiply a repeated body by its count, nested loops by both
// counts: M micro-batches of L layers of a gelu over [B, H] (8 FLOPs an element).
// CHECK-LABEL: func.func @nested_loops
// CHECK-SAME: stg.total_flops = #stg.expr<8*B*H*L*M>
// CHECK-SAME: stg.total_bytes = #stg.expr<4*B*H*L*M>
func.func @nested_loops() {
  %x = stg.input "x" : !stg.tensor<[B, H], bf16>
  %mb = stg.microbatch M carry(%a = %x : !stg.tensor<[B, H], bf16>) {
    %l = stg.repeat L carry(%h = %a : !stg.tensor<[B, H], bf16>) {
      %g = stg.elementwise gelu %h : !stg.tensor<[B, H], bf16> -> !stg.tensor<[B, H], bf16>
      stg.yield %g : !stg.tensor<[B, H], bf16>
    }
    stg.yield %l : !stg.tensor<[B, H], bf16>
  }
  func.return
}
