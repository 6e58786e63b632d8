// RUN: stagec-opt %s -p 'stg-defer-gradient-waits,stg-fsdp2' | filecheck %s

// FSDP2 reduce-scatters a group's gradients as one call (foreach_reduce): layer 1's
// two gradient reduce-scatters, issued together, become one async group at the last
// of them; their waits (deferred to layer 0's burst) take its tokens. Layer 0's one
// reduce-scatter stays a call of its own, and so does the all-reduce of an activation.

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
  func.return %y : !stg.tensor<[B/fsdp, F], bf16>
}

// CHECK-LABEL: func.func @backward
// CHECK-NEXT:    %t1, %t2 = stg.group async stream "fsdp" {
// CHECK-NEXT:      %{{.*}} = stg.reduce_scatter %g1 on @m [fsdp] : !stg.tensor<[H, F] @fsdp, bf16> -> !stg.tensor<[H/fsdp, F], bf16>
// CHECK-NEXT:      %{{.*}} = stg.reduce_scatter %g2 on @m [fsdp] : !stg.tensor<[F, H] @fsdp, bf16> -> !stg.tensor<[F/fsdp, H], bf16>
// CHECK-NEXT:      stg.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %y = stg.einsum
// CHECK-NEXT:    %r1 = stg.wait %t1
// CHECK:         %r2 = stg.wait %t2
// CHECK:         %t3 = stg.reduce_scatter %g1 on @m [fsdp] async stream "fsdp"
// CHECK-NEXT:    %r3 = stg.wait %t3
