// RUN: stagec-opt %s | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

stg.mesh @m [dp, tp]

// release frees a device buffer; offload / reload copy it to host and back with its
// layout (partial sums included); async transfers return tokens that stg.wait opens.
func.func @memory(%x: !stg.tensor<[B/dp, S, H/tp], bf16>, %p: !stg.tensor<[H] @tp, f32>) {
  stg.release %x : !stg.tensor<[B/dp, S, H/tp], bf16>
  stg.release %p {note} : !stg.tensor<[H] @tp, f32>
  %h = stg.offload %x : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.host<[B/dp, S, H/tp], bf16>
  %d = stg.reload %h : !stg.host<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %hp = stg.offload %p {note} : !stg.tensor<[H] @tp, f32> -> !stg.host<[H] @tp, f32>
  %ht = stg.offload %x async : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.token<!stg.host<[B/dp, S, H/tp], bf16>>
  %hw = stg.wait %ht : !stg.token<!stg.host<[B/dp, S, H/tp], bf16>>
  %dt = stg.reload %hw async : !stg.host<[B/dp, S, H/tp], bf16> -> !stg.token<!stg.tensor<[B/dp, S, H/tp], bf16>>
  %dw = stg.wait %dt {note} : !stg.token<!stg.tensor<[B/dp, S, H/tp], bf16>>
  %pt = stg.reload %hp async : !stg.host<[H] @tp, f32> -> !stg.token<!stg.tensor<[H] @tp, f32>>
  %pw = stg.wait %pt : !stg.token<!stg.tensor<[H] @tp, f32>>
  func.return
}

// A bare token (an async send) only orders; waiting on it yields nothing.
func.func @wait_bare(%x: !stg.tensor<[B/dp, S, H/tp], bf16>) {
  %t = stg.send %x to @m[dp = 0] tag 0 async : !stg.tensor<[B/dp, S, H/tp], bf16>
  stg.wait %t : !stg.token
  func.return
}

// The token may also come from outside.
func.func @wait_arg(%t: !stg.token<!stg.tensor<[B/dp], f32>>, %u: !stg.token) {
  %v = stg.wait %t : !stg.token<!stg.tensor<[B/dp], f32>>
  stg.wait %u : !stg.token
  func.return
}

// CHECK:      builtin.module {
// CHECK-NEXT:   stg.mesh @m [dp, tp]
// CHECK-NEXT:   func.func @memory(%x: !stg.tensor<[B/dp, S, H/tp], bf16>, %p: !stg.tensor<[H] @tp, f32>) {
// CHECK-NEXT:     stg.release %x : !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     stg.release %p {note} : !stg.tensor<[H] @tp, f32>
// CHECK-NEXT:     %h = stg.offload %x : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.host<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %d = stg.reload %h : !stg.host<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %hp = stg.offload %p {note} : !stg.tensor<[H] @tp, f32> -> !stg.host<[H] @tp, f32>
// CHECK-NEXT:     %ht = stg.offload %x async : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.token<!stg.host<[B/dp, S, H/tp], bf16>>
// CHECK-NEXT:     %hw = stg.wait %ht : !stg.token<!stg.host<[B/dp, S, H/tp], bf16>>
// CHECK-NEXT:     %dt = stg.reload %hw async : !stg.host<[B/dp, S, H/tp], bf16> -> !stg.token<!stg.tensor<[B/dp, S, H/tp], bf16>>
// CHECK-NEXT:     %dw = stg.wait %dt {note} : !stg.token<!stg.tensor<[B/dp, S, H/tp], bf16>>
// CHECK-NEXT:     %pt = stg.reload %hp async : !stg.host<[H] @tp, f32> -> !stg.token<!stg.tensor<[H] @tp, f32>>
// CHECK-NEXT:     %pw = stg.wait %pt : !stg.token<!stg.tensor<[H] @tp, f32>>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @wait_bare(%x: !stg.tensor<[B/dp, S, H/tp], bf16>) {
// CHECK-NEXT:     %t = stg.send %x to @m[dp = 0] tag 0 async : !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     stg.wait %t : !stg.token
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @wait_arg(%t: !stg.token<!stg.tensor<[B/dp], f32>>, %u: !stg.token) {
// CHECK-NEXT:     %v = stg.wait %t : !stg.token<!stg.tensor<[B/dp], f32>>
// CHECK-NEXT:     stg.wait %u : !stg.token
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }

