// RUN: stagec-opt %s | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

stg.mesh @m [dp, pp = 4, tp = 8, cp]

// reshard: any layout change of the same global tensor, before it is matched to
// collectives.
func.func @reshard(%x: !stg.tensor<[B/dp, S, H], bf16>, %p: !stg.tensor<[B, H] @tp, f32>) {
  %r = stg.reshard %x on @m : !stg.tensor<[B/dp, S, H], bf16> -> !stg.tensor<[B, S/cp, H/tp], bf16>
  %u = stg.reshard %p on @m {note} : !stg.tensor<[B, H] @tp, f32> -> !stg.tensor<[B/dp, H], f32>
  func.return
}

// all_gather removes the axes from the minor end of one dim's split, and keeps
// partial sums over other axes.
func.func @all_gather(%x: !stg.tensor<[B/dp, S, H], bf16>, %w: !stg.tensor<[B, 4*H/tp/cp], bf16>, %p: !stg.tensor<[B/dp, H] @tp, f32>) {
  %g = stg.all_gather %x on @m [dp] : !stg.tensor<[B/dp, S, H], bf16> -> !stg.tensor<[B, S, H], bf16>
  %minor = stg.all_gather %w on @m [cp] : !stg.tensor<[B, 4*H/tp/cp], bf16> -> !stg.tensor<[B, 4*H/tp], bf16>
  %both = stg.all_gather %w on @m [tp, cp] : !stg.tensor<[B, 4*H/tp/cp], bf16> -> !stg.tensor<[B, 4*H], bf16>
  %keep = stg.all_gather %p on @m [dp] {note} : !stg.tensor<[B/dp, H] @tp, f32> -> !stg.tensor<[B, H] @tp, f32>
  %ga = stg.all_gather %x on @m [dp] async : !stg.tensor<[B/dp, S, H], bf16> -> !stg.token<!stg.tensor<[B, S, H], bf16>>
  %gw = stg.wait %ga : !stg.token<!stg.tensor<[B, S, H], bf16>>
  func.return
}

// reduce_scatter sums a partial sum over the axes and scatters one dim over them.
func.func @reduce_scatter(%y: !stg.tensor<[B/dp, S, H] @tp, bf16>, %z: !stg.tensor<[B, H] @dp*tp, f32>) {
  %rs = stg.reduce_scatter %y on @m [tp] : !stg.tensor<[B/dp, S, H] @tp, bf16> -> !stg.tensor<[B/dp, S/tp, H], bf16>
  %minor = stg.reduce_scatter %y on @m [tp] : !stg.tensor<[B/dp, S, H] @tp, bf16> -> !stg.tensor<[B/dp/tp, S, H], bf16>
  %two = stg.reduce_scatter %z on @m [dp, tp] : !stg.tensor<[B, H] @dp*tp, f32> -> !stg.tensor<[B/dp/tp, H], f32>
  %one = stg.reduce_scatter %z on @m [tp] : !stg.tensor<[B, H] @dp*tp, f32> -> !stg.tensor<[B, H/tp] @dp, f32>
  %rsa = stg.reduce_scatter %y on @m [tp] async : !stg.tensor<[B/dp, S, H] @tp, bf16> -> !stg.token<!stg.tensor<[B/dp, S/tp, H], bf16>>
  %rsw = stg.wait %rsa : !stg.token<!stg.tensor<[B/dp, S/tp, H], bf16>>
  func.return
}

// all_reduce sums a partial sum over the axes and keeps every split.
func.func @all_reduce(%y: !stg.tensor<[B/dp, S, H] @tp, bf16>, %z: !stg.tensor<[B, H] @dp*tp, f32>) {
  %ar = stg.all_reduce %y on @m [tp] : !stg.tensor<[B/dp, S, H] @tp, bf16> -> !stg.tensor<[B/dp, S, H], bf16>
  %both = stg.all_reduce %z on @m [dp, tp] : !stg.tensor<[B, H] @dp*tp, f32> -> !stg.tensor<[B, H], f32>
  %one = stg.all_reduce %z on @m [dp] : !stg.tensor<[B, H] @dp*tp, f32> -> !stg.tensor<[B, H] @tp, f32>
  %ara = stg.all_reduce %y on @m [tp] async {note} : !stg.tensor<[B/dp, S, H] @tp, bf16> -> !stg.token<!stg.tensor<[B/dp, S, H], bf16>>
  %arw = stg.wait %ara : !stg.token<!stg.tensor<[B/dp, S, H], bf16>>
  func.return
}

