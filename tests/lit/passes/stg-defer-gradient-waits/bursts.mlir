// RUN: stagec-opt %s --split-input-file -p stg-defer-gradient-waits | filecheck %s
// RUN: stagec-opt %s --split-input-file -p stg-defer-gradient-waits,stg-defer-gradient-waits | filecheck %s
// RUN: stagec-opt %s --split-input-file -p 'stg-defer-gradient-waits{in-flight=2}' | filecheck %s --check-prefix=TWO

// Two layers' backward: layer 1's two reduce-scatters are one burst, layer 0's one the
// next. Layer 1's waits, casts and accumulations move down to just before layer 0's
// burst is issued, so layer 0's einsum overlaps them; layer 0's go to the block's end.
// With two bursts in flight both go to the end.

stg.mesh @m [fsdp = 2]
func.func @backward(%g1: !stg.tensor<[H, F] @fsdp, bf16>, %g2: !stg.tensor<[F, H] @fsdp, bf16>, %x: !stg.tensor<[B/fsdp, H], bf16>, %w: !stg.tensor<[H, F], bf16>) -> !stg.tensor<[B/fsdp, F], bf16> attributes {stg.scheduled} {
  %t1 = stg.reduce_scatter %g1 on @m [fsdp] async stream "fsdp" : !stg.tensor<[H, F] @fsdp, bf16> -> !stg.token<!stg.tensor<[H/fsdp, F], bf16>>
  %r1 = stg.wait %t1 : !stg.token<!stg.tensor<[H/fsdp, F], bf16>>
  %c1 = stg.elementwise cast %r1 : !stg.tensor<[H/fsdp, F], bf16> -> !stg.tensor<[H/fsdp, F], f32>
  stg.assign %c1 to "grad" of "w1" layer 1 of 2 : !stg.tensor<[H/fsdp, F], f32>
  %t2 = stg.reduce_scatter %g2 on @m [fsdp] async stream "fsdp" : !stg.tensor<[F, H] @fsdp, bf16> -> !stg.token<!stg.tensor<[F/fsdp, H], bf16>>
  %r2 = stg.wait %t2 : !stg.token<!stg.tensor<[F/fsdp, H], bf16>>
  %c2 = stg.elementwise cast %r2 : !stg.tensor<[F/fsdp, H], bf16> -> !stg.tensor<[F/fsdp, H], f32>
  stg.assign %c2 to "grad" of "w2" layer 1 of 2 : !stg.tensor<[F/fsdp, H], f32>
  %y = stg.einsum "bh,hf->bf" %x, %w : !stg.tensor<[B/fsdp, H], bf16>, !stg.tensor<[H, F], bf16> -> !stg.tensor<[B/fsdp, F], bf16>
  %t3 = stg.reduce_scatter %g1 on @m [fsdp] async stream "fsdp" : !stg.tensor<[H, F] @fsdp, bf16> -> !stg.token<!stg.tensor<[H/fsdp, F], bf16>>
  %r3 = stg.wait %t3 : !stg.token<!stg.tensor<[H/fsdp, F], bf16>>
  %c3 = stg.elementwise cast %r3 : !stg.tensor<[H/fsdp, F], bf16> -> !stg.tensor<[H/fsdp, F], f32>
  stg.assign %c3 to "grad" of "w1" layer 0 of 2 : !stg.tensor<[H/fsdp, F], f32>
  %z = stg.elementwise silu %y : !stg.tensor<[B/fsdp, F], bf16> -> !stg.tensor<[B/fsdp, F], bf16>
  func.return %z : !stg.tensor<[B/fsdp, F], bf16>
}

