// RUN: stagec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Communication ops: the async/token rule, the collectives' layout rules, broadcast
// roots and point-to-point peers and tags. (Mesh and axis lookup: invalid_mesh.mlir.)

// An async collective returns a token ...
stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B/dp], f32>) {
  %y = stg.all_gather %x on @m [dp] async : !stg.tensor<[B/dp], f32> -> !stg.tensor<[B], f32>
  func.return
}

// CHECK: 'stg.all_gather': an async op returns a !stg.token, a synchronous one a tensor

// -----

// ... a synchronous one a tensor.
stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B] @tp, f32>) {
  %y = stg.all_reduce %x on @m [tp] : !stg.tensor<[B] @tp, f32> -> !stg.token<!stg.tensor<[B], f32>>
  func.return
}

// CHECK: 'stg.all_reduce': an async op returns a !stg.token, a synchronous one a tensor

// -----

stg.mesh @m [dp, pp = 4, tp]
func.func @f() {
  %y = stg.recv from @m[pp = 0] tag 0 async : !stg.tensor<[B], f32>
  func.return
}

// CHECK: 'stg.recv': an async op returns a !stg.token, a synchronous one a tensor

// -----

// A collective names at least one axis ...
stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B/dp], f32>) {
  %y = stg.all_gather %x on @m [] : !stg.tensor<[B/dp], f32> -> !stg.tensor<[B], f32>
  func.return
}

// CHECK: 'stg.all_gather' needs at least one mesh axis

// -----

// ... each once.
stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B] @tp, f32>) {
  %y = stg.all_reduce %x on @m [tp, tp] : !stg.tensor<[B] @tp, f32> -> !stg.tensor<[B], f32>
  func.return
}

// CHECK: 'stg.all_reduce' names an axis twice: ['tp', 'tp']

// -----

// The result is the same global tensor: same shape ...
stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>) {
  %y = stg.all_gather %x on @m [dp] : !stg.tensor<[B/dp, H], f32> -> !stg.tensor<[B, 2*H], f32>
  func.return
}

// CHECK: 'stg.all_gather': the result must be the same global tensor as the input ([B/dp, H], f32), with another distribution; got [B, 2*H], f32

// -----

// ... same element type.
stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>) {
  %y = stg.all_to_all %x on @m [dp] : !stg.tensor<[B/dp, H], f32> -> !stg.tensor<[B, H/dp], bf16>
  func.return
}

// CHECK: 'stg.all_to_all': the result must be the same global tensor as the input ([B/dp, H], f32), with another distribution; got [B, H/dp], bf16

// -----

stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>) {
  %y = stg.reshard %x on @m : !stg.tensor<[B/dp, H], f32> -> !stg.tensor<[H, B/dp], f32>
  func.return
}

// CHECK: 'stg.reshard': the result must be the same global tensor as the input ([B/dp, H], f32), with another distribution; got [H, B/dp], f32

// -----

// all_gather changes the split of exactly one dim ...
stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>) {
  %y = stg.all_gather %x on @m [dp] : !stg.tensor<[B/dp, H], f32> -> !stg.tensor<[B/dp, H], f32>
  func.return
}

// CHECK: 'stg.all_gather' over [dp] must change the split of exactly one dim, but [B/dp, H] -> [B/dp, H] changes 0

// -----

stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B/dp, H/tp], f32>) {
  %y = stg.all_gather %x on @m [dp] : !stg.tensor<[B/dp, H/tp], f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: 'stg.all_gather' over [dp] must change the split of exactly one dim, but [B/dp, H/tp] -> [B, H] changes 2

// -----

// ... removing the axes from the minor end of its split ...
stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B/dp/tp, H], f32>) {
  %y = stg.all_gather %x on @m [dp] : !stg.tensor<[B/dp/tp, H], f32> -> !stg.tensor<[B/tp, H], f32>
  func.return
}

// CHECK: 'stg.all_gather' over [dp]: dim 0 of [B/dp/tp, H] is split over [dp, tp], whose minor end is not [dp]

// -----

stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>) {
  %y = stg.all_gather %x on @m [tp] : !stg.tensor<[B/dp, H], f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: 'stg.all_gather' over [tp]: dim 0 of [B/dp, H] is split over [dp], whose minor end is not [tp]

// -----

// ... and nothing else.
stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B/dp/tp, H], f32>) {
  %y = stg.all_gather %x on @m [tp] : !stg.tensor<[B/dp/tp, H], f32> -> !stg.tensor<[B/tp, H], f32>
  func.return
}

// CHECK: 'stg.all_gather' over [tp]: dim 0 of the result [B/tp, H] should be split over [dp], not [tp]