// all_to_all moves the axes from the minor end of one dim's split to another's.
func.func @all_to_all(%x: !stg.tensor<[B/dp, S, H], bf16>, %h: !stg.tensor<[B, S/cp, N/tp, D], bf16>) {
  %a = stg.all_to_all %x on @m [dp] : !stg.tensor<[B/dp, S, H], bf16> -> !stg.tensor<[B, S/dp, H], bf16>
  %ulysses = stg.all_to_all %h on @m [cp] : !stg.tensor<[B, S/cp, N/tp, D], bf16> -> !stg.tensor<[B, S, N/tp/cp, D], bf16>
  %aa = stg.all_to_all %x on @m [dp] async : !stg.tensor<[B/dp, S, H], bf16> -> !stg.token<!stg.tensor<[B, S/dp, H], bf16>>
  %aw = stg.wait %aa : !stg.token<!stg.tensor<[B, S/dp, H], bf16>>
  func.return
}

// broadcast keeps the layout; root is a coordinate in the group.
func.func @broadcast(%x: !stg.tensor<[B/dp, S, H], bf16>) {
  %b0 = stg.broadcast %x on @m [tp] root 0 : !stg.tensor<[B/dp, S, H], bf16> -> !stg.tensor<[B/dp, S, H], bf16>
  %b3 = stg.broadcast %x on @m [pp, tp] root 3 {note} : !stg.tensor<[B/dp, S, H], bf16> -> !stg.tensor<[B/dp, S, H], bf16>
  %ba = stg.broadcast %x on @m [tp] root 1 async : !stg.tensor<[B/dp, S, H], bf16> -> !stg.token<!stg.tensor<[B/dp, S, H], bf16>>
  %bw = stg.wait %ba : !stg.token<!stg.tensor<[B/dp, S, H], bf16>>
  func.return
}

// send and recv along one mesh axis to the peer at a coordinate, paired by tag; an
// async send returns a bare token, an async recv a token carrying the tensor.
func.func @p2p(%x: !stg.tensor<[B/dp, S, H], bf16>) {
  stg.send %x to @m[pp = 1] tag 3 : !stg.tensor<[B/dp, S, H], bf16>
  stg.send %x to @m[pp = 3] tag 0 {note} : !stg.tensor<[B/dp, S, H], bf16>
  %st = stg.send %x to @m[pp = 1] tag 4 async : !stg.tensor<[B/dp, S, H], bf16>
  stg.wait %st : !stg.token
  %rv = stg.recv from @m[pp = 0] tag 3 : !stg.tensor<[B/dp, S, H], bf16>
  %rd = stg.recv from @m[dp = 5] tag 7 {note} : !stg.tensor<[B/dp, S, H], bf16>
  %ra = stg.recv from @m[pp = 2] tag 5 async : !stg.token<!stg.tensor<[B/dp, S, H], bf16>>
  %rw = stg.wait %ra : !stg.token<!stg.tensor<[B/dp, S, H], bf16>>
  func.return
}