// CHECK-LABEL: func.func @backward
// CHECK-NEXT:    %t1 = stg.reduce_scatter %g1
// CHECK-NEXT:    %t2 = stg.reduce_scatter %g2
// CHECK-NEXT:    %y = stg.einsum
// CHECK-NEXT:    %r1 = stg.wait %t1
// CHECK-NEXT:    %c1 = stg.elementwise cast %r1
// CHECK-NEXT:    stg.assign %c1 to "grad" of "w1" layer 1 of 2
// CHECK-NEXT:    %r2 = stg.wait %t2
// CHECK-NEXT:    %c2 = stg.elementwise cast %r2
// CHECK-NEXT:    stg.assign %c2 to "grad" of "w2" layer 1 of 2
// CHECK-NEXT:    %t3 = stg.reduce_scatter %g1
// CHECK-NEXT:    %z = stg.elementwise silu %y
// CHECK-NEXT:    %r3 = stg.wait %t3
// CHECK-NEXT:    %c3 = stg.elementwise cast %r3
// CHECK-NEXT:    stg.assign %c3 to "grad" of "w1" layer 0 of 2
// CHECK-NEXT:    func.return %z

// TWO-LABEL: func.func @backward
// TWO-NEXT:    %t1 = stg.reduce_scatter %g1
// TWO-NEXT:    %t2 = stg.reduce_scatter %g2
// TWO-NEXT:    %y = stg.einsum
// TWO-NEXT:    %t3 = stg.reduce_scatter %g1
// TWO-NEXT:    %z = stg.elementwise silu %y
// TWO-NEXT:    %r1 = stg.wait %t1
// TWO:         %r3 = stg.wait %t3
// TWO:         func.return %z

// -----

// Accumulation over micro-batches: the chain reads the accumulated gradient and adds
// to it; it moves as one, the read of the gradient with it. It never passes an op touching its state: the read of
// "grad" of "w1" by the clip below stops it there.

stg.mesh @m [fsdp = 2]
func.func @accumulate(%g1: !stg.tensor<[H, F] @fsdp, bf16>, %x: !stg.tensor<[B/fsdp, H], bf16>, %w: !stg.tensor<[H, F], bf16>) -> !stg.tensor<[H/fsdp, F], f32> attributes {stg.scheduled} {
  %t1 = stg.reduce_scatter %g1 on @m [fsdp] async stream "fsdp" : !stg.tensor<[H, F] @fsdp, bf16> -> !stg.token<!stg.tensor<[H/fsdp, F], bf16>>
  %r1 = stg.wait %t1 : !stg.token<!stg.tensor<[H/fsdp, F], bf16>>
  %c1 = stg.elementwise cast %r1 : !stg.tensor<[H/fsdp, F], bf16> -> !stg.tensor<[H/fsdp, F], f32>
  %acc = stg.optimizer_state "grad" of "w1" : !stg.tensor<[H/fsdp, F], f32>
  %s1 = stg.elementwise add %acc, %c1 : !stg.tensor<[H/fsdp, F], f32>, !stg.tensor<[H/fsdp, F], f32> -> !stg.tensor<[H/fsdp, F], f32>
  stg.assign %s1 to "grad" of "w1" : !stg.tensor<[H/fsdp, F], f32>
  %y = stg.einsum "bh,hf->bf" %x, %w : !stg.tensor<[B/fsdp, H], bf16>, !stg.tensor<[H, F], bf16> -> !stg.tensor<[B/fsdp, F], bf16>
  %again = stg.optimizer_state "grad" of "w1" : !stg.tensor<[H/fsdp, F], f32>
  %z = stg.elementwise silu %y : !stg.tensor<[B/fsdp, F], bf16> -> !stg.tensor<[B/fsdp, F], bf16>
  func.return %again : !stg.tensor<[H/fsdp, F], f32>
}

// CHECK-LABEL: func.func @accumulate
// CHECK-NEXT:    %t1 = stg.reduce_scatter %g1
// CHECK-NEXT:    %y = stg.einsum
// CHECK-NEXT:    %r1 = stg.wait %t1
// CHECK-NEXT:    %c1 = stg.elementwise cast %r1
// CHECK-NEXT:    %acc = stg.optimizer_state "grad" of "w1"
// CHECK-NEXT:    %s1 = stg.elementwise add %acc, %c1
// CHECK-NEXT:    stg.assign %s1 to "grad" of "w1"
// CHECK-NEXT:    %again = stg.optimizer_state "grad" of "w1"
// CHECK-NEXT:    %z = stg.elementwise silu %y

