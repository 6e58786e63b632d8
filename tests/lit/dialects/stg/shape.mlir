// RUN: stagec-opt %s | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

stg.mesh @m [dp, tp, sp]

// reshape: dims regroup into runs of equal products; only a run's leading dim may be
// split, and the split moves to the leading dim of the other side.
func.func @reshape(%x: !stg.tensor<[B/dp, S, H], bf16>, %p: !stg.tensor<[B/dp, S/sp, H] @tp, bf16>, %f: !stg.tensor<[B, S], i64>) {
  %heads = stg.reshape %x : !stg.tensor<[B/dp, S, H], bf16> -> !stg.tensor<[B/dp, S, N, (H/N)], bf16>
  %merged = stg.reshape %x : !stg.tensor<[B/dp, S, H], bf16> -> !stg.tensor<[B*S/dp, H], bf16>
  %back = stg.reshape %merged : !stg.tensor<[B*S/dp, H], bf16> -> !stg.tensor<[B/dp, S, H], bf16>
  %partial = stg.reshape %p : !stg.tensor<[B/dp, S/sp, H] @tp, bf16> -> !stg.tensor<[B/dp, S/sp, 2, (H/2)] @tp, bf16>
  %flat = stg.reshape %f {note} : !stg.tensor<[B, S], i64> -> !stg.tensor<[B*S], i64>
  func.return
}

// transpose: result dim i is input dim perm[i]; splits and partial sums follow.
func.func @transpose(%x: !stg.tensor<[B/dp, S/sp, N/tp, D], bf16>, %p: !stg.tensor<[B, H] @tp, f32>) {
  %t = stg.transpose %x perm [0 : i64, 2 : i64, 1 : i64, 3 : i64] : !stg.tensor<[B/dp, S/sp, N/tp, D], bf16> -> !stg.tensor<[B/dp, N/tp, S/sp, D], bf16>
  %pt = stg.transpose %p perm [1 : i64, 0 : i64] : !stg.tensor<[B, H] @tp, f32> -> !stg.tensor<[H, B] @tp, f32>
  %id = stg.transpose %p perm [0 : i64, 1 : i64] : !stg.tensor<[B, H] @tp, f32> -> !stg.tensor<[B, H] @tp, f32>
  func.return
}

// concat and split along a dim that no axis splits; the pieces' sizes add up.
func.func @concat_split(%q: !stg.tensor<[B/dp, S, H], bf16>, %k: !stg.tensor<[B/dp, S, KV], bf16>, %p: !stg.tensor<[T, 2] @sp, f32>) {
  %qkv = stg.concat %q, %k, %k dim 2 : !stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[B/dp, S, KV], bf16>, !stg.tensor<[B/dp, S, KV], bf16> -> !stg.tensor<[B/dp, S, (H + 2*KV)], bf16>
  %one = stg.concat %q dim 1 : !stg.tensor<[B/dp, S, H], bf16> -> !stg.tensor<[B/dp, S, H], bf16>
  %pc = stg.concat %p, %p dim 1 {note} : !stg.tensor<[T, 2] @sp, f32>, !stg.tensor<[T, 2] @sp, f32> -> !stg.tensor<[T, 4] @sp, f32>
  %q2, %k2, %v2 = stg.split %qkv dim 2 : !stg.tensor<[B/dp, S, (H + 2*KV)], bf16> -> !stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[B/dp, S, KV], bf16>, !stg.tensor<[B/dp, S, KV], bf16>
  %s0, %s1 = stg.split %q dim 1 : !stg.tensor<[B/dp, S, H], bf16> -> !stg.tensor<[B/dp, (S - 1), H], bf16>, !stg.tensor<[B/dp, 1, H], bf16>
  %whole = stg.split %p dim 0 : !stg.tensor<[T, 2] @sp, f32> -> !stg.tensor<[T, 2] @sp, f32>
  func.return
}