// CHECK:      builtin.module {
// CHECK-NEXT:   stg.mesh @m [dp, pp = 4, tp = 8, cp]
// CHECK-NEXT:   func.func @reshard(%x: !stg.tensor<[B/dp, S, H], bf16>, %p: !stg.tensor<[B, H] @tp, f32>) {
// CHECK-NEXT:     %r = stg.reshard %x on @m : !stg.tensor<[B/dp, S, H], bf16> -> !stg.tensor<[B, S/cp, H/tp], bf16>
// CHECK-NEXT:     %u = stg.reshard %p on @m {note} : !stg.tensor<[B, H] @tp, f32> -> !stg.tensor<[B/dp, H], f32>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @all_gather(%x: !stg.tensor<[B/dp, S, H], bf16>, %w: !stg.tensor<[B, 4*H/tp/cp], bf16>, %p: !stg.tensor<[B/dp, H] @tp, f32>) {
// CHECK-NEXT:     %g = stg.all_gather %x on @m [dp] : !stg.tensor<[B/dp, S, H], bf16> -> !stg.tensor<[B, S, H], bf16>
// CHECK-NEXT:     %minor = stg.all_gather %w on @m [cp] : !stg.tensor<[B, 4*H/tp/cp], bf16> -> !stg.tensor<[B, 4*H/tp], bf16>
// CHECK-NEXT:     %both = stg.all_gather %w on @m [tp, cp] : !stg.tensor<[B, 4*H/tp/cp], bf16> -> !stg.tensor<[B, 4*H], bf16>
// CHECK-NEXT:     %keep = stg.all_gather %p on @m [dp] {note} : !stg.tensor<[B/dp, H] @tp, f32> -> !stg.tensor<[B, H] @tp, f32>
// CHECK-NEXT:     %ga = stg.all_gather %x on @m [dp] async : !stg.tensor<[B/dp, S, H], bf16> -> !stg.token<!stg.tensor<[B, S, H], bf16>>
// CHECK-NEXT:     %gw = stg.wait %ga : !stg.token<!stg.tensor<[B, S, H], bf16>>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @reduce_scatter(%y: !stg.tensor<[B/dp, S, H] @tp, bf16>, %z: !stg.tensor<[B, H] @dp*tp, f32>) {
// CHECK-NEXT:     %rs = stg.reduce_scatter %y on @m [tp] : !stg.tensor<[B/dp, S, H] @tp, bf16> -> !stg.tensor<[B/dp, S/tp, H], bf16>
// CHECK-NEXT:     %minor = stg.reduce_scatter %y on @m [tp] : !stg.tensor<[B/dp, S, H] @tp, bf16> -> !stg.tensor<[B/dp/tp, S, H], bf16>
// CHECK-NEXT:     %two = stg.reduce_scatter %z on @m [dp, tp] : !stg.tensor<[B, H] @dp*tp, f32> -> !stg.tensor<[B/dp/tp, H], f32>
// CHECK-NEXT:     %one = stg.reduce_scatter %z on @m [tp] : !stg.tensor<[B, H] @dp*tp, f32> -> !stg.tensor<[B, H/tp] @dp, f32>
// CHECK-NEXT:     %rsa = stg.reduce_scatter %y on @m [tp] async : !stg.tensor<[B/dp, S, H] @tp, bf16> -> !stg.token<!stg.tensor<[B/dp, S/tp, H], bf16>>
// CHECK-NEXT:     %rsw = stg.wait %rsa : !stg.token<!stg.tensor<[B/dp, S/tp, H], bf16>>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @all_reduce(%y: !stg.tensor<[B/dp, S, H] @tp, bf16>, %z: !stg.tensor<[B, H] @dp*tp, f32>) {
// CHECK-NEXT:     %ar = stg.all_reduce %y on @m [tp] : !stg.tensor<[B/dp, S, H] @tp, bf16> -> !stg.tensor<[B/dp, S, H], bf16>
// CHECK-NEXT:     %both = stg.all_reduce %z on @m [dp, tp] : !stg.tensor<[B, H] @dp*tp, f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT:     %one = stg.all_reduce %z on @m [dp] : !stg.tensor<[B, H] @dp*tp, f32> -> !stg.tensor<[B, H] @tp, f32>
// CHECK-NEXT:     %ara = stg.all_reduce %y on @m [tp] async {note} : !stg.tensor<[B/dp, S, H] @tp, bf16> -> !stg.token<!stg.tensor<[B/dp, S, H], bf16>>
// CHECK-NEXT:     %arw = stg.wait %ara : !stg.token<!stg.tensor<[B/dp, S, H], bf16>>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @all_to_all(%x: !stg.tensor<[B/dp, S, H], bf16>, %h: !stg.tensor<[B, S/cp, N/tp, D], bf16>) {
// CHECK-NEXT:     %a = stg.all_to_all %x on @m [dp] : !stg.tensor<[B/dp, S, H], bf16> -> !stg.tensor<[B, S/dp, H], bf16>
// CHECK-NEXT:     %ulysses = stg.all_to_all %h on @m [cp] : !stg.tensor<[B, S/cp, N/tp, D], bf16> -> !stg.tensor<[B, S, N/tp/cp, D], bf16>
// CHECK-NEXT:     %aa = stg.all_to_all %x on @m [dp] async : !stg.tensor<[B/dp, S, H], bf16> -> !stg.token<!stg.tensor<[B, S/dp, H], bf16>>
// CHECK-NEXT:     %aw = stg.wait %aa : !stg.token<!stg.tensor<[B, S/dp, H], bf16>>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @broadcast(%x: !stg.tensor<[B/dp, S, H], bf16>) {
// CHECK-NEXT:     %b0 = stg.broadcast %x on @m [tp] root 0 : !stg.tensor<[B/dp, S, H], bf16> -> !stg.tensor<[B/dp, S, H], bf16>
// CHECK-NEXT:     %b3 = stg.broadcast %x on @m [pp, tp] root 3 {note} : !stg.tensor<[B/dp, S, H], bf16> -> !stg.tensor<[B/dp, S, H], bf16>
// CHECK-NEXT:     %ba = stg.broadcast %x on @m [tp] root 1 async : !stg.tensor<[B/dp, S, H], bf16> -> !stg.token<!stg.tensor<[B/dp, S, H], bf16>>
// CHECK-NEXT:     %bw = stg.wait %ba : !stg.token<!stg.tensor<[B/dp, S, H], bf16>>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @p2p(%x: !stg.tensor<[B/dp, S, H], bf16>) {
// CHECK-NEXT:     stg.send %x to @m[pp = 1] tag 3 : !stg.tensor<[B/dp, S, H], bf16>
// CHECK-NEXT:     stg.send %x to @m[pp = 3] tag 0 {note} : !stg.tensor<[B/dp, S, H], bf16>
// CHECK-NEXT:     %st = stg.send %x to @m[pp = 1] tag 4 async : !stg.tensor<[B/dp, S, H], bf16>
// CHECK-NEXT:     stg.wait %st : !stg.token
// CHECK-NEXT:     %rv = stg.recv from @m[pp = 0] tag 3 : !stg.tensor<[B/dp, S, H], bf16>
// CHECK-NEXT:     %rd = stg.recv from @m[dp = 5] tag 7 {note} : !stg.tensor<[B/dp, S, H], bf16>
// CHECK-NEXT:     %ra = stg.recv from @m[pp = 2] tag 5 async : !stg.token<!stg.tensor<[B/dp, S, H], bf16>>
// CHECK-NEXT:     %rw = stg.wait %ra : !stg.token<!stg.tensor<[B/dp, S, H], bf16>>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }

