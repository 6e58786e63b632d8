// stg-match-collectives, one behaviour per case: several axes per dim (their major/minor
// order matters), partial sums over several axes, axes moving between dims, axes on one
// side only, free local slices, no-op reshards, names of intermediate values.
// RUN: stagec-opt %s --split-input-file --pass-pipeline='builtin.module(stg-match-collectives)' | filecheck %s
// RUN: stagec-opt %s --split-input-file --pass-pipeline='builtin.module(stg-match-collectives)' | filecheck %s --check-prefix=NORESHARD

// NORESHARD-NOT: stg.reshard

// Two axes leave a dim in one all_gather, listed major to minor as the split lists them
// (one op over dp*tp ranks costs what two would on a ring; fewer ops win).
// CHECK-LABEL: func.func @gather_two_axes
// CHECK-NEXT:    %r = stg.all_gather %x on @m [dp, tp] : !stg.tensor<[B/dp/tp, H], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT:    func.return %r
stg.mesh @m [dp, tp]
func.func @gather_two_axes(%x: !stg.tensor<[B/dp/tp, H], f32>) -> !stg.tensor<[B, H], f32> {
  %r = stg.reshard %x on @m : !stg.tensor<[B/dp/tp, H], f32> -> !stg.tensor<[B, H], f32>
  func.return %r : !stg.tensor<[B, H], f32>
}

// -----

// Only the minor axis leaves.
// CHECK-LABEL: func.func @gather_minor_axis
// CHECK-NEXT:    %r = stg.all_gather %x on @m [tp] : !stg.tensor<[B/dp/tp, H], f32> -> !stg.tensor<[B/dp, H], f32>
// CHECK-NEXT:    func.return %r
stg.mesh @m [dp, tp]
func.func @gather_minor_axis(%x: !stg.tensor<[B/dp/tp, H], f32>) -> !stg.tensor<[B/dp, H], f32> {
  %r = stg.reshard %x on @m : !stg.tensor<[B/dp/tp, H], f32> -> !stg.tensor<[B/dp, H], f32>
  func.return %r : !stg.tensor<[B/dp, H], f32>
}

// -----

// The major axis cannot leave alone: gather both, then each rank keeps its tp block.
// CHECK-LABEL: func.func @gather_major_axis
// CHECK-NEXT:    %r_gathered = stg.all_gather %x on @m [dp, tp] : !stg.tensor<[B/dp/tp, H], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT:    %r = stg.local_slice %r_gathered on @m [tp] : !stg.tensor<[B, H], f32> -> !stg.tensor<[B/tp, H], f32>
// CHECK-NEXT:    func.return %r
stg.mesh @m [dp, tp]
func.func @gather_major_axis(%x: !stg.tensor<[B/dp/tp, H], f32>) -> !stg.tensor<[B/tp, H], f32> {
  %r = stg.reshard %x on @m : !stg.tensor<[B/dp/tp, H], f32> -> !stg.tensor<[B/tp, H], f32>
  func.return %r : !stg.tensor<[B/tp, H], f32>
}

// -----

// Swapping the order of two axes in a split: with symbolic sizes H need not divide by
// dp or tp, so the axes do not pass through H; gather and slice in the new order.
// CHECK-LABEL: func.func @swap_split_order
// CHECK-NEXT:    %r_gathered = stg.all_gather %x on @m [dp, tp] : !stg.tensor<[B/dp/tp, H], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT:    %r = stg.local_slice %r_gathered on @m [tp, dp] : !stg.tensor<[B, H], f32> -> !stg.tensor<[B/tp/dp, H], f32>
// CHECK-NEXT:    func.return %r
stg.mesh @m [dp, tp]
func.func @swap_split_order(%x: !stg.tensor<[B/dp/tp, H], f32>) -> !stg.tensor<[B/tp/dp, H], f32> {
  %r = stg.reshard %x on @m : !stg.tensor<[B/dp/tp, H], f32> -> !stg.tensor<[B/tp/dp, H], f32>
  func.return %r : !stg.tensor<[B/tp/dp, H], f32>
}

// -----

// Partial sums over two axes: one all_reduce over both; the axes in mesh order.
// CHECK-LABEL: func.func @reduce_two_axes
// CHECK-NEXT:    %r = stg.all_reduce %x on @m [dp, tp] : !stg.tensor<[B, H] @dp*tp, f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT:    func.return %r
stg.mesh @m [dp, tp]
func.func @reduce_two_axes(%x: !stg.tensor<[B, H] @dp*tp, f32>) -> !stg.tensor<[B, H], f32> {
  %r = stg.reshard %x on @m : !stg.tensor<[B, H] @dp*tp, f32> -> !stg.tensor<[B, H], f32>
  func.return %r : !stg.tensor<[B, H], f32>
}

// -----