// -----

// Not a gradient's reduction, left alone: an all-reduce whose result is used as an
// activation, and a ready bucket (issued by hooks, waited for by the optimizer).

stg.mesh @m [tp = 2]
func.func @others(%p: !stg.tensor<[B, H] @tp, bf16>, %x: !stg.tensor<[B, H], bf16>) -> !stg.tensor<[B, H], bf16> attributes {stg.scheduled} {
  %t = stg.all_reduce %p on @m [tp] async stream "tp" : !stg.tensor<[B, H] @tp, bf16> -> !stg.token<!stg.tensor<[B, H], bf16>>
  %r = stg.wait %t : !stg.token<!stg.tensor<[B, H], bf16>>
  %s = stg.elementwise silu %r : !stg.tensor<[B, H], bf16> -> !stg.tensor<[B, H], bf16>
  %y = stg.elementwise silu %x : !stg.tensor<[B, H], bf16> -> !stg.tensor<[B, H], bf16>
  %o = stg.elementwise add %s, %y : !stg.tensor<[B, H], bf16>, !stg.tensor<[B, H], bf16> -> !stg.tensor<[B, H], bf16>
  func.return %o : !stg.tensor<[B, H], bf16>
}

// CHECK-LABEL: func.func @others
// CHECK-NEXT:    %t = stg.all_reduce %p
// CHECK-NEXT:    %r = stg.wait %t
// CHECK-NEXT:    %s = stg.elementwise silu %r
// CHECK-NEXT:    %y = stg.elementwise silu %x

// -----

// Only reductions are deferred: a sequence-parallel all-gather whose result feeds a
// weight gradient's GEMM (and so a "grad" assign) is waited for before its first use,
// where stg-schedule put it; the reduce-scatter after it is deferred to the end.

stg.mesh @m [tp = 2]
func.func @gathered(%x: !stg.tensor<[8/tp, 16], bf16>, %dy: !stg.tensor<[8, 16], bf16>, %g: !stg.tensor<[16, 16] @tp, bf16>) -> !stg.tensor<[8, 16], bf16> attributes {stg.scheduled} {
  %t = stg.all_gather %x on @m [tp] async stream "tp" : !stg.tensor<[8/tp, 16], bf16> -> !stg.token<!stg.tensor<[8, 16], bf16>>
  %xf = stg.wait %t : !stg.token<!stg.tensor<[8, 16], bf16>>
  %dw = stg.einsum "bh,bf->hf" %xf, %dy : !stg.tensor<[8, 16], bf16>, !stg.tensor<[8, 16], bf16> -> !stg.tensor<[16, 16], bf16>
  stg.assign %dw to "grad" of "w" : !stg.tensor<[16, 16], bf16>
  %u = stg.reduce_scatter %g on @m [tp] async stream "tp" : !stg.tensor<[16, 16] @tp, bf16> -> !stg.token<!stg.tensor<[16/tp, 16], bf16>>
  %r = stg.wait %u : !stg.token<!stg.tensor<[16/tp, 16], bf16>>
  stg.assign %r to "grad" of "v" : !stg.tensor<[16/tp, 16], bf16>
  %y = stg.elementwise silu %dy : !stg.tensor<[8, 16], bf16> -> !stg.tensor<[8, 16], bf16>
  func.return %y : !stg.tensor<[8, 16], bf16>
}

// CHECK-LABEL: func.func @gathered
// CHECK-NEXT:    %t = stg.all_gather %x
// CHECK-NEXT:    %xf = stg.wait %t
// CHECK-NEXT:    %dw = stg.einsum "bh,bf->hf" %xf, %dy
// CHECK-NEXT:    stg.assign %dw to "grad" of "w"
// CHECK-NEXT:    %u = stg.reduce_scatter %g
// CHECK-NEXT:    %y = stg.elementwise silu %dy
// CHECK-NEXT:    %r = stg.wait %u
// CHECK-NEXT:    stg.assign %r to "grad" of "v"
// CHECK-NEXT:    func.return %y
