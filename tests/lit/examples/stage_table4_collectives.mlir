// stage.md Table IV (examples of matched collective communications), row by row: the
// producer [B/dp, S, H@1/tp] (written [B/dp, S, H] @tp) reshards to each row's
// consumer on the mesh [dp, tp], and stg-match-collectives emits the collectives.
// The mesh sizes are symbolic, so the cost model counts each axis as 8 ranks
// (passes/collectives/cost.py); the rows do not depend on that value.
// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-match-collectives)' | filecheck %s
// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-match-collectives)' | filecheck %s --check-prefix=NORESHARD
// The result verifies and parses again.
// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-match-collectives)' | stagec-opt | filecheck %s

// NORESHARD: builtin.module
// NORESHARD-NOT: stg.reshard

stg.mesh @m [dp, tp]

// Row 1: ReduceScatter -> [B/dp, S, H/tp]. Reducing the tp partial sums and keeping
// each rank its H block is one reduce_scatter: (tp-1)/tp of the local tensor, half of
// what all_reduce + local_slice would send.
// CHECK-LABEL: func.func @row1_reduce_scatter
// CHECK-NEXT:    %r = stg.reduce_scatter %y on @m [tp] : !stg.tensor<[B/dp, S, H] @tp, bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:    func.return %r : !stg.tensor<[B/dp, S, H/tp], bf16>
func.func @row1_reduce_scatter(%y: !stg.tensor<[B/dp, S, H] @tp, bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16> {
  %r = stg.reshard %y on @m : !stg.tensor<[B/dp, S, H] @tp, bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  func.return %r : !stg.tensor<[B/dp, S, H/tp], bf16>
}

// Row 2: AllToAll -> [B, S/dp, H@1/tp]. dp moves from the batch to the sequence; the
// partial sums over tp stay.
// CHECK-LABEL: func.func @row2_all_to_all
// CHECK-NEXT:    %r = stg.all_to_all %y on @m [dp] : !stg.tensor<[B/dp, S, H] @tp, bf16> -> !stg.tensor<[B, S/dp, H] @tp, bf16>
// CHECK-NEXT:    func.return %r : !stg.tensor<[B, S/dp, H] @tp, bf16>
func.func @row2_all_to_all(%y: !stg.tensor<[B/dp, S, H] @tp, bf16>) -> !stg.tensor<[B, S/dp, H] @tp, bf16> {
  %r = stg.reshard %y on @m : !stg.tensor<[B/dp, S, H] @tp, bf16> -> !stg.tensor<[B, S/dp, H] @tp, bf16>
  func.return %r : !stg.tensor<[B, S/dp, H] @tp, bf16>
}

// Row 3: AllGather -> [B, S, H@1/tp].
// CHECK-LABEL: func.func @row3_all_gather
// CHECK-NEXT:    %r = stg.all_gather %y on @m [dp] : !stg.tensor<[B/dp, S, H] @tp, bf16> -> !stg.tensor<[B, S, H] @tp, bf16>
// CHECK-NEXT:    func.return %r : !stg.tensor<[B, S, H] @tp, bf16>
func.func @row3_all_gather(%y: !stg.tensor<[B/dp, S, H] @tp, bf16>) -> !stg.tensor<[B, S, H] @tp, bf16> {
  %r = stg.reshard %y on @m : !stg.tensor<[B/dp, S, H] @tp, bf16> -> !stg.tensor<[B, S, H] @tp, bf16>
  func.return %r : !stg.tensor<[B, S, H] @tp, bf16>
}

// Row 4: AllReduce -> [B/dp, S, H]. (reduce_scatter + all_gather costs the same on a
// ring; one op is preferred.)
// CHECK-LABEL: func.func @row4_all_reduce
// CHECK-NEXT:    %r = stg.all_reduce %y on @m [tp] : !stg.tensor<[B/dp, S, H] @tp, bf16> -> !stg.tensor<[B/dp, S, H], bf16>
// CHECK-NEXT:    func.return %r : !stg.tensor<[B/dp, S, H], bf16>
func.func @row4_all_reduce(%y: !stg.tensor<[B/dp, S, H] @tp, bf16>) -> !stg.tensor<[B/dp, S, H], bf16> {
  %r = stg.reshard %y on @m : !stg.tensor<[B/dp, S, H] @tp, bf16> -> !stg.tensor<[B/dp, S, H], bf16>
  func.return %r : !stg.tensor<[B/dp, S, H], bf16>
}

// Row 5: ReduceScatter + AllToAll -> [B/tp, S, H/dp]. Our collectives act on the minor
// end of a dim's split, so the table's order is not legal here: a reduce_scatter over
// tp first gives [B/dp/tp, S, H] (or [B/dp, S, H/tp]), where dp is the major axis of
// B's split (or tp would be the major axis of H's after moving dp) and no single
// all_to_all can take it where the consumer wants it. The legal two-op order is the
// all_to_all of dp from B to H first, then the reduce_scatter of tp onto B:
// (dp-1)/dp + (tp-1)/tp of the producer's local tensor. Cheaper orders that scatter tp
// onto S on the way (see match_numeric.mlir) are not tried with symbolic sizes: S need
// not divide by tp.
// CHECK-LABEL: func.func @row5_reduce_scatter_all_to_all
// CHECK-NEXT:    %r_exchanged = stg.all_to_all %y on @m [dp] : !stg.tensor<[B/dp, S, H] @tp, bf16> -> !stg.tensor<[B, S, H/dp] @tp, bf16>
// CHECK-NEXT:    %r = stg.reduce_scatter %r_exchanged on @m [tp] : !stg.tensor<[B, S, H/dp] @tp, bf16> -> !stg.tensor<[B/tp, S, H/dp], bf16>
// CHECK-NEXT:    func.return %r : !stg.tensor<[B/tp, S, H/dp], bf16>
func.func @row5_reduce_scatter_all_to_all(%y: !stg.tensor<[B/dp, S, H] @tp, bf16>) -> !stg.tensor<[B/tp, S, H/dp], bf16> {
  %r = stg.reshard %y on @m : !stg.tensor<[B/dp, S, H] @tp, bf16> -> !stg.tensor<[B/tp, S, H/dp], bf16>
  func.return %r : !stg.tensor<[B/tp, S, H/dp], bf16>
}

// Row 6: AllReduce + AllGather -> [B, S, H]. Reducing first works on the dp shard
// (2(tp-1)/tp of it) before the gather multiplies the size; gathering first would
// all_reduce the whole tensor. (reduce_scatter of tp onto B then one all_gather over
// [dp, tp] costs the same on a ring, also in two ops; the fixed order puts
// all_reduce first.)
// CHECK-LABEL: func.func @row6_all_reduce_all_gather
// CHECK-NEXT:    %r_reduced = stg.all_reduce %y on @m [tp] : !stg.tensor<[B/dp, S, H] @tp, bf16> -> !stg.tensor<[B/dp, S, H], bf16>
// CHECK-NEXT:    %r = stg.all_gather %r_reduced on @m [dp] : !stg.tensor<[B/dp, S, H], bf16> -> !stg.tensor<[B, S, H], bf16>
// CHECK-NEXT:    func.return %r : !stg.tensor<[B, S, H], bf16>
func.func @row6_all_reduce_all_gather(%y: !stg.tensor<[B/dp, S, H] @tp, bf16>) -> !stg.tensor<[B, S, H], bf16> {
  %r = stg.reshard %y on @m : !stg.tensor<[B/dp, S, H] @tp, bf16> -> !stg.tensor<[B, S, H], bf16>
  func.return %r : !stg.tensor<[B, S, H], bf16>
}