// ... one reduce_scatter over both, in the order the consumer splits the dim ...
// CHECK-LABEL: func.func @reduce_scatter_two_axes
// CHECK-NEXT:    %r = stg.reduce_scatter %x on @m [tp, dp] : !stg.tensor<[B, H] @dp*tp, f32> -> !stg.tensor<[B/tp/dp, H], f32>
// CHECK-NEXT:    func.return %r
stg.mesh @m [dp, tp]
func.func @reduce_scatter_two_axes(%x: !stg.tensor<[B, H] @dp*tp, f32>) -> !stg.tensor<[B/tp/dp, H], f32> {
  %r = stg.reshard %x on @m : !stg.tensor<[B, H] @dp*tp, f32> -> !stg.tensor<[B/tp/dp, H], f32>
  func.return %r : !stg.tensor<[B/tp/dp, H], f32>
}

// -----

// ... a partial sum the consumer keeps stays (reduce dp only) ...
// CHECK-LABEL: func.func @reduce_one_of_two_axes
// CHECK-NEXT:    %r = stg.all_reduce %x on @m [dp] : !stg.tensor<[B, H] @dp*tp, f32> -> !stg.tensor<[B, H] @tp, f32>
// CHECK-NEXT:    func.return %r
stg.mesh @m [dp, tp]
func.func @reduce_one_of_two_axes(%x: !stg.tensor<[B, H] @dp*tp, f32>) -> !stg.tensor<[B, H] @tp, f32> {
  %r = stg.reshard %x on @m : !stg.tensor<[B, H] @dp*tp, f32> -> !stg.tensor<[B, H] @tp, f32>
  func.return %r : !stg.tensor<[B, H] @tp, f32>
}

// -----

// ... and onto two dims, one reduce_scatter each. Both orders send 1 - 1/(dp*tp) of
// the tensor on a ring; the fixed order takes dim 0 first.
// CHECK-LABEL: func.func @reduce_scatter_two_dims
// CHECK-NEXT:    %r_scattered = stg.reduce_scatter %x on @m [dp] : !stg.tensor<[B, H] @dp*tp, f32> -> !stg.tensor<[B/dp, H] @tp, f32>
// CHECK-NEXT:    %r = stg.reduce_scatter %r_scattered on @m [tp] : !stg.tensor<[B/dp, H] @tp, f32> -> !stg.tensor<[B/dp, H/tp], f32>
// CHECK-NEXT:    func.return %r
stg.mesh @m [dp, tp]
func.func @reduce_scatter_two_dims(%x: !stg.tensor<[B, H] @dp*tp, f32>) -> !stg.tensor<[B/dp, H/tp], f32> {
  %r = stg.reshard %x on @m : !stg.tensor<[B, H] @dp*tp, f32> -> !stg.tensor<[B/dp, H/tp], f32>
  func.return %r : !stg.tensor<[B/dp, H/tp], f32>
}

// -----

// An axis moving between dims (Ulysses: sequence-parallel cp becomes head-parallel,
// minor to tp) is one all_to_all.
// CHECK-LABEL: func.func @axis_moves_between_dims
// CHECK-NEXT:    %r = stg.all_to_all %q on @m [cp] : !stg.tensor<[B, S/cp, N/tp, D], bf16> -> !stg.tensor<[B, S, N/tp/cp, D], bf16>
// CHECK-NEXT:    func.return %r
stg.mesh @m [cp, tp]
func.func @axis_moves_between_dims(%q: !stg.tensor<[B, S/cp, N/tp, D], bf16>) -> !stg.tensor<[B, S, N/tp/cp, D], bf16> {
  %r = stg.reshard %q on @m : !stg.tensor<[B, S/cp, N/tp, D], bf16> -> !stg.tensor<[B, S, N/tp/cp, D], bf16>
  func.return %r : !stg.tensor<[B, S, N/tp/cp, D], bf16>
}

// -----

// Two axes moving together are one all_to_all over both.
// CHECK-LABEL: func.func @two_axes_move_together
// CHECK-NEXT:    %r = stg.all_to_all %x on @m [dp, tp] : !stg.tensor<[B/dp/tp, S], f32> -> !stg.tensor<[B, S/dp/tp], f32>
// CHECK-NEXT:    func.return %r
stg.mesh @m [dp, tp]
func.func @two_axes_move_together(%x: !stg.tensor<[B/dp/tp, S], f32>) -> !stg.tensor<[B, S/dp/tp], f32> {
  %r = stg.reshard %x on @m : !stg.tensor<[B/dp/tp, S], f32> -> !stg.tensor<[B, S/dp/tp], f32>
  func.return %r : !stg.tensor<[B, S/dp/tp], f32>
}

// -----

