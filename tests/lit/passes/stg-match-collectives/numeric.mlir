// With numbers for the mesh and the dims (stg.mesh sizes, stg.config bindings) the
// costs are exact, and an intermediate split the consumer and producer do not have
// is tried where the numbers prove it divides.
// RUN: stagec-opt %s --split-input-file --pass-pipeline='builtin.module(stg-match-collectives)' | filecheck %s

// Table IV row 5 on dp = 2, tp = 3, S = 6: scattering tp onto S first shrinks the
// tensor before both all_to_alls. Per rank, as a fraction of the producer's local
// tensor T: reduce_scatter 2/3 T, all_to_all over dp 1/2 of T/3, all_to_all over tp
// 2/3 of T/3: 19/18 T, less than the two-op 1/2 T + 2/3 T = 21/18 T.
// CHECK-LABEL: func.func @row5_dp2_tp3
// CHECK-NEXT:    %r_scattered = stg.reduce_scatter %y on @m [tp] : !stg.tensor<[12/dp, 6, 12] @tp, f32> -> !stg.tensor<[12/dp, 6/tp, 12], f32>
// CHECK-NEXT:    %r_exchanged = stg.all_to_all %r_scattered on @m [dp] : !stg.tensor<[12/dp, 6/tp, 12], f32> -> !stg.tensor<[12, 6/tp, 12/dp], f32>
// CHECK-NEXT:    %r = stg.all_to_all %r_exchanged on @m [tp] : !stg.tensor<[12, 6/tp, 12/dp], f32> -> !stg.tensor<[12/tp, 6, 12/dp], f32>
// CHECK-NEXT:    func.return %r
stg.mesh @m [dp = 2, tp = 3]
func.func @row5_dp2_tp3(%y: !stg.tensor<[12/dp, 6, 12] @tp, f32>) -> !stg.tensor<[12/tp, 6, 12/dp], f32> {
  %r = stg.reshard %y on @m : !stg.tensor<[12/dp, 6, 12] @tp, f32> -> !stg.tensor<[12/tp, 6, 12/dp], f32>
  func.return %r : !stg.tensor<[12/tp, 6, 12/dp], f32>
}

// -----

// The same with S = 4, which tp = 3 does not divide: the two-op order of Table IV.
// CHECK-LABEL: func.func @row5_s_indivisible
// CHECK-NEXT:    %r_exchanged = stg.all_to_all %y on @m [dp] : !stg.tensor<[B/dp, S, H] @tp, f32> -> !stg.tensor<[B, S, H/dp] @tp, f32>
// CHECK-NEXT:    %r = stg.reduce_scatter %r_exchanged on @m [tp] : !stg.tensor<[B, S, H/dp] @tp, f32> -> !stg.tensor<[B/tp, S, H/dp], f32>
// CHECK-NEXT:    func.return %r
builtin.module attributes {stg.config = {B = 12 : i64, S = 4 : i64, H = 12 : i64}} {
  stg.mesh @m [dp = 2, tp = 3]
  func.func @row5_s_indivisible(%y: !stg.tensor<[B/dp, S, H] @tp, f32>) -> !stg.tensor<[B/tp, S, H/dp], f32> {
    %r = stg.reshard %y on @m : !stg.tensor<[B/dp, S, H] @tp, f32> -> !stg.tensor<[B/tp, S, H/dp], f32>
    func.return %r : !stg.tensor<[B/tp, S, H/dp], f32>
  }
}

// -----

// On dp = tp = 2 the three-op order costs exactly the two-op one (1/2 + 1/4 + 1/4 =
// 1/2 + 1/2 of T); fewer ops win.
// CHECK-LABEL: func.func @row5_dp2_tp2
// CHECK-NEXT:    %r_exchanged = stg.all_to_all %y on @m [dp] : !stg.tensor<[B/dp, S, H] @tp, f32> -> !stg.tensor<[B, S, H/dp] @tp, f32>
// CHECK-NEXT:    %r = stg.reduce_scatter %r_exchanged on @m [tp] : !stg.tensor<[B, S, H/dp] @tp, f32> -> !stg.tensor<[B/tp, S, H/dp], f32>
// CHECK-NEXT:    func.return %r
builtin.module attributes {stg.config = {B = 8 : i64, S = 8 : i64, H = 8 : i64}} {
  stg.mesh @m [dp = 2, tp = 2]
  func.func @row5_dp2_tp2(%y: !stg.tensor<[B/dp, S, H] @tp, f32>) -> !stg.tensor<[B/tp, S, H/dp], f32> {
    %r = stg.reshard %y on @m : !stg.tensor<[B/dp, S, H] @tp, f32> -> !stg.tensor<[B/tp, S, H/dp], f32>
    func.return %r : !stg.tensor<[B/tp, S, H/dp], f32>
  }
}

// -----

// Swapping the order of two axes in a split, when H divides: three all_to_alls through
// H, each on a local tensor of the same size T, send 3/4 T + 1/2 T + 1/2 T = 7/4 T,
// less than gathering everything (3 T) and slicing it again.
// CHECK-LABEL: func.func @swap_split_order
// CHECK-NEXT:    %r_exchanged = stg.all_to_all %x on @m [dp, tp] : !stg.tensor<[B/dp/tp, H], f32> -> !stg.tensor<[B, H/dp/tp], f32>
// CHECK-NEXT:    %r_exchanged_1 = stg.all_to_all %r_exchanged on @m [tp] : !stg.tensor<[B, H/dp/tp], f32> -> !stg.tensor<[B/tp, H/dp], f32>
// CHECK-NEXT:    %r = stg.all_to_all %r_exchanged_1 on @m [dp] : !stg.tensor<[B/tp, H/dp], f32> -> !stg.tensor<[B/tp/dp, H], f32>
// CHECK-NEXT:    func.return %r
builtin.module attributes {stg.config = {B = 8 : i64, H = 8 : i64}} {
  stg.mesh @m [dp = 2, tp = 2]
  func.func @swap_split_order(%x: !stg.tensor<[B/dp/tp, H], f32>) -> !stg.tensor<[B/tp/dp, H], f32> {
    %r = stg.reshard %x on @m : !stg.tensor<[B/dp/tp, H], f32> -> !stg.tensor<[B/tp/dp, H], f32>
    func.return %r : !stg.tensor<[B/tp/dp, H], f32>
  }
}