// GENERIC:      "builtin.module"() ({
// GENERIC-NEXT:   "stg.mesh"() <{sym_name = "m", axes = ["dp", "pp", "tp", "cp"], sizes = [#stg.expr<dp>, #stg.expr<4>, #stg.expr<8>, #stg.expr<cp>]}> : () -> ()
// GENERIC-NEXT:   "func.func"() <{sym_name = "reshard", function_type = (!stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[B, H] @tp, f32>) -> ()}> ({
// GENERIC:          %r = "stg.reshard"(%x) <{mesh = @m}> : (!stg.tensor<[B/dp, S, H], bf16>) -> !stg.tensor<[B, S/cp, H/tp], bf16>
// GENERIC:          "func.return"() : () -> ()
// GENERIC:          %g = "stg.all_gather"(%x) <{mesh = @m, axes = ["dp"]}> : (!stg.tensor<[B/dp, S, H], bf16>) -> !stg.tensor<[B, S, H], bf16>
// GENERIC:          %ga = "stg.all_gather"(%x) <{mesh = @m, axes = ["dp"], async}> : (!stg.tensor<[B/dp, S, H], bf16>) -> !stg.token<!stg.tensor<[B, S, H], bf16>>
// GENERIC-NEXT:     %gw = "stg.wait"(%ga) : (!stg.token<!stg.tensor<[B, S, H], bf16>>) -> !stg.tensor<[B, S, H], bf16>
// GENERIC:          %rs = "stg.reduce_scatter"(%y) <{mesh = @m, axes = ["tp"]}> : (!stg.tensor<[B/dp, S, H] @tp, bf16>) -> !stg.tensor<[B/dp, S/tp, H], bf16>
// GENERIC:          %rsa = "stg.reduce_scatter"(%y) <{mesh = @m, axes = ["tp"], async}> : (!stg.tensor<[B/dp, S, H] @tp, bf16>) -> !stg.token<!stg.tensor<[B/dp, S/tp, H], bf16>>
// GENERIC:          %ar = "stg.all_reduce"(%y) <{mesh = @m, axes = ["tp"]}> : (!stg.tensor<[B/dp, S, H] @tp, bf16>) -> !stg.tensor<[B/dp, S, H], bf16>
// GENERIC:          %ara = "stg.all_reduce"(%y) <{mesh = @m, axes = ["tp"], async}> {note} : (!stg.tensor<[B/dp, S, H] @tp, bf16>) -> !stg.token<!stg.tensor<[B/dp, S, H], bf16>>
// GENERIC:          %a = "stg.all_to_all"(%x) <{mesh = @m, axes = ["dp"]}> : (!stg.tensor<[B/dp, S, H], bf16>) -> !stg.tensor<[B, S/dp, H], bf16>
// GENERIC:          %aa = "stg.all_to_all"(%x) <{mesh = @m, axes = ["dp"], async}> : (!stg.tensor<[B/dp, S, H], bf16>) -> !stg.token<!stg.tensor<[B, S/dp, H], bf16>>
// GENERIC:          %b0 = "stg.broadcast"(%x) <{mesh = @m, axes = ["tp"], root = 0 : i64}> : (!stg.tensor<[B/dp, S, H], bf16>) -> !stg.tensor<[B/dp, S, H], bf16>
// GENERIC-NEXT:     %b3 = "stg.broadcast"(%x) <{mesh = @m, axes = ["pp", "tp"], root = 3 : i64}> {note} : (!stg.tensor<[B/dp, S, H], bf16>) -> !stg.tensor<[B/dp, S, H], bf16>
// GENERIC-NEXT:     %ba = "stg.broadcast"(%x) <{mesh = @m, axes = ["tp"], async, root = 1 : i64}> : (!stg.tensor<[B/dp, S, H], bf16>) -> !stg.token<!stg.tensor<[B/dp, S, H], bf16>>
// GENERIC:          "stg.send"(%x) <{mesh = @m, axis = "pp", peer = 1 : i64, tag = 3 : i64}> : (!stg.tensor<[B/dp, S, H], bf16>) -> ()
// GENERIC:          %st = "stg.send"(%x) <{mesh = @m, axis = "pp", peer = 1 : i64, tag = 4 : i64, async}> : (!stg.tensor<[B/dp, S, H], bf16>) -> !stg.token
// GENERIC-NEXT:     "stg.wait"(%st) : (!stg.token) -> ()
// GENERIC-NEXT:     %rv = "stg.recv"() <{mesh = @m, axis = "pp", peer = 0 : i64, tag = 3 : i64}> : () -> !stg.tensor<[B/dp, S, H], bf16>
// GENERIC-NEXT:     %rd = "stg.recv"() <{mesh = @m, axis = "dp", peer = 5 : i64, tag = 7 : i64}> {note} : () -> !stg.tensor<[B/dp, S, H], bf16>
// GENERIC-NEXT:     %ra = "stg.recv"() <{mesh = @m, axis = "pp", peer = 2 : i64, tag = 5 : i64, async}> : () -> !stg.token<!stg.tensor<[B/dp, S, H], bf16>>
// GENERIC-NEXT:     %rw = "stg.wait"(%ra) : (!stg.token<!stg.tensor<[B/dp, S, H], bf16>>) -> !stg.tensor<[B/dp, S, H], bf16>
// GENERIC:      }) : () -> ()