// CHECK:      builtin.module {
// CHECK-NEXT:   stg.mesh @m [dp, tp, sp]
// CHECK-NEXT:   func.func @reshape(%x: !stg.tensor<[B/dp, S, H], bf16>, %p: !stg.tensor<[B/dp, S/sp, H] @tp, bf16>, %f: !stg.tensor<[B, S], i64>) {
// CHECK-NEXT:     %heads = stg.reshape %x : !stg.tensor<[B/dp, S, H], bf16> -> !stg.tensor<[B/dp, S, N, (H/N)], bf16>
// CHECK-NEXT:     %merged = stg.reshape %x : !stg.tensor<[B/dp, S, H], bf16> -> !stg.tensor<[B*S/dp, H], bf16>
// CHECK-NEXT:     %back = stg.reshape %merged : !stg.tensor<[B*S/dp, H], bf16> -> !stg.tensor<[B/dp, S, H], bf16>
// CHECK-NEXT:     %partial = stg.reshape %p : !stg.tensor<[B/dp, S/sp, H] @tp, bf16> -> !stg.tensor<[B/dp, S/sp, 2, (H/2)] @tp, bf16>
// CHECK-NEXT:     %flat = stg.reshape %f {note} : !stg.tensor<[B, S], i64> -> !stg.tensor<[B*S], i64>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @transpose(%x: !stg.tensor<[B/dp, S/sp, N/tp, D], bf16>, %p: !stg.tensor<[B, H] @tp, f32>) {
// CHECK-NEXT:     %t = stg.transpose %x perm [0 : i64, 2 : i64, 1 : i64, 3 : i64] : !stg.tensor<[B/dp, S/sp, N/tp, D], bf16> -> !stg.tensor<[B/dp, N/tp, S/sp, D], bf16>
// CHECK-NEXT:     %pt = stg.transpose %p perm [1 : i64, 0 : i64] : !stg.tensor<[B, H] @tp, f32> -> !stg.tensor<[H, B] @tp, f32>
// CHECK-NEXT:     %id = stg.transpose %p perm [0 : i64, 1 : i64] : !stg.tensor<[B, H] @tp, f32> -> !stg.tensor<[B, H] @tp, f32>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @concat_split(%q: !stg.tensor<[B/dp, S, H], bf16>, %k: !stg.tensor<[B/dp, S, KV], bf16>, %p: !stg.tensor<[T, 2] @sp, f32>) {
// CHECK-NEXT:     %qkv = stg.concat %q, %k, %k dim 2 : !stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[B/dp, S, KV], bf16>, !stg.tensor<[B/dp, S, KV], bf16> -> !stg.tensor<[B/dp, S, (H + 2*KV)], bf16>
// CHECK-NEXT:     %one = stg.concat %q dim 1 : !stg.tensor<[B/dp, S, H], bf16> -> !stg.tensor<[B/dp, S, H], bf16>
// CHECK-NEXT:     %pc = stg.concat %p, %p dim 1 {note} : !stg.tensor<[T, 2] @sp, f32>, !stg.tensor<[T, 2] @sp, f32> -> !stg.tensor<[T, 4] @sp, f32>
// CHECK-NEXT:     %q2, %k2, %v2 = stg.split %qkv dim 2 : !stg.tensor<[B/dp, S, (H + 2*KV)], bf16> -> !stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[B/dp, S, KV], bf16>, !stg.tensor<[B/dp, S, KV], bf16>
// CHECK-NEXT:     %s0, %s1 = stg.split %q dim 1 : !stg.tensor<[B/dp, S, H], bf16> -> !stg.tensor<[B/dp, (S - 1), H], bf16>, !stg.tensor<[B/dp, 1, H], bf16>
// CHECK-NEXT:     %whole = stg.split %p dim 0 : !stg.tensor<[T, 2] @sp, f32> -> !stg.tensor<[T, 2] @sp, f32>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }

// GENERIC:      "builtin.module"() ({
// GENERIC-NEXT:   "stg.mesh"() <{sym_name = "m", axes = ["dp", "tp", "sp"], sizes = [#stg.expr<dp>, #stg.expr<tp>, #stg.expr<sp>]}> : () -> ()
// GENERIC-NEXT:   "func.func"() <{sym_name = "reshape", function_type = (!stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[B/dp, S/sp, H] @tp, bf16>, !stg.tensor<[B, S], i64>) -> ()}> ({
// GENERIC:          %heads = "stg.reshape"(%x) : (!stg.tensor<[B/dp, S, H], bf16>) -> !stg.tensor<[B/dp, S, N, (H/N)], bf16>
// GENERIC-NEXT:     %merged = "stg.reshape"(%x) : (!stg.tensor<[B/dp, S, H], bf16>) -> !stg.tensor<[B*S/dp, H], bf16>
// GENERIC:          %partial = "stg.reshape"(%p) : (!stg.tensor<[B/dp, S/sp, H] @tp, bf16>) -> !stg.tensor<[B/dp, S/sp, 2, (H/2)] @tp, bf16>
// GENERIC:          "func.return"() : () -> ()
// GENERIC:          %t = "stg.transpose"(%x) <{perm = [0 : i64, 2 : i64, 1 : i64, 3 : i64]}> : (!stg.tensor<[B/dp, S/sp, N/tp, D], bf16>) -> !stg.tensor<[B/dp, N/tp, S/sp, D], bf16>
// GENERIC-NEXT:     %pt = "stg.transpose"(%p) <{perm = [1 : i64, 0 : i64]}> : (!stg.tensor<[B, H] @tp, f32>) -> !stg.tensor<[H, B] @tp, f32>
// GENERIC:          %qkv = "stg.concat"(%q, %k, %k) <{dim = 2 : i64}> : (!stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[B/dp, S, KV], bf16>, !stg.tensor<[B/dp, S, KV], bf16>) -> !stg.tensor<[B/dp, S, (H + 2*KV)], bf16>
// GENERIC:          %pc = "stg.concat"(%p, %p) <{dim = 1 : i64}> {note} : (!stg.tensor<[T, 2] @sp, f32>, !stg.tensor<[T, 2] @sp, f32>) -> !stg.tensor<[T, 4] @sp, f32>
// GENERIC-NEXT:     %q2, %k2, %v2 = "stg.split"(%qkv) <{dim = 2 : i64}> : (!stg.tensor<[B/dp, S, (H + 2*KV)], bf16>) -> (!stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[B/dp, S, KV], bf16>, !stg.tensor<[B/dp, S, KV], bf16>)
// GENERIC-NEXT:     %s0, %s1 = "stg.split"(%q) <{dim = 1 : i64}> : (!stg.tensor<[B/dp, S, H], bf16>) -> (!stg.tensor<[B/dp, (S - 1), H], bf16>, !stg.tensor<[B/dp, 1, H], bf16>)
// GENERIC-NEXT:     %whole = "stg.split"(%p) <{dim = 0 : i64}> : (!stg.tensor<[T, 2] @sp, f32>) -> !stg.tensor<[T, 2] @sp, f32>
// GENERIC:      }) : () -> ()