// -----

// Gathering a partial sum needs all_reduce.
stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B/dp, H] @tp, f32>) {
  %y = stg.all_gather %x on @m [tp] : !stg.tensor<[B/dp, H] @tp, f32> -> !stg.tensor<[B/dp, H], f32>
  func.return
}

// CHECK: 'stg.all_gather': the input is a partial sum over [tp]; gathering partial sums needs all_reduce, not all_gather

// -----

// all_gather keeps the other partial sums.
stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B/dp, H] @tp, f32>) {
  %y = stg.all_gather %x on @m [dp] : !stg.tensor<[B/dp, H] @tp, f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: 'stg.all_gather': all_gather must keep the partial-sum axes

// -----

// reduce_scatter reduces a partial sum over its axes ...
stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B, H], f32>) {
  %y = stg.reduce_scatter %x on @m [tp] : !stg.tensor<[B, H], f32> -> !stg.tensor<[B/tp, H], f32>
  func.return
}

// CHECK: 'stg.reduce_scatter': the input [B, H] is not a partial sum over [tp], so there is nothing to reduce

// -----

stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B, H] @dp, f32>) {
  %y = stg.reduce_scatter %x on @m [dp, tp] : !stg.tensor<[B, H] @dp, f32> -> !stg.tensor<[B/dp/tp, H], f32>
  func.return
}

// CHECK: 'stg.reduce_scatter': the input [B, H] @dp is not a partial sum over [tp], so there is nothing to reduce

// -----

// ... and only those.
stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B, H] @dp*tp, f32>) {
  %y = stg.reduce_scatter %x on @m [tp] : !stg.tensor<[B, H] @dp*tp, f32> -> !stg.tensor<[B/tp, H], f32>
  func.return
}

// CHECK: 'stg.reduce_scatter': the result must stay partial over exactly [dp], not [none]

// -----

// It scatters exactly one dim over the axes, at the minor end.
stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B, H] @tp, f32>) {
  %y = stg.reduce_scatter %x on @m [tp] : !stg.tensor<[B, H] @tp, f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: 'stg.reduce_scatter' over [tp] must change the split of exactly one dim, but [B, H] @tp -> [B, H] changes 0

// -----

stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B/dp, H] @tp, f32>) {
  %y = stg.reduce_scatter %x on @m [tp] : !stg.tensor<[B/dp, H] @tp, f32> -> !stg.tensor<[B/tp/dp, H], f32>
  func.return
}

// CHECK: 'stg.reduce_scatter' over [tp] must append those axes to the minor end of one dim's split: dim 0 of the result [B/tp/dp, H] should be split over [dp, tp], not [tp, dp]

// -----

// all_reduce reduces a partial sum over its axes ...
stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B, H] @dp, f32>) {
  %y = stg.all_reduce %x on @m [tp] : !stg.tensor<[B, H] @dp, f32> -> !stg.tensor<[B, H] @dp, f32>
  func.return
}

// CHECK: 'stg.all_reduce': the input [B, H] @dp is not a partial sum over [tp], so there is nothing to reduce

// -----

// ... and only those ...
stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B, H] @dp*tp, f32>) {
  %y = stg.all_reduce %x on @m [dp] : !stg.tensor<[B, H] @dp*tp, f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: 'stg.all_reduce': the result must stay partial over exactly [tp], not [none]

// -----

// ... keeping every split.
stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B, H] @tp, f32>) {
  %y = stg.all_reduce %x on @m [tp] : !stg.tensor<[B, H] @tp, f32> -> !stg.tensor<[B/dp, H], f32>
  func.return
}

// CHECK: 'stg.all_reduce': all_reduce must keep every dim's split

// -----

// all_to_all keeps the partial sums ...
stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B/dp, H] @tp, f32>) {
  %y = stg.all_to_all %x on @m [dp] : !stg.tensor<[B/dp, H] @tp, f32> -> !stg.tensor<[B, H/dp], f32>
  func.return
}

// CHECK: 'stg.all_to_all': all_to_all must keep the partial-sum axes

// -----

// ... and moves the axes from the minor end of one dim's split to the minor end of another's.
stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>) {
  %y = stg.all_to_all %x on @m [dp] : !stg.tensor<[B/dp, H], f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: 'stg.all_to_all' over [dp] must move exactly those axes from the minor end of one dim's split to the minor end of another's: [B/dp, H] -> [B, H] does not

// -----

stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B/dp, S, H], f32>) {
  %y = stg.all_to_all %x on @m [dp] : !stg.tensor<[B/dp, S, H], f32> -> !stg.tensor<[B, S/tp, H/dp], f32>
  func.return
}

