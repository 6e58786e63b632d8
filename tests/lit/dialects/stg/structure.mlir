// RUN: stagec-opt %s | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

stg.mesh @m [dp, tp]

// Forward through L layers saving each layer's input, then backward in reverse
// order over the saved activations; the whole step is one micro-batch iteration.
func.func @step(%x: !stg.tensor<[B/dp, S, H], bf16>, %w: !stg.tensor<[H], f32>) {
  %fw, %fw_1 = stg.phase forward {
    %y, %y_1 = stg.repeat L carry(%c0 = %x : !stg.tensor<[B/dp, S, H], bf16>) {
      %c1 = stg.elementwise silu %c0 : !stg.tensor<[B/dp, S, H], bf16> -> !stg.tensor<[B/dp, S, H], bf16>
      stg.yield %c1, %c0 : !stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[B/dp, S, H], bf16>
    }
    stg.yield %y, %y_1 : !stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[L, B/dp, S, H], bf16>
  }
  %bw = stg.phase backward {
    %g = stg.repeat L carry(%g0 = %fw : !stg.tensor<[B/dp, S, H], bf16>) scan(%act = %fw_1 : !stg.tensor<[L, B/dp, S, H], bf16>) reverse {
      %g1 = stg.elementwise silu_grad %g0, %act : !stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[B/dp, S, H], bf16> -> !stg.tensor<[B/dp, S, H], bf16>
      stg.yield %g1 : !stg.tensor<[B/dp, S, H], bf16>
    }
    stg.yield %g : !stg.tensor<[B/dp, S, H], bf16>
  }
  stg.phase recompute {
    stg.yield
  }
  %opt = stg.phase optimizer {
    %mb = stg.microbatch M carry(%acc = %w : !stg.tensor<[H], f32>) {
      stg.yield %acc : !stg.tensor<[H], f32>
    }
    stg.yield %mb : !stg.tensor<[H], f32>
  } {note}
  func.return
}

// Several carries, a constant count, a scan without carry, per-iteration outputs
// stacked with a leading [count] dim (the scanned layer weights come in that way).
func.func @loops(%x: !stg.tensor<[B/dp, H], bf16>, %s: !stg.tensor<[B/dp], f32>, %ws: !stg.tensor<[80, H, F/tp], bf16>) {
  %a, %b = stg.repeat 80 carry(%xa = %x : !stg.tensor<[B/dp, H], bf16>, %sa = %s : !stg.tensor<[B/dp], f32>) {
    stg.yield %xa, %sa : !stg.tensor<[B/dp, H], bf16>, !stg.tensor<[B/dp], f32>
  } {layers = "decoder"}
  %outs = stg.repeat 80 scan(%wl = %ws : !stg.tensor<[80, H, F/tp], bf16>) {
    %h = stg.einsum "bh,hf->bf" %x, %wl : !stg.tensor<[B/dp, H], bf16>, !stg.tensor<[H, F/tp], bf16> -> !stg.tensor<[B/dp, F/tp], bf16>
    stg.yield %h : !stg.tensor<[B/dp, F/tp], bf16>
  }
  %mb, %mb_1 = stg.microbatch 80 carry(%acc = %s : !stg.tensor<[B/dp], f32>) scan(%xs = %outs : !stg.tensor<[80, B/dp, F/tp], bf16>) reverse {
    stg.yield %acc, %xs : !stg.tensor<[B/dp], f32>, !stg.tensor<[B/dp, F/tp], bf16>
  }
  stg.repeat 2 {
    stg.yield
  }
  func.return
}

