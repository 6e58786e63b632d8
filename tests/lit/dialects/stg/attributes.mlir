// RUN: stagec-opt %s | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// The attributes ride on function declarations as discardable attributes.

// #stg.expr: symbolic integer expressions, printed in canonical form (terms by
// degree, then symbol names; factors sorted; constants folded).
func.func private @exprs() attributes {
  product = #stg.expr<2*S*B*H/tp>,
  sum = #stg.expr<(H + 2*D*KV)/tp>,
  constant = #stg.expr<8>,
  folded = #stg.expr<2*3 + 4/2>,
  zero = #stg.expr<0>,
  difference = #stg.expr<B - 1>,
  negative = #stg.expr<-B>,
  quotient = #stg.expr<B/(dp*sp)>,
  cancelled = #stg.expr<4*H*tp/(2*tp)>,
  expanded = #stg.expr<(B + 1)*(B - 1)>
}

// #stg.dim: one dim of a distributed tensor, its global size and split axes.
func.func private @dims() attributes {
  plain = #stg.dim<B>,
  constant = #stg.dim<8>,
  split = #stg.dim<B/dp>,
  split_twice = #stg.dim<4*H/tp/cp>,
  quotient = #stg.dim<(H/N)>,
  quotient_split = #stg.dim<(H/N)/tp>,
  sum_split = #stg.dim<(H + 1)/tp>,
  product = #stg.dim<(2*H)>
}

// The enum attributes, which ops hold as properties.
func.func private @elementwise_kinds() attributes {
  a = #stg<elementwise_kind add>, b = #stg<elementwise_kind gelu>,
  c = #stg<elementwise_kind silu_grad>, d = #stg<elementwise_kind rotary>
}
func.func private @reduce_kinds() attributes {
  a = #stg<reduce_kind sum>, b = #stg<reduce_kind mean>,
  c = #stg<reduce_kind max>, d = #stg<reduce_kind min>
}
func.func private @norm_kinds() attributes {a = #stg<norm_kind rms>, b = #stg<norm_kind layer>}
func.func private @phase_kinds() attributes {
  a = #stg<phase_kind forward>, b = #stg<phase_kind backward>,
  c = #stg<phase_kind recompute>, d = #stg<phase_kind optimizer>
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func private @exprs() -> () attributes {product = #stg.expr<2*B*H*S/tp>, sum = #stg.expr<(2*D*KV + H)/tp>, constant = #stg.expr<8>, folded = #stg.expr<8>, zero = #stg.expr<0>, difference = #stg.expr<B - 1>, negative = #stg.expr<-B>, quotient = #stg.expr<B/(dp*sp)>, cancelled = #stg.expr<2*H>, expanded = #stg.expr<B*B - 1>}
// CHECK-NEXT:   func.func private @dims() -> () attributes {plain = #stg.dim<B>, constant = #stg.dim<8>, split = #stg.dim<B/dp>, split_twice = #stg.dim<4*H/tp/cp>, quotient = #stg.dim<(H/N)>, quotient_split = #stg.dim<(H/N)/tp>, sum_split = #stg.dim<(H + 1)/tp>, product = #stg.dim<2*H>}
// CHECK-NEXT:   func.func private @elementwise_kinds() -> () attributes {a = #stg<elementwise_kind add>, b = #stg<elementwise_kind gelu>, c = #stg<elementwise_kind silu_grad>, d = #stg<elementwise_kind rotary>}
// CHECK-NEXT:   func.func private @reduce_kinds() -> () attributes {a = #stg<reduce_kind sum>, b = #stg<reduce_kind mean>, c = #stg<reduce_kind max>, d = #stg<reduce_kind min>}
// CHECK-NEXT:   func.func private @norm_kinds() -> () attributes {a = #stg<norm_kind rms>, b = #stg<norm_kind layer>}
// CHECK-NEXT:   func.func private @phase_kinds() -> () attributes {a = #stg<phase_kind forward>, b = #stg<phase_kind backward>, c = #stg<phase_kind recompute>, d = #stg<phase_kind optimizer>}
// CHECK-NEXT: }

// GENERIC:      "builtin.module"() ({
// GENERIC-NEXT:   "func.func"() <{sym_name = "exprs", function_type = () -> (), sym_visibility = "private"}> ({
// GENERIC-NEXT:   }) {product = #stg.expr<2*B*H*S/tp>, sum = #stg.expr<(2*D*KV + H)/tp>, constant = #stg.expr<8>, folded = #stg.expr<8>, zero = #stg.expr<0>, difference = #stg.expr<B - 1>, negative = #stg.expr<-B>, quotient = #stg.expr<B/(dp*sp)>, cancelled = #stg.expr<2*H>, expanded = #stg.expr<B*B - 1>} : () -> ()
// GENERIC-NEXT:   "func.func"() <{sym_name = "dims", function_type = () -> (), sym_visibility = "private"}> ({
// GENERIC-NEXT:   }) {plain = #stg.dim<B>, constant = #stg.dim<8>, split = #stg.dim<B/dp>, split_twice = #stg.dim<4*H/tp/cp>, quotient = #stg.dim<(H/N)>, quotient_split = #stg.dim<(H/N)/tp>, sum_split = #stg.dim<(H + 1)/tp>, product = #stg.dim<2*H>} : () -> ()
// GENERIC-NEXT:   "func.func"() <{sym_name = "elementwise_kinds", function_type = () -> (), sym_visibility = "private"}> ({
// GENERIC-NEXT:   }) {a = #stg<elementwise_kind add>, b = #stg<elementwise_kind gelu>, c = #stg<elementwise_kind silu_grad>, d = #stg<elementwise_kind rotary>} : () -> ()
// GENERIC-NEXT:   "func.func"() <{sym_name = "reduce_kinds", function_type = () -> (), sym_visibility = "private"}> ({
// GENERIC-NEXT:   }) {a = #stg<reduce_kind sum>, b = #stg<reduce_kind mean>, c = #stg<reduce_kind max>, d = #stg<reduce_kind min>} : () -> ()
// GENERIC-NEXT:   "func.func"() <{sym_name = "norm_kinds", function_type = () -> (), sym_visibility = "private"}> ({
// GENERIC-NEXT:   }) {a = #stg<norm_kind rms>, b = #stg<norm_kind layer>} : () -> ()
// GENERIC-NEXT:   "func.func"() <{sym_name = "phase_kinds", function_type = () -> (), sym_visibility = "private"}> ({
// GENERIC-NEXT:   }) {a = #stg<phase_kind forward>, b = #stg<phase_kind backward>, c = #stg<phase_kind recompute>, d = #stg<phase_kind optimizer>} : () -> ()
// GENERIC-NEXT: }) : () -> ()