// Duplicated -> Partition needs no communication: local slices, one per dim.
// CHECK-LABEL: func.func @duplicated_to_split
// CHECK-NEXT:    %r_sliced = stg.local_slice %x on @m [dp] : !stg.tensor<[B, S, H], bf16> -> !stg.tensor<[B/dp, S, H], bf16>
// CHECK-NEXT:    %r = stg.local_slice %r_sliced on @m [tp] : !stg.tensor<[B/dp, S, H], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:    func.return %r
stg.mesh @m [dp, tp]
func.func @duplicated_to_split(%x: !stg.tensor<[B, S, H], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16> {
  %r = stg.reshard %x on @m : !stg.tensor<[B, S, H], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  func.return %r : !stg.tensor<[B/dp, S, H/tp], bf16>
}

// -----

// Axes on one side only: sp splits the producer, tp the consumer. Slicing first is
// free and makes the all_gather move 1/tp of what it would after.
// CHECK-LABEL: func.func @axes_on_one_side
// CHECK-NEXT:    %r_sliced = stg.local_slice %x on @m [tp] : !stg.tensor<[B/sp, H], f32> -> !stg.tensor<[B/sp, H/tp], f32>
// CHECK-NEXT:    %r = stg.all_gather %r_sliced on @m [sp] : !stg.tensor<[B/sp, H/tp], f32> -> !stg.tensor<[B, H/tp], f32>
// CHECK-NEXT:    func.return %r
stg.mesh @m [sp, tp]
func.func @axes_on_one_side(%x: !stg.tensor<[B/sp, H], f32>) -> !stg.tensor<[B, H/tp], f32> {
  %r = stg.reshard %x on @m : !stg.tensor<[B/sp, H], f32> -> !stg.tensor<[B, H/tp], f32>
  func.return %r : !stg.tensor<[B, H/tp], f32>
}

// -----

// A partial sum is reduced where the consumer splits it, after the free slice of the
// axis the producer is duplicated over (stage.md Fig. 5's mismatch, with sp added).
// CHECK-LABEL: func.func @slice_then_reduce_scatter
// CHECK-NEXT:    %r_sliced = stg.local_slice %x on @m [sp] : !stg.tensor<[S, H] @tp, f32> -> !stg.tensor<[S/sp, H] @tp, f32>
// CHECK-NEXT:    %r = stg.reduce_scatter %r_sliced on @m [tp] : !stg.tensor<[S/sp, H] @tp, f32> -> !stg.tensor<[S/sp, H/tp], f32>
// CHECK-NEXT:    func.return %r
stg.mesh @m [sp, tp]
func.func @slice_then_reduce_scatter(%x: !stg.tensor<[S, H] @tp, f32>) -> !stg.tensor<[S/sp, H/tp], f32> {
  %r = stg.reshard %x on @m : !stg.tensor<[S, H] @tp, f32> -> !stg.tensor<[S/sp, H/tp], f32>
  func.return %r : !stg.tensor<[S/sp, H/tp], f32>
}

// -----

// A reshard to the same layout just disappears; its users take its input.
// CHECK-LABEL: func.func @no_op
// CHECK-NEXT:    %y = stg.elementwise mul %x, %w : !stg.tensor<[B/dp, H] @tp, f32>, !stg.tensor<[B/dp, H], f32> -> !stg.tensor<[B/dp, H] @tp, f32>
// CHECK-NEXT:    func.return %y
stg.mesh @m [dp, tp]
func.func @no_op(%x: !stg.tensor<[B/dp, H] @tp, f32>, %w: !stg.tensor<[B/dp, H], f32>) -> !stg.tensor<[B/dp, H] @tp, f32> {
  %r = stg.reshard %x on @m : !stg.tensor<[B/dp, H] @tp, f32> -> !stg.tensor<[B/dp, H] @tp, f32>
  %y = stg.elementwise mul %r, %w : !stg.tensor<[B/dp, H] @tp, f32>, !stg.tensor<[B/dp, H], f32> -> !stg.tensor<[B/dp, H] @tp, f32>
  func.return %y : !stg.tensor<[B/dp, H] @tp, f32>
}

// -----

// Intermediate values are named after the reshard and what made them.
// CHECK-LABEL: func.func @names
// CHECK-NEXT:    %out_sliced = stg.local_slice %in on @m [sp] : !stg.tensor<[B/dp, S, H] @tp, f32> -> !stg.tensor<[B/dp, S/sp, H] @tp, f32>
// CHECK-NEXT:    %out_reduced = stg.all_reduce %out_sliced on @m [tp] : !stg.tensor<[B/dp, S/sp, H] @tp, f32> -> !stg.tensor<[B/dp, S/sp, H], f32>
// CHECK-NEXT:    %out = stg.all_gather %out_reduced on @m [dp] : !stg.tensor<[B/dp, S/sp, H], f32> -> !stg.tensor<[B, S/sp, H], f32>
// CHECK-NEXT:    func.return %out
stg.mesh @m [dp, sp, tp]
func.func @names(%in: !stg.tensor<[B/dp, S, H] @tp, f32>) -> !stg.tensor<[B, S/sp, H], f32> {
  %out = stg.reshard %in on @m : !stg.tensor<[B/dp, S, H] @tp, f32> -> !stg.tensor<[B, S/sp, H], f32>
  func.return %out : !stg.tensor<[B, S/sp, H], f32>
}
