// RUN: stagec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// stg.local_slice's layout rule: only axes the input is duplicated over, appended to
// the minor end of one dim's split; no async form.

// An axis the input already splits is not duplicated: moving it to another dim is an
// all_to_all.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/tp, S], f32>) {
  %y = stg.local_slice %x on @m [tp] : !stg.tensor<[B/tp, S], f32> -> !stg.tensor<[B, S/tp], f32>
  func.return
}

// CHECK: 'stg.local_slice': the input [B/tp, S] is already distributed over [tp]; only an axis the input is duplicated over can be sliced locally

// -----

// Nor is an axis the input is a partial sum over (that is reduce_scatter).
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B, S] @tp, f32>) {
  %y = stg.local_slice %x on @m [tp] : !stg.tensor<[B, S] @tp, f32> -> !stg.tensor<[B, S/tp], f32>
  func.return
}

// CHECK: 'stg.local_slice': the input [B, S] @tp is already distributed over [tp]; only an axis the input is duplicated over can be sliced locally

// -----

// The axes go to the minor end of the split.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, S], f32>) {
  %y = stg.local_slice %x on @m [tp] : !stg.tensor<[B/dp, S], f32> -> !stg.tensor<[B/tp/dp, S], f32>
  func.return
}

// CHECK: 'stg.local_slice' over [tp] must append those axes to the minor end of one dim's split: dim 0 of the result [B/tp/dp, S] should be split over [dp, tp], not [tp, dp]

// -----

// One dim at a time.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B, S], f32>) {
  %y = stg.local_slice %x on @m [dp, tp] : !stg.tensor<[B, S], f32> -> !stg.tensor<[B/dp, S/tp], f32>
  func.return
}

// CHECK: 'stg.local_slice' over [dp, tp] must change the split of exactly one dim, but [B, S] -> [B/dp, S/tp] changes 2

// -----

// Partial sums stay.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B, S] @dp, f32>) {
  %y = stg.local_slice %x on @m [tp] : !stg.tensor<[B, S] @dp, f32> -> !stg.tensor<[B, S/tp], f32>
  func.return
}

// CHECK: 'stg.local_slice': local_slice must keep the partial-sum axes

// -----

// Nothing moves, so there is nothing to wait for.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B, S], f32>) {
  %y = stg.local_slice %x on @m [tp] async : !stg.tensor<[B, S], f32> -> !stg.token<!stg.tensor<[B, S/tp], f32>>
  func.return
}

// CHECK: 'stg.local_slice' moves nothing, so it has no async form