// CHECK:      builtin.module {
// CHECK-NEXT:   stg.mesh @m [dp, tp]
// CHECK-NEXT:   func.func @step(%x: !stg.tensor<[B/dp, S, H], bf16>, %w: !stg.tensor<[H], f32>) {
// CHECK-NEXT:     %fw, %fw_1 = stg.phase forward {
// CHECK-NEXT:       %y, %y_1 = stg.repeat L carry(%c0 = %x : !stg.tensor<[B/dp, S, H], bf16>) {
// CHECK-NEXT:         %c1 = stg.elementwise silu %c0 : !stg.tensor<[B/dp, S, H], bf16> -> !stg.tensor<[B/dp, S, H], bf16>
// CHECK-NEXT:         stg.yield %c1, %c0 : !stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[B/dp, S, H], bf16>
// CHECK-NEXT:       }
// CHECK-NEXT:       stg.yield %y, %y_1 : !stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[L, B/dp, S, H], bf16>
// CHECK-NEXT:     }
// CHECK-NEXT:     %bw = stg.phase backward {
// CHECK-NEXT:       %g = stg.repeat L carry(%g0 = %fw : !stg.tensor<[B/dp, S, H], bf16>) scan(%act = %fw_1 : !stg.tensor<[L, B/dp, S, H], bf16>) reverse {
// CHECK-NEXT:         %g1 = stg.elementwise silu_grad %g0, %act : !stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[B/dp, S, H], bf16> -> !stg.tensor<[B/dp, S, H], bf16>
// CHECK-NEXT:         stg.yield %g1 : !stg.tensor<[B/dp, S, H], bf16>
// CHECK-NEXT:       }
// CHECK-NEXT:       stg.yield %g : !stg.tensor<[B/dp, S, H], bf16>
// CHECK-NEXT:     }
// CHECK-NEXT:     stg.phase recompute {
// CHECK-NEXT:       stg.yield
// CHECK-NEXT:     }
// CHECK-NEXT:     %opt = stg.phase optimizer {
// CHECK-NEXT:       %mb = stg.microbatch M carry(%acc = %w : !stg.tensor<[H], f32>) {
// CHECK-NEXT:         stg.yield %acc : !stg.tensor<[H], f32>
// CHECK-NEXT:       }
// CHECK-NEXT:       stg.yield %mb : !stg.tensor<[H], f32>
// CHECK-NEXT:     } {note}
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @loops(%x: !stg.tensor<[B/dp, H], bf16>, %s: !stg.tensor<[B/dp], f32>, %ws: !stg.tensor<[80, H, F/tp], bf16>) {
// CHECK-NEXT:     %a, %b = stg.repeat 80 carry(%xa = %x : !stg.tensor<[B/dp, H], bf16>, %sa = %s : !stg.tensor<[B/dp], f32>) {
// CHECK-NEXT:       stg.yield %xa, %sa : !stg.tensor<[B/dp, H], bf16>, !stg.tensor<[B/dp], f32>
// CHECK-NEXT:     } {layers = "decoder"}
// CHECK-NEXT:     %outs = stg.repeat 80 scan(%wl = %ws : !stg.tensor<[80, H, F/tp], bf16>) {
// CHECK-NEXT:       %h = stg.einsum "bh,hf->bf" %x, %wl : !stg.tensor<[B/dp, H], bf16>, !stg.tensor<[H, F/tp], bf16> -> !stg.tensor<[B/dp, F/tp], bf16>
// CHECK-NEXT:       stg.yield %h : !stg.tensor<[B/dp, F/tp], bf16>
// CHECK-NEXT:     }
// CHECK-NEXT:     %mb, %mb_1 = stg.microbatch 80 carry(%acc = %s : !stg.tensor<[B/dp], f32>) scan(%xs = %outs : !stg.tensor<[80, B/dp, F/tp], bf16>) reverse {
// CHECK-NEXT:       stg.yield %acc, %xs : !stg.tensor<[B/dp], f32>, !stg.tensor<[B/dp, F/tp], bf16>
// CHECK-NEXT:     }
// CHECK-NEXT:     stg.repeat 2 {
// CHECK-NEXT:       stg.yield
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }

