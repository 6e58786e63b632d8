// RUN: stagec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// stg.einsum: the equation, the index-letter rule and the derived result.

stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B, H], f32>, %w: !stg.tensor<[H, F], f32>) {
  %y = stg.einsum "bh,hf" %x, %w : !stg.tensor<[B, H], f32>, !stg.tensor<[H, F], f32> -> !stg.tensor<[B, F], f32>
  func.return
}

// CHECK: einsum equation 'bh,hf' needs exactly one '->'

// -----

stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B, H], f32>) {
  %y = stg.einsum "bh->hb->bh" %x : !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: einsum equation 'bh->hb->bh' needs exactly one '->'

// -----

// Subscripts are letters: no spaces, digits or ellipses.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B, H], f32>, %w: !stg.tensor<[H, F], f32>) {
  %y = stg.einsum "bh, hf->bf" %x, %w : !stg.tensor<[B, H], f32>, !stg.tensor<[H, F], f32> -> !stg.tensor<[B, F], f32>
  func.return
}

// CHECK: einsum equation 'bh, hf->bf': subscripts are letters only, not ' hf'

// -----

stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B, H], f32>) {
  %y = stg.einsum "b1->b" %x : !stg.tensor<[B, H], f32> -> !stg.tensor<[B], f32>
  func.return
}

// CHECK: einsum equation 'b1->b': subscripts are letters only, not 'b1'

// -----

// No index repeats within one subscript (no traces or diagonals).
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[H, H], f32>) {
  %y = stg.einsum "hh->h" %x : !stg.tensor<[H, H], f32> -> !stg.tensor<[H], f32>
  func.return
}

// CHECK: einsum equation 'hh->h': 'hh' repeats an index

// -----

stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B, H], f32>) {
  %y = stg.einsum "bh->bb" %x : !stg.tensor<[B, H], f32> -> !stg.tensor<[B, B], f32>
  func.return
}

// CHECK: einsum equation 'bh->bb': 'bb' repeats an index

// -----

// One subscript per operand.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B, H], f32>, %w: !stg.tensor<[H, F], f32>) {
  %y = stg.einsum "bh->b" %x, %w : !stg.tensor<[B, H], f32>, !stg.tensor<[H, F], f32> -> !stg.tensor<[B], f32>
  func.return
}

// CHECK: einsum equation 'bh->b' has 1 operand subscripts but the op has 2 operands

// -----

// A subscript has one index per dim of its operand.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B, S, H], f32>, %w: !stg.tensor<[H, F], f32>) {
  %y = stg.einsum "bh,hf->bf" %x, %w : !stg.tensor<[B, S, H], f32>, !stg.tensor<[H, F], f32> -> !stg.tensor<[B, F], f32>
  func.return
}

// CHECK: einsum equation 'bh,hf->bf': operand #0 has rank 3 but subscript 'bh' has 2 indices

// -----

// Every output index comes from an operand.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B, H], f32>, %w: !stg.tensor<[H, F], f32>) {
  %y = stg.einsum "bh,hf->bg" %x, %w : !stg.tensor<[B, H], f32>, !stg.tensor<[H, F], f32> -> !stg.tensor<[B, G], f32>
  func.return
}

// CHECK: einsum equation 'bh,hf->bg': output index 'g' appears in no operand

// -----

// An index has one size.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B, H], f32>, %w: !stg.tensor<[2*H, F], f32>) {
  %y = stg.einsum "bh,hf->bf" %x, %w : !stg.tensor<[B, H], f32>, !stg.tensor<[2*H, F], f32> -> !stg.tensor<[B, F], f32>
  func.return
}

// CHECK: einsum 'bh,hf->bf': index 'h' has size H in operand #0 but 2*H in operand #1

// -----

// An index has one split among the operands that split it.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B, H/dp], f32>, %w: !stg.tensor<[H/tp, F], f32>) {
  %y = stg.einsum "bh,hf->bf" %x, %w : !stg.tensor<[B, H/dp], f32>, !stg.tensor<[H/tp, F], f32> -> !stg.tensor<[B, F] @dp, f32>
  func.return
}

// CHECK: einsum 'bh,hf->bf': index 'h' is split over [dp] in one operand but over [tp] in operand #1; reshard one of them first

// -----

