// RUN: stagec-opt %s | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

stg.mesh @m [dp, tp, ep]

// ssm_scan: the scanned dim is whole; the others may be split.
func.func @ssm_scan(%da: !stg.tensor<[B/dp, S, D/tp, P], f32>, %x: !stg.tensor<[B/dp, S, D/tp, P], f32>, %d2: !stg.tensor<[S, B], bf16>) {
  %h = stg.ssm_scan %da, %x dim 1 : !stg.tensor<[B/dp, S, D/tp, P], f32>, !stg.tensor<[B/dp, S, D/tp, P], f32> -> !stg.tensor<[B/dp, S, D/tp, P], f32>
  %h0 = stg.ssm_scan %d2, %d2 dim 0 {note} : !stg.tensor<[S, B], bf16>, !stg.tensor<[S, B], bf16> -> !stg.tensor<[S, B], bf16>
  func.return
}

// moe_dispatch / moe_combine: tokens [T, H], scores [T, E], expert buffers [E, C, H];
// the capacity dim is split like the tokens, hidden like hidden.
func.func @moe(%tok: !stg.tensor<[T/dp, H], bf16>, %sc: !stg.tensor<[T/dp, E], f32>, %tok8: !stg.tensor<[T, H/tp], bf16>, %sc8: !stg.tensor<[T, 8], f32>) {
  %disp = stg.moe_dispatch %tok, %sc top_k 2 : !stg.tensor<[T/dp, H], bf16>, !stg.tensor<[T/dp, E], f32> -> !stg.tensor<[E, C/dp, H], bf16>
  %comb = stg.moe_combine %disp, %sc top_k 2 : !stg.tensor<[E, C/dp, H], bf16>, !stg.tensor<[T/dp, E], f32> -> !stg.tensor<[T/dp, H], bf16>
  %disp8 = stg.moe_dispatch %tok8, %sc8 top_k 8 {note} : !stg.tensor<[T, H/tp], bf16>, !stg.tensor<[T, 8], f32> -> !stg.tensor<[8, C, H/tp], bf16>
  %comb8 = stg.moe_combine %disp8, %sc8 top_k 1 : !stg.tensor<[8, C, H/tp], bf16>, !stg.tensor<[T, 8], f32> -> !stg.tensor<[T, H/tp], bf16>
  func.return
}

// opaque: user-given per-rank FLOPs and bytes, any operands and results.
func.func @opaque(%x: !stg.tensor<[B/dp, S, H], bf16>, %p: !stg.tensor<[B, H] @tp, f32>) {
  %a, %b = stg.opaque "fused"(%x) flops <2*B*H*S/dp> bytes <4*B*H*S/dp> : (!stg.tensor<[B/dp, S, H], bf16>) -> (!stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[B/dp, S, H], bf16>)
  %c = stg.opaque "partial"(%x, %p) flops <0> bytes <(B + H)*8> {note} : (!stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[B, H] @tp, f32>) -> (!stg.tensor<[B, H] @tp, f32>)
  stg.opaque "sink"(%x) flops <1> bytes <0> : (!stg.tensor<[B/dp, S, H], bf16>) -> ()
  %d = stg.opaque "source"() flops <0> bytes <0> : () -> (!stg.tensor<[], f32>)
  func.return
}