// CHECK: 'stg.all_to_all' over [dp] must move exactly those axes from the minor end of one dim's split to the minor end of another's: [B/dp, S, H] -> [B, S/tp, H/dp] does not

// -----

stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B/dp/tp, H], f32>) {
  %y = stg.all_to_all %x on @m [dp] : !stg.tensor<[B/dp/tp, H], f32> -> !stg.tensor<[B/tp, H/dp], f32>
  func.return
}

// CHECK: 'stg.all_to_all' over [dp] must move exactly those axes from the minor end of one dim's split to the minor end of another's: [B/dp/tp, H] -> [B/tp, H/dp] does not

// -----

stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B/dp, H/tp], f32>) {
  %y = stg.all_to_all %x on @m [dp] : !stg.tensor<[B/dp, H/tp], f32> -> !stg.tensor<[B, H/dp/tp], f32>
  func.return
}

// CHECK: 'stg.all_to_all' over [dp] must move exactly those axes from the minor end of one dim's split to the minor end of another's: [B/dp, H/tp] -> [B, H/dp/tp] does not

// -----

// broadcast keeps the layout ...
stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>) {
  %y = stg.broadcast %x on @m [tp] root 0 : !stg.tensor<[B/dp, H], f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: 'stg.broadcast': the result must have the input's distribution [B/dp, H], not [B, H]

// -----

stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B, H] @dp, f32>) {
  %y = stg.broadcast %x on @m [tp] root 0 : !stg.tensor<[B, H] @dp, f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: 'stg.broadcast': the result must have the input's distribution [B, H] @dp, not [B, H]

// -----

// ... and its root is a coordinate.
stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B, H], f32>) {
  %y = stg.broadcast %x on @m [tp] root -1 : !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: 'stg.broadcast': root -1 must be a group member: >= 0

// -----

// ... inside the group, when the group's size is known (pp = 4).
stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B, H], f32>) {
  %y = stg.broadcast %x on @m [pp] root 4 : !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: 'stg.broadcast': root 4 must be a group member: >= 0 and < 4, the group size

// -----

// A peer is a coordinate on its axis ...
stg.mesh @m [dp, pp = 4, tp]
func.func @f() {
  %y = stg.recv from @m[pp = 4] tag 0 : !stg.tensor<[B], f32>
  func.return
}

// CHECK: 'stg.recv': peer 4 is outside mesh axis 'pp' of size 4

// -----

stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B], f32>) {
  stg.send %x to @m[pp = -1] tag 0 : !stg.tensor<[B], f32>
  func.return
}

// CHECK: 'stg.send': peer -1 is outside mesh axis 'pp' of size 4

// -----

stg.mesh @m [dp, pp = 4, tp]
func.func @f() {
  %y = stg.recv from @m[dp = -1] tag 0 : !stg.tensor<[B], f32>
  func.return
}

// CHECK: 'stg.recv': peer -1 is outside mesh axis 'dp'

// -----

// ... and tags are not negative.
stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B], f32>) {
  stg.send %x to @m[pp = 1] tag -3 : !stg.tensor<[B], f32>
  func.return
}

// CHECK: 'stg.send': tag must be >= 0 (ASTRA-sim pairs on it)

// -----

// An async send returns a bare token, a synchronous one nothing (generic form).
stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B], f32>) {
  "stg.send"(%x) <{mesh = @m, axis = "pp", peer = 1 : i64, tag = 0 : i64, async}> : (!stg.tensor<[B], f32>) -> ()
  func.return
}

// CHECK: 'stg.send': an async send returns a !stg.token, a synchronous one nothing

// -----

stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B], f32>) {
  %t = "stg.send"(%x) <{mesh = @m, axis = "pp", peer = 1 : i64, tag = 0 : i64}> : (!stg.tensor<[B], f32>) -> !stg.token
  func.return
}

// CHECK: 'stg.send': an async send returns a !stg.token, a synchronous one nothing

// -----

stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.tensor<[B], f32>) {
  %t = "stg.send"(%x) <{mesh = @m, axis = "pp", peer = 1 : i64, tag = 0 : i64, async}> : (!stg.tensor<[B], f32>) -> !stg.token<!stg.tensor<[B], f32>>
  func.return
}

// CHECK: 'stg.send': its token carries no value

// -----

// Collectives take device tensors.
stg.mesh @m [dp, pp = 4, tp]
func.func @f(%x: !stg.host<[B/dp], f32>) {
  %y = stg.all_gather %x on @m [dp] : !stg.host<[B/dp], f32> -> !stg.tensor<[B], f32>
  func.return
}

// CHECK: !stg.host<[B/dp], f32> should be of base attribute stg.tensor
