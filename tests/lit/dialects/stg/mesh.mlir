// RUN: stagec-opt %s | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// An axis without `= size` has the symbolic size named after it; `dp = dp` is the
// same axis and prints without its size.
stg.mesh @world [dp, pp = 4, tp = 8]
stg.mesh @symbolic [dp = DP, tp = 2*k, ep = ep] {note = "sizes are expressions"}
stg.mesh @single [x = 1]
stg.mesh @sized [a = 2, b = 3, c = 4, d = 5]

// CHECK:      builtin.module {
// CHECK-NEXT:   stg.mesh @world [dp, pp = 4, tp = 8]
// CHECK-NEXT:   stg.mesh @symbolic [dp = DP, tp = 2*k, ep] {note = "sizes are expressions"}
// CHECK-NEXT:   stg.mesh @single [x = 1]
// CHECK-NEXT:   stg.mesh @sized [a = 2, b = 3, c = 4, d = 5]
// CHECK-NEXT: }

// GENERIC:      "builtin.module"() ({
// GENERIC-NEXT:   "stg.mesh"() <{sym_name = "world", axes = ["dp", "pp", "tp"], sizes = [#stg.expr<dp>, #stg.expr<4>, #stg.expr<8>]}> : () -> ()
// GENERIC-NEXT:   "stg.mesh"() <{sym_name = "symbolic", axes = ["dp", "tp", "ep"], sizes = [#stg.expr<DP>, #stg.expr<2*k>, #stg.expr<ep>]}> {note = "sizes are expressions"} : () -> ()
// GENERIC-NEXT:   "stg.mesh"() <{sym_name = "single", axes = ["x"], sizes = [#stg.expr<1>]}> : () -> ()
// GENERIC-NEXT:   "stg.mesh"() <{sym_name = "sized", axes = ["a", "b", "c", "d"], sizes = [#stg.expr<2>, #stg.expr<3>, #stg.expr<4>, #stg.expr<5>]}> : () -> ()
// GENERIC-NEXT: }) : () -> ()
