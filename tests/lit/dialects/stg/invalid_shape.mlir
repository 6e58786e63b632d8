// RUN: stagec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Shape ops: reshape, transpose, concat and split.

// reshape keeps the number of elements.
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, S, H], f32>) {
  %y = stg.reshape %x : !stg.tensor<[B, S, H], f32> -> !stg.tensor<[B, 2*S, H], f32>
  func.return
}

// CHECK: reshape: [B, S, H] has B*H*S elements but [B, 2*S, H] has 2*B*H*S

// -----

// Dims regroup into runs of equal products; dims left over on one side cannot (their
// product is 1 here only because N*(1/N) = 1).
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, N, (1/N)], f32>) {
  %y = stg.reshape %x : !stg.tensor<[B, N, (1/N)], f32> -> !stg.tensor<[B], f32>
  func.return
}

// CHECK: reshape: cannot match the dims of [B, N, (1/N)] with [B] as runs of equal products

// -----

// Only the leading dim of a merged run may be split ...
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, S/sp, H], f32>) {
  %y = stg.reshape %x : !stg.tensor<[B, S/sp, H], f32> -> !stg.tensor<[B*S, H], f32>
  func.return
}

// CHECK: reshape: only the leading dim of a merged run may be split ([B, S/sp, H] -> [B*S, H])

// -----

// ... and the split moves to the leading dim of the other side.
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B/dp, S, H], f32>) {
  %y = stg.reshape %x : !stg.tensor<[B/dp, S, H], f32> -> !stg.tensor<[B, S, N, (H/N)/dp], f32>
  func.return
}

// CHECK: reshape: result should be [B/dp, S, N, (H/N)], not [B, S, N, (H/N)/dp]

// -----

// Partial sums pass through a reshape.
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, H] @tp, f32>) {
  %y = stg.reshape %x : !stg.tensor<[B, H] @tp, f32> -> !stg.tensor<[B, N, (H/N)], f32>
  func.return
}

// CHECK: reshape: result should be [B, N, (H/N)] @tp, not [B, N, (H/N)]

// -----

// transpose takes a permutation of the dims.
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, S, H], f32>) {
  %y = stg.transpose %x perm [0 : i64, 2 : i64] : !stg.tensor<[B, S, H], f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: transpose: perm [0, 2] is not a permutation of 3 dims

// -----

stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, H], f32>) {
  %y = stg.transpose %x perm [1 : i64, 1 : i64] : !stg.tensor<[B, H], f32> -> !stg.tensor<[H, H], f32>
  func.return
}

// CHECK: transpose: perm [1, 1] is not a permutation of 2 dims

// -----

// Splits follow their dims.
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>) {
  %y = stg.transpose %x perm [1 : i64, 0 : i64] : !stg.tensor<[B/dp, H], f32> -> !stg.tensor<[H/dp, B], f32>
  func.return
}

// CHECK: transpose: result should be [H, B/dp], not [H/dp, B]

// -----

// concat needs a dim that exists ...
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, H], f32>) {
  %y = stg.concat %x, %x dim 2 : !stg.tensor<[B, H], f32>, !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: concat: dims [2] must be distinct and in [0, 2)

// -----

// ... and that no axis splits.
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, H/tp], f32>) {
  %y = stg.concat %x, %x dim 1 : !stg.tensor<[B, H/tp], f32>, !stg.tensor<[B, H/tp], f32> -> !stg.tensor<[B, 2*H/tp], f32>
  func.return
}

// CHECK: concat: dim 1 of [B, 2*H/tp] must not be split; all_gather it first

// -----

// Pieces have the result's rank ...
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, H], f32>, %v: !stg.tensor<[B], f32>) {
  %y = stg.concat %x, %v dim 0 : !stg.tensor<[B, H], f32>, !stg.tensor<[B], f32> -> !stg.tensor<[2*B, H], f32>
  func.return
}

// CHECK: concat: every piece must have the rank and element type of [2*B, H]

// -----

// ... and element type.
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, H], f32>, %z: !stg.tensor<[B, H], bf16>) {
  %y = stg.concat %x, %z dim 0 : !stg.tensor<[B, H], f32>, !stg.tensor<[B, H], bf16> -> !stg.tensor<[2*B, H], f32>
  func.return
}

// CHECK: concat: every piece must have the rank and element type of [2*B, H]

// -----

// Pieces match the result in every other dim ...
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, H], f32>, %z: !stg.tensor<[B, 2*H], f32>) {
  %y = stg.concat %x, %z dim 0 : !stg.tensor<[B, H], f32>, !stg.tensor<[B, 2*H], f32> -> !stg.tensor<[2*B, H], f32>
  func.return
}

// CHECK: concat: piece [B, 2*H] must match [2*B, H] in every dim but 0

// -----

// ... in split ...
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, H/tp], f32>) {
  %y = stg.concat %x, %x dim 0 : !stg.tensor<[B, H/tp], f32>, !stg.tensor<[B, H/tp], f32> -> !stg.tensor<[2*B, H], f32>
  func.return
}

// CHECK: concat: piece [B, H/tp] must match [2*B, H] in every dim but 0

// -----

// ... and in partial sums.
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, H] @dp, f32>) {
  %y = stg.concat %x, %x dim 0 : !stg.tensor<[B, H] @dp, f32>, !stg.tensor<[B, H] @dp, f32> -> !stg.tensor<[2*B, H], f32>
  func.return
}

// CHECK: concat: piece [B, H] @dp must match [2*B, H] in every dim but 0

// -----

// The pieces add up to the whole.
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, H], f32>) {
  %y = stg.concat %x, %x dim 1 : !stg.tensor<[B, H], f32>, !stg.tensor<[B, H], f32> -> !stg.tensor<[B, 3*H], f32>
  func.return
}

// CHECK: concat: the pieces' dim 1 adds up to 2*H, not 3*H

// -----

// concat needs an operand.
stg.mesh @m [dp, tp, sp]
func.func @f() {
  %y = "stg.concat"() <{dim = 0 : i64}> : () -> !stg.tensor<[B], f32>
  func.return
}

// CHECK: concat: needs at least one operand

// -----

// split: the same rules, the input being the whole.
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, H/tp], f32>) {
  %a, %b = stg.split %x dim 1 : !stg.tensor<[B, H/tp], f32> -> !stg.tensor<[B, (H/2)/tp], f32>, !stg.tensor<[B, (H/2)/tp], f32>
  func.return
}

// CHECK: split: dim 1 of [B, H/tp] must not be split; all_gather it first

// -----

stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, H], f32>) {
  %a, %b = stg.split %x dim 1 : !stg.tensor<[B, H], f32> -> !stg.tensor<[B, (H - 1)], f32>, !stg.tensor<[B, 2], f32>
  func.return
}

// CHECK: split: the pieces' dim 1 adds up to H + 1, not H

// -----

stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>) {
  %a, %b = stg.split %x dim 1 : !stg.tensor<[B/dp, H], f32> -> !stg.tensor<[B/dp, (H/2)], f32>, !stg.tensor<[B, (H/2)], f32>
  func.return
}

// CHECK: split: piece [B, (H/2)] must match [B/dp, H] in every dim but 1

// -----

stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, H], f32>) {
  %a = stg.split %x dim -1 : !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: split: dims [-1] must be distinct and in [0, 2)

// -----

// split needs a result.
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B], f32>) {
  "stg.split"(%x) <{dim = 0 : i64}> : (!stg.tensor<[B], f32>) -> ()
  func.return
}

// CHECK: split: needs at least one result
