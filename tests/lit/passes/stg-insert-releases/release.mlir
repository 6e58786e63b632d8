// RUN: stagec-opt %s --split-input-file -p stg-insert-releases | filecheck %s
// RUN: stagec-opt %s --split-input-file -p stg-insert-releases,stg-insert-releases | filecheck %s

// A gathered parameter is released right after its last use; a gathered activation is
// not a parameter's buffer and is left alone.

stg.mesh @m [fsdp = 2]
func.func @layer(%x: !stg.tensor<[B/fsdp, H], bf16>) {
  %w1 = stg.param "w1" : !stg.tensor<[H/fsdp, F], bf16>
  %g1 = stg.all_gather %w1 on @m [fsdp] : !stg.tensor<[H/fsdp, F], bf16> -> !stg.tensor<[H, F], bf16>
  %h = stg.einsum "bh,hf->bf" %x, %g1 : !stg.tensor<[B/fsdp, H], bf16>, !stg.tensor<[H, F], bf16> -> !stg.tensor<[B/fsdp, F], bf16>
  %s = stg.elementwise silu %h : !stg.tensor<[B/fsdp, F], bf16> -> !stg.tensor<[B/fsdp, F], bf16>
  %a = stg.all_gather %s on @m [fsdp] : !stg.tensor<[B/fsdp, F], bf16> -> !stg.tensor<[B, F], bf16>
  func.return
}

// CHECK-LABEL: func.func @layer
// CHECK:         %h = stg.einsum "bh,hf->bf" %x, %g1
// CHECK-NEXT:    stg.release %g1 : !stg.tensor<[H, F], bf16>
// CHECK-NEXT:    %s = stg.elementwise silu %h
// CHECK-NEXT:    %a = stg.all_gather %s
// CHECK-NOT:     stg.release
// CHECK:         func.return

// -----

// The scheduled form: a coalesced unit's buffers are released through their waits,
// each after its own last use; a use inside a loop keeps it alive to the loop's end.

stg.mesh @m [fsdp = 2]
func.func @unit(%x: !stg.tensor<[H], bf16>, %w1: !stg.tensor<[H/fsdp, F], bf16>, %w2: !stg.tensor<[F/fsdp, H], bf16>) attributes {stg.scheduled} {
  %p1 = stg.param "w1" : !stg.tensor<[H/fsdp, F], bf16>
  %p2 = stg.param "w2" : !stg.tensor<[F/fsdp, H], bf16>
  %t1, %t2 = stg.group async stream "fsdp" {
    %0 = stg.all_gather %p1 on @m [fsdp] : !stg.tensor<[H/fsdp, F], bf16> -> !stg.tensor<[H, F], bf16>
    %1 = stg.all_gather %p2 on @m [fsdp] : !stg.tensor<[F/fsdp, H], bf16> -> !stg.tensor<[F, H], bf16>
    stg.yield %0, %1 : !stg.tensor<[H, F], bf16>, !stg.tensor<[F, H], bf16>
  } : !stg.token<!stg.tensor<[H, F], bf16>>, !stg.token<!stg.tensor<[F, H], bf16>>
  %g1 = stg.wait %t1 : !stg.token<!stg.tensor<[H, F], bf16>>
  %f = stg.einsum "h,hf->f" %x, %g1 : !stg.tensor<[H], bf16>, !stg.tensor<[H, F], bf16> -> !stg.tensor<[F], bf16>
  %g2 = stg.wait %t2 : !stg.token<!stg.tensor<[F, H], bf16>>
  %out = stg.repeat 2 carry(%c = %x : !stg.tensor<[H], bf16>) {
    %y = stg.einsum "f,fh->h" %f, %g2 : !stg.tensor<[F], bf16>, !stg.tensor<[F, H], bf16> -> !stg.tensor<[H], bf16>
    stg.yield %y : !stg.tensor<[H], bf16>
  }
  %z = stg.elementwise silu %out : !stg.tensor<[H], bf16> -> !stg.tensor<[H], bf16>
  func.return
}

// CHECK-LABEL: func.func @unit
// CHECK:         %f = stg.einsum "h,hf->f" %x, %g1
// CHECK-NEXT:    stg.release %g1
// CHECK-NEXT:    %g2 = stg.wait %t2
// CHECK-NEXT:    %out = stg.repeat 2
// CHECK:         }
// CHECK-NEXT:    stg.release %g2
// CHECK-NEXT:    %z = stg.elementwise silu %out