// CHECK:      builtin.module {
// CHECK-NEXT:   stg.mesh @m [dp, tp, ep]
// CHECK-NEXT:   func.func @ssm_scan(%da: !stg.tensor<[B/dp, S, D/tp, P], f32>, %x: !stg.tensor<[B/dp, S, D/tp, P], f32>, %d2: !stg.tensor<[S, B], bf16>) {
// CHECK-NEXT:     %h = stg.ssm_scan %da, %x dim 1 : !stg.tensor<[B/dp, S, D/tp, P], f32>, !stg.tensor<[B/dp, S, D/tp, P], f32> -> !stg.tensor<[B/dp, S, D/tp, P], f32>
// CHECK-NEXT:     %h0 = stg.ssm_scan %d2, %d2 dim 0 {note} : !stg.tensor<[S, B], bf16>, !stg.tensor<[S, B], bf16> -> !stg.tensor<[S, B], bf16>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @moe(%tok: !stg.tensor<[T/dp, H], bf16>, %sc: !stg.tensor<[T/dp, E], f32>, %tok8: !stg.tensor<[T, H/tp], bf16>, %sc8: !stg.tensor<[T, 8], f32>) {
// CHECK-NEXT:     %disp = stg.moe_dispatch %tok, %sc top_k 2 : !stg.tensor<[T/dp, H], bf16>, !stg.tensor<[T/dp, E], f32> -> !stg.tensor<[E, C/dp, H], bf16>
// CHECK-NEXT:     %comb = stg.moe_combine %disp, %sc top_k 2 : !stg.tensor<[E, C/dp, H], bf16>, !stg.tensor<[T/dp, E], f32> -> !stg.tensor<[T/dp, H], bf16>
// CHECK-NEXT:     %disp8 = stg.moe_dispatch %tok8, %sc8 top_k 8 {note} : !stg.tensor<[T, H/tp], bf16>, !stg.tensor<[T, 8], f32> -> !stg.tensor<[8, C, H/tp], bf16>
// CHECK-NEXT:     %comb8 = stg.moe_combine %disp8, %sc8 top_k 1 : !stg.tensor<[8, C, H/tp], bf16>, !stg.tensor<[T, 8], f32> -> !stg.tensor<[T, H/tp], bf16>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @opaque(%x: !stg.tensor<[B/dp, S, H], bf16>, %p: !stg.tensor<[B, H] @tp, f32>) {
// CHECK-NEXT:     %a, %b = stg.opaque "fused"(%x) flops <2*B*H*S/dp> bytes <4*B*H*S/dp> : (!stg.tensor<[B/dp, S, H], bf16>) -> (!stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[B/dp, S, H], bf16>)
// CHECK-NEXT:     %c = stg.opaque "partial"(%x, %p) flops <0> bytes <8*B + 8*H> {note} : (!stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[B, H] @tp, f32>) -> (!stg.tensor<[B, H] @tp, f32>)
// CHECK-NEXT:     stg.opaque "sink"(%x) flops <1> bytes <0> : (!stg.tensor<[B/dp, S, H], bf16>) -> ()
// CHECK-NEXT:     %d = stg.opaque "source"() flops <0> bytes <0> : () -> (!stg.tensor<[], f32>)
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }

// GENERIC:      "builtin.module"() ({
// GENERIC-NEXT:   "stg.mesh"() <{sym_name = "m", axes = ["dp", "tp", "ep"], sizes = [#stg.expr<dp>, #stg.expr<tp>, #stg.expr<ep>]}> : () -> ()
// GENERIC-NEXT:   "func.func"() <{sym_name = "ssm_scan", function_type = (!stg.tensor<[B/dp, S, D/tp, P], f32>, !stg.tensor<[B/dp, S, D/tp, P], f32>, !stg.tensor<[S, B], bf16>) -> ()}> ({
// GENERIC:          %h = "stg.ssm_scan"(%da, %x) <{dim = 1 : i64}> : (!stg.tensor<[B/dp, S, D/tp, P], f32>, !stg.tensor<[B/dp, S, D/tp, P], f32>) -> !stg.tensor<[B/dp, S, D/tp, P], f32>
// GENERIC:          "func.return"() : () -> ()
// GENERIC:          %disp = "stg.moe_dispatch"(%tok, %sc) <{top_k = 2 : i64}> : (!stg.tensor<[T/dp, H], bf16>, !stg.tensor<[T/dp, E], f32>) -> !stg.tensor<[E, C/dp, H], bf16>
// GENERIC-NEXT:     %comb = "stg.moe_combine"(%disp, %sc) <{top_k = 2 : i64}> : (!stg.tensor<[E, C/dp, H], bf16>, !stg.tensor<[T/dp, E], f32>) -> !stg.tensor<[T/dp, H], bf16>
// GENERIC:          %a, %b = "stg.opaque"(%x) <{callee = "fused", flop_count = #stg.expr<2*B*H*S/dp>, byte_count = #stg.expr<4*B*H*S/dp>}> : (!stg.tensor<[B/dp, S, H], bf16>) -> (!stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[B/dp, S, H], bf16>)
// GENERIC-NEXT:     %c = "stg.opaque"(%x, %p) <{callee = "partial", flop_count = #stg.expr<0>, byte_count = #stg.expr<8*B + 8*H>}> {note} : (!stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[B, H] @tp, f32>) -> !stg.tensor<[B, H] @tp, f32>
// GENERIC-NEXT:     "stg.opaque"(%x) <{callee = "sink", flop_count = #stg.expr<1>, byte_count = #stg.expr<0>}> : (!stg.tensor<[B/dp, S, H], bf16>) -> ()
// GENERIC-NEXT:     %d = "stg.opaque"() <{callee = "source", flop_count = #stg.expr<0>, byte_count = #stg.expr<0>}> : () -> !stg.tensor<[], f32>
// GENERIC:      }) : () -> ()
