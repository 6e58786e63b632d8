// RUN: stagec-opt %s --split-input-file -p stg-reuse-exchanges | filecheck %s

// The backward sends the saved tokens again; the forward saves its exchanged tokens
// instead, every hop retyped, and the backward's all-to-all goes.

stg.mesh @m [ep = 2]
func.func @step(%x: !stg.tensor<[E, C/ep, H], bf16>) {
  %saved = stg.phase forward {
    %s = stg.repeat 2 {
      %t = stg.elementwise neg %x : !stg.tensor<[E, C/ep, H], bf16> -> !stg.tensor<[E, C/ep, H], bf16>
      %e = stg.all_to_all %t on @m [ep] : !stg.tensor<[E, C/ep, H], bf16> -> !stg.tensor<[E/ep, C, H], bf16>
      %y = stg.elementwise silu %e : !stg.tensor<[E/ep, C, H], bf16> -> !stg.tensor<[E/ep, C, H], bf16>
      stg.yield %t : !stg.tensor<[E, C/ep, H], bf16>
    }
    stg.yield %s : !stg.tensor<[2, E, C/ep, H], bf16>
  }
  stg.phase backward {
    stg.repeat 2 scan(%d = %saved : !stg.tensor<[2, E, C/ep, H], bf16>) reverse {
      %e2 = stg.all_to_all %d on @m [ep] : !stg.tensor<[E, C/ep, H], bf16> -> !stg.tensor<[E/ep, C, H], bf16>
      %z = stg.elementwise silu %e2 : !stg.tensor<[E/ep, C, H], bf16> -> !stg.tensor<[E/ep, C, H], bf16>
      stg.yield
    }
    stg.yield
  }
  func.return
}

// CHECK:      %saved = stg.phase forward {
// CHECK-NEXT:   %s = stg.repeat 2 {
// CHECK-NEXT:     %t = stg.elementwise neg %x
// CHECK-NEXT:     %e = stg.all_to_all %t on @m [ep] : !stg.tensor<[E, C/ep, H], bf16> -> !stg.tensor<[E/ep, C, H], bf16>
// CHECK-NEXT:     %y = stg.elementwise silu %e
// CHECK-NEXT:     stg.yield %e : !stg.tensor<[E/ep, C, H], bf16>
// CHECK-NEXT:   }
// CHECK-NEXT:   stg.yield %s : !stg.tensor<[2, E/ep, C, H], bf16>
// CHECK-NEXT: }
// CHECK-NEXT: stg.phase backward {
// CHECK-NEXT:   stg.repeat 2 scan(%d = %saved : !stg.tensor<[2, E/ep, C, H], bf16>) reverse {
// CHECK-NEXT:     %z = stg.elementwise silu %d : !stg.tensor<[E/ep, C, H], bf16> -> !stg.tensor<[E/ep, C, H], bf16>

// -----

// A saved value the backward also reads unexchanged stays; its all-to-all is redone.

stg.mesh @m [ep = 2]
func.func @kept(%x: !stg.tensor<[E, C/ep, H], bf16>) {
  %saved = stg.phase forward {
    %s = stg.repeat 2 {
      %t = stg.elementwise neg %x : !stg.tensor<[E, C/ep, H], bf16> -> !stg.tensor<[E, C/ep, H], bf16>
      %e = stg.all_to_all %t on @m [ep] : !stg.tensor<[E, C/ep, H], bf16> -> !stg.tensor<[E/ep, C, H], bf16>
      stg.yield %t : !stg.tensor<[E, C/ep, H], bf16>
    }
    stg.yield %s : !stg.tensor<[2, E, C/ep, H], bf16>
  }
  stg.phase backward {
    stg.repeat 2 scan(%d = %saved : !stg.tensor<[2, E, C/ep, H], bf16>) reverse {
      %e2 = stg.all_to_all %d on @m [ep] : !stg.tensor<[E, C/ep, H], bf16> -> !stg.tensor<[E/ep, C, H], bf16>
      %n = stg.elementwise neg %d : !stg.tensor<[E, C/ep, H], bf16> -> !stg.tensor<[E, C/ep, H], bf16>
      stg.yield
    }
    stg.yield
  }
  func.return
}

// CHECK-LABEL: func.func @kept
// CHECK:         stg.yield %t : !stg.tensor<[E, C/ep, H], bf16>
// CHECK:         %e2 = stg.all_to_all %d on @m [ep]

// -----

// Two exchanges of one value in one block (a recomputed forward's) are one.

stg.mesh @m [ep = 2]
func.func @twice(%t: !stg.tensor<[E, C/ep, H], bf16>) {
  %a = stg.all_to_all %t on @m [ep] : !stg.tensor<[E, C/ep, H], bf16> -> !stg.tensor<[E/ep, C, H], bf16>
  %b = stg.all_to_all %t on @m [ep] : !stg.tensor<[E, C/ep, H], bf16> -> !stg.tensor<[E/ep, C, H], bf16>
  %c = stg.elementwise add %a, %b : !stg.tensor<[E/ep, C, H], bf16>, !stg.tensor<[E/ep, C, H], bf16> -> !stg.tensor<[E/ep, C, H], bf16>
  func.return
}

// CHECK-LABEL: func.func @twice
// CHECK-NEXT:    %a = stg.all_to_all %t on @m [ep]
// CHECK-NEXT:    %c = stg.elementwise add %a, %a

// -----

// With recompute the backward's recompute phase exchanges the tokens it rebuilds and
// yields them unexchanged; it yields the exchanged ones instead.

stg.mesh @m [ep = 2]
func.func @recomputed(%x: !stg.tensor<[E, C/ep, H], bf16>) {
  %d = stg.phase recompute {
    %t = stg.elementwise neg %x : !stg.tensor<[E, C/ep, H], bf16> -> !stg.tensor<[E, C/ep, H], bf16>
    %e = stg.all_to_all %t on @m [ep] : !stg.tensor<[E, C/ep, H], bf16> -> !stg.tensor<[E/ep, C, H], bf16>
    stg.yield %t : !stg.tensor<[E, C/ep, H], bf16>
  }
  %e2 = stg.all_to_all %d on @m [ep] : !stg.tensor<[E, C/ep, H], bf16> -> !stg.tensor<[E/ep, C, H], bf16>
  %z = stg.elementwise silu %e2 : !stg.tensor<[E/ep, C, H], bf16> -> !stg.tensor<[E/ep, C, H], bf16>
  func.return
}

// CHECK-LABEL: func.func @recomputed
// CHECK:         stg.yield %e : !stg.tensor<[E/ep, C, H], bf16>
// CHECK-NEXT:  }
// CHECK-NEXT:  %z = stg.elementwise silu %d : !stg.tensor<[E/ep, C, H], bf16>
