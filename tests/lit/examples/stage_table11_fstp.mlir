// stage.md Table XI: Fully-Sharded Tensor Parallel (FSTP), written as in the paper.
//   X*[Batch/dp, D1]        = AllGather[tp](X)
//   Y*[Batch/dp, D2 @ 1/tp] = einsum[bm,mn->bn](X*, W)
//   Y[Batch/dp, D2/tp]      = ReduceScatter[tp](Y*)
// W holds only its D1/tp rows, so each rank contracts its slice of the gathered X*
// (the free local slice of Fig. 6) and the product is a partial sum over tp.
// RUN: stagec-opt %s | filecheck %s
// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-annotate-costs)' | filecheck %s --check-prefix=COST

// CHECK:      stg.mesh @m [dp, tp]
// CHECK:      %x_full = stg.all_gather %x on @m [tp] : !stg.tensor<[Batch/dp, D1/tp], bf16> -> !stg.tensor<[Batch/dp, D1], bf16>
// CHECK-NEXT: %y_partial = stg.einsum "bm,mn->bn" %x_full, %w : !stg.tensor<[Batch/dp, D1], bf16>, !stg.tensor<[D1/tp, D2], bf16> -> !stg.tensor<[Batch/dp, D2] @tp, bf16>
// CHECK-NEXT: %y = stg.reduce_scatter %y_partial on @m [tp] : !stg.tensor<[Batch/dp, D2] @tp, bf16> -> !stg.tensor<[Batch/dp, D2/tp], bf16>

// The GEMM is 2*(Batch/dp)*(D1/tp)*D2; the all-gather's comm_size is the local shard
// of X (2 bytes * Batch/dp * D1/tp), the reduce-scatter's the whole partial Y*.
// COST:      stg.all_gather {{.*}} {stg.flops = #stg.expr<0>, stg.bytes = #stg.expr<2*Batch*D1/(dp*tp)>}
// COST-NEXT: stg.einsum {{.*}} {stg.flops = #stg.expr<2*Batch*D1*D2/(dp*tp)>
// COST-NEXT: stg.reduce_scatter {{.*}} {stg.flops = #stg.expr<0>, stg.bytes = #stg.expr<2*Batch*D2/dp>}
stg.mesh @m [dp, tp]
func.func @fstp() {
  %x = stg.input "x" : !stg.tensor<[Batch/dp, D1/tp], bf16>
  %w = stg.param "w" : !stg.tensor<[D1/tp, D2], bf16>
  %x_full = stg.all_gather %x on @m [tp] : !stg.tensor<[Batch/dp, D1/tp], bf16> -> !stg.tensor<[Batch/dp, D1], bf16>
  %y_partial = stg.einsum "bm,mn->bn" %x_full, %w : !stg.tensor<[Batch/dp, D1], bf16>, !stg.tensor<[D1/tp, D2], bf16> -> !stg.tensor<[Batch/dp, D2] @tp, bf16>
  %y = stg.reduce_scatter %y_partial on @m [tp] : !stg.tensor<[Batch/dp, D2] @tp, bf16> -> !stg.tensor<[Batch/dp, D2/tp], bf16>
  func.return
}