// GENERIC:      "builtin.module"() ({
// GENERIC-NEXT:   "stg.mesh"() <{sym_name = "m", axes = ["dp", "tp"], sizes = [#stg.expr<dp>, #stg.expr<tp>]}> : () -> ()
// GENERIC-NEXT:   "func.func"() <{sym_name = "step", function_type = (!stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[H], f32>) -> ()}> ({
// GENERIC-NEXT:   ^bb0(%x: !stg.tensor<[B/dp, S, H], bf16>, %w: !stg.tensor<[H], f32>):
// GENERIC-NEXT:     %fw, %fw_1 = "stg.phase"() <{kind = #stg<phase_kind forward>}> ({
// GENERIC-NEXT:       %y, %y_1 = "stg.repeat"(%x) <{count = #stg.expr<L>, operandSegmentSizes = array<i32: 1, 0>}> ({
// GENERIC-NEXT:       ^bb0(%c0: !stg.tensor<[B/dp, S, H], bf16>):
// GENERIC-NEXT:         %c1 = "stg.elementwise"(%c0) <{kind = #stg<elementwise_kind silu>}> : (!stg.tensor<[B/dp, S, H], bf16>) -> !stg.tensor<[B/dp, S, H], bf16>
// GENERIC-NEXT:         "stg.yield"(%c1, %c0) : (!stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[B/dp, S, H], bf16>) -> ()
// GENERIC-NEXT:       }) : (!stg.tensor<[B/dp, S, H], bf16>) -> (!stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[L, B/dp, S, H], bf16>)
// GENERIC-NEXT:       "stg.yield"(%y, %y_1) : (!stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[L, B/dp, S, H], bf16>) -> ()
// GENERIC-NEXT:     }) : () -> (!stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[L, B/dp, S, H], bf16>)
// GENERIC-NEXT:     %bw = "stg.phase"() <{kind = #stg<phase_kind backward>}> ({
// GENERIC-NEXT:       %g = "stg.repeat"(%fw, %fw_1) <{count = #stg.expr<L>, reverse, operandSegmentSizes = array<i32: 1, 1>}> ({
// GENERIC-NEXT:       ^bb0(%g0: !stg.tensor<[B/dp, S, H], bf16>, %act: !stg.tensor<[B/dp, S, H], bf16>):
// GENERIC-NEXT:         %g1 = "stg.elementwise"(%g0, %act) <{kind = #stg<elementwise_kind silu_grad>}> : (!stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[B/dp, S, H], bf16>) -> !stg.tensor<[B/dp, S, H], bf16>
// GENERIC-NEXT:         "stg.yield"(%g1) : (!stg.tensor<[B/dp, S, H], bf16>) -> ()
// GENERIC-NEXT:       }) : (!stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[L, B/dp, S, H], bf16>) -> !stg.tensor<[B/dp, S, H], bf16>
// GENERIC-NEXT:       "stg.yield"(%g) : (!stg.tensor<[B/dp, S, H], bf16>) -> ()
// GENERIC-NEXT:     }) : () -> !stg.tensor<[B/dp, S, H], bf16>
// GENERIC-NEXT:     "stg.phase"() <{kind = #stg<phase_kind recompute>}> ({
// GENERIC-NEXT:       "stg.yield"() : () -> ()
// GENERIC-NEXT:     }) : () -> ()
// GENERIC-NEXT:     %opt = "stg.phase"() <{kind = #stg<phase_kind optimizer>}> ({
// GENERIC-NEXT:       %mb = "stg.microbatch"(%w) <{count = #stg.expr<M>, operandSegmentSizes = array<i32: 1, 0>}> ({
// GENERIC-NEXT:       ^bb0(%acc: !stg.tensor<[H], f32>):
// GENERIC-NEXT:         "stg.yield"(%acc) : (!stg.tensor<[H], f32>) -> ()
// GENERIC-NEXT:       }) : (!stg.tensor<[H], f32>) -> !stg.tensor<[H], f32>
// GENERIC-NEXT:       "stg.yield"(%mb) : (!stg.tensor<[H], f32>) -> ()
// GENERIC-NEXT:     }) {note} : () -> !stg.tensor<[H], f32>
// GENERIC-NEXT:     "func.return"() : () -> ()
// GENERIC-NEXT:   }) : () -> ()
// GENERIC-NEXT:   "func.func"() <{sym_name = "loops", function_type = (!stg.tensor<[B/dp, H], bf16>, !stg.tensor<[B/dp], f32>, !stg.tensor<[80, H, F/tp], bf16>) -> ()}> ({
// GENERIC-NEXT:   ^bb0(%x: !stg.tensor<[B/dp, H], bf16>, %s: !stg.tensor<[B/dp], f32>, %ws: !stg.tensor<[80, H, F/tp], bf16>):
// GENERIC-NEXT:     %a, %b = "stg.repeat"(%x, %s) <{count = #stg.expr<80>, operandSegmentSizes = array<i32: 2, 0>}> ({
// GENERIC-NEXT:     ^bb0(%xa: !stg.tensor<[B/dp, H], bf16>, %sa: !stg.tensor<[B/dp], f32>):
// GENERIC-NEXT:       "stg.yield"(%xa, %sa) : (!stg.tensor<[B/dp, H], bf16>, !stg.tensor<[B/dp], f32>) -> ()
// GENERIC-NEXT:     }) {layers = "decoder"} : (!stg.tensor<[B/dp, H], bf16>, !stg.tensor<[B/dp], f32>) -> (!stg.tensor<[B/dp, H], bf16>, !stg.tensor<[B/dp], f32>)
// GENERIC-NEXT:     %outs = "stg.repeat"(%ws) <{count = #stg.expr<80>, operandSegmentSizes = array<i32: 0, 1>}> ({
// GENERIC-NEXT:     ^bb0(%wl: !stg.tensor<[H, F/tp], bf16>):
// GENERIC-NEXT:       %h = "stg.einsum"(%x, %wl) <{equation = "bh,hf->bf"}> : (!stg.tensor<[B/dp, H], bf16>, !stg.tensor<[H, F/tp], bf16>) -> !stg.tensor<[B/dp, F/tp], bf16>
// GENERIC-NEXT:       "stg.yield"(%h) : (!stg.tensor<[B/dp, F/tp], bf16>) -> ()
// GENERIC-NEXT:     }) : (!stg.tensor<[80, H, F/tp], bf16>) -> !stg.tensor<[80, B/dp, F/tp], bf16>
// GENERIC-NEXT:     %mb, %mb_1 = "stg.microbatch"(%s, %outs) <{count = #stg.expr<80>, reverse, operandSegmentSizes = array<i32: 1, 1>}> ({
// GENERIC-NEXT:     ^bb0(%acc: !stg.tensor<[B/dp], f32>, %xs: !stg.tensor<[B/dp, F/tp], bf16>):
// GENERIC-NEXT:       "stg.yield"(%acc, %xs) : (!stg.tensor<[B/dp], f32>, !stg.tensor<[B/dp, F/tp], bf16>) -> ()
// GENERIC-NEXT:     }) : (!stg.tensor<[B/dp], f32>, !stg.tensor<[80, B/dp, F/tp], bf16>) -> (!stg.tensor<[B/dp], f32>, !stg.tensor<[80, B/dp, F/tp], bf16>)
// GENERIC-NEXT:     "stg.repeat"() <{count = #stg.expr<2>, operandSegmentSizes = array<i32: 0, 0>}> ({
// GENERIC-NEXT:       "stg.yield"() : () -> ()
// GENERIC-NEXT:     }) : () -> ()
// GENERIC-NEXT:     "func.return"() : () -> ()
// GENERIC-NEXT:   }) : () -> ()
// GENERIC-NEXT: }) : () -> ()