// The order of the axes is part of the split.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B, H/dp/tp], f32>, %w: !stg.tensor<[H/tp/dp, F], f32>) {
  %y = stg.einsum "bh,hf->bf" %x, %w : !stg.tensor<[B, H/dp/tp], f32>, !stg.tensor<[H/tp/dp, F], f32> -> !stg.tensor<[B, F] @dp*tp, f32>
  func.return
}

// CHECK: einsum 'bh,hf->bf': index 'h' is split over [dp, tp] in one operand but over [tp, dp] in operand #1; reshard one of them first

// -----

// One axis cannot split two indices.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/tp, H], f32>, %w: !stg.tensor<[H, F/tp], f32>) {
  %y = stg.einsum "bh,hf->bf" %x, %w : !stg.tensor<[B/tp, H], f32>, !stg.tensor<[H, F/tp], f32> -> !stg.tensor<[B/tp, F], f32>
  func.return
}

// CHECK: einsum 'bh,hf->bf': mesh axis 'tp' splits both index 'b' and index 'f'

// -----

// A whole operand is sliced locally to another's split, unless it already uses that
// axis: here %x is a partial sum over tp and cannot also be sliced over tp.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B, H] @tp, f32>, %w: !stg.tensor<[H/tp, F], f32>) {
  %y = stg.einsum "bh,hf->bf" %x, %w : !stg.tensor<[B, H] @tp, f32>, !stg.tensor<[H/tp, F], f32> -> !stg.tensor<[B, F] @tp, f32>
  func.return
}

// CHECK: einsum 'bh,hf->bf': operand #0 ([B, H] @tp) would have to be sliced over [tp] for index 'h', but it is already distributed over that axis

// -----

// Only one factor of a product may be a partial sum over an axis.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B, H] @tp, f32>, %w: !stg.tensor<[H, F] @tp, f32>) {
  %y = stg.einsum "bh,hf->bf" %x, %w : !stg.tensor<[B, H] @tp, f32>, !stg.tensor<[H, F] @tp, f32> -> !stg.tensor<[B, F] @tp, f32>
  func.return
}

// CHECK: einsum 'bh,hf->bf': operands #0 and #1 are both partial sums over 'tp'; their product is not a partial sum - all_reduce one first

// -----

// A partial-sum axis cannot also split a kept index.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B, H] @tp, f32>, %w: !stg.tensor<[H, F/tp], f32>) {
  %y = stg.einsum "bh,hf->bf" %x, %w : !stg.tensor<[B, H] @tp, f32>, !stg.tensor<[H, F/tp], f32> -> !stg.tensor<[B, F/tp], f32>
  func.return
}

// CHECK: einsum 'bh,hf->bf': axis 'tp' both splits and sums

// -----

// The declared result must be what the op produces: a split contracted index makes a
// partial sum ...
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, F/tp], bf16>, %w: !stg.tensor<[F/tp, H], bf16>) {
  %y = stg.einsum "bf,fh->bh" %x, %w : !stg.tensor<[B/dp, F/tp], bf16>, !stg.tensor<[F/tp, H], bf16> -> !stg.tensor<[B/dp, H], bf16>
  func.return
}

// CHECK: einsum 'bf,fh->bh': result should be [B/dp, H] @tp, not [B/dp, H]

// -----

// ... a split kept index stays split ...
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], bf16>, %w: !stg.tensor<[H, F/tp], bf16>) {
  %y = stg.einsum "bh,hf->bf" %x, %w : !stg.tensor<[B/dp, H], bf16>, !stg.tensor<[H, F/tp], bf16> -> !stg.tensor<[B/dp, F], bf16>
  func.return
}

// CHECK: einsum 'bh,hf->bf': result should be [B/dp, F/tp], not [B/dp, F]

// -----

// ... with the operands' global sizes, in the output's index order.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], bf16>, %w: !stg.tensor<[H, F/tp], bf16>) {
  %y = stg.einsum "bh,hf->fb" %x, %w : !stg.tensor<[B/dp, H], bf16>, !stg.tensor<[H, F/tp], bf16> -> !stg.tensor<[B/dp, F/tp], bf16>
  func.return
}

// CHECK: einsum 'bh,hf->fb': result should be [F/tp, B/dp], not [B/dp, F/tp]

// -----

// Only device tensors.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.host<[B, H], f32>) {
  %y = stg.einsum "bh->b" %x : !stg.host<[B, H], f32> -> !stg.tensor<[B], f32>
  func.return
}

// CHECK: !stg.host<[B, H], f32> should be of base attribute stg.tensor