// GENERIC:      "builtin.module"() ({
// GENERIC-NEXT:   "stg.mesh"() <{sym_name = "m", axes = ["dp", "tp"], sizes = [#stg.expr<dp>, #stg.expr<tp>]}> : () -> ()
// GENERIC-NEXT:   "func.func"() <{sym_name = "memory", function_type = (!stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[H] @tp, f32>) -> ()}> ({
// GENERIC-NEXT:   ^bb0(%x: !stg.tensor<[B/dp, S, H/tp], bf16>, %p: !stg.tensor<[H] @tp, f32>):
// GENERIC-NEXT:     "stg.release"(%x) : (!stg.tensor<[B/dp, S, H/tp], bf16>) -> ()
// GENERIC-NEXT:     "stg.release"(%p) {note} : (!stg.tensor<[H] @tp, f32>) -> ()
// GENERIC-NEXT:     %h = "stg.offload"(%x) : (!stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.host<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %d = "stg.reload"(%h) : (!stg.host<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %hp = "stg.offload"(%p) {note} : (!stg.tensor<[H] @tp, f32>) -> !stg.host<[H] @tp, f32>
// GENERIC-NEXT:     %ht = "stg.offload"(%x) <{async}> : (!stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.token<!stg.host<[B/dp, S, H/tp], bf16>>
// GENERIC-NEXT:     %hw = "stg.wait"(%ht) : (!stg.token<!stg.host<[B/dp, S, H/tp], bf16>>) -> !stg.host<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %dt = "stg.reload"(%hw) <{async}> : (!stg.host<[B/dp, S, H/tp], bf16>) -> !stg.token<!stg.tensor<[B/dp, S, H/tp], bf16>>
// GENERIC-NEXT:     %dw = "stg.wait"(%dt) {note} : (!stg.token<!stg.tensor<[B/dp, S, H/tp], bf16>>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %pt = "stg.reload"(%hp) <{async}> : (!stg.host<[H] @tp, f32>) -> !stg.token<!stg.tensor<[H] @tp, f32>>
// GENERIC-NEXT:     %pw = "stg.wait"(%pt) : (!stg.token<!stg.tensor<[H] @tp, f32>>) -> !stg.tensor<[H] @tp, f32>
// GENERIC-NEXT:     "func.return"() : () -> ()
// GENERIC-NEXT:   }) : () -> ()
// GENERIC-NEXT:   "func.func"() <{sym_name = "wait_bare", function_type = (!stg.tensor<[B/dp, S, H/tp], bf16>) -> ()}> ({
// GENERIC-NEXT:   ^bb0(%x: !stg.tensor<[B/dp, S, H/tp], bf16>):
// GENERIC-NEXT:     %t = "stg.send"(%x) <{mesh = @m, axis = "dp", peer = 0 : i64, tag = 0 : i64, async}> : (!stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.token
// GENERIC-NEXT:     "stg.wait"(%t) : (!stg.token) -> ()
// GENERIC-NEXT:     "func.return"() : () -> ()
// GENERIC-NEXT:   }) : () -> ()
// GENERIC-NEXT:   "func.func"() <{sym_name = "wait_arg", function_type = (!stg.token<!stg.tensor<[B/dp], f32>>, !stg.token) -> ()}> ({
// GENERIC-NEXT:   ^bb0(%t: !stg.token<!stg.tensor<[B/dp], f32>>, %u: !stg.token):
// GENERIC-NEXT:     %v = "stg.wait"(%t) : (!stg.token<!stg.tensor<[B/dp], f32>>) -> !stg.tensor<[B/dp], f32>
// GENERIC-NEXT:     "stg.wait"(%u) : (!stg.token) -> ()
// GENERIC-NEXT:     "func.return"() : () -> ()
// GENERIC-NEXT:   }) : () -> ()
// GENERIC-NEXT: }) : () -> ()
