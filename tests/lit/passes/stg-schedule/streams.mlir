// RUN: stagec-opt %s --split-input-file -p stg-schedule | filecheck %s
// RUN: stagec-opt %s --split-input-file -p stg-schedule,stg-schedule | filecheck %s

// The TP MLP (stage.md Table III): the all-reduce is issued where it stands, on the tp
// communicator's stream; the compute stream waits for it before its first use.

stg.mesh @m [dp = 2, tp = 2]
func.func @mlp(%x: !stg.tensor<[B/dp, H], bf16>, %w1: !stg.tensor<[H, F/tp], bf16>, %w2: !stg.tensor<[F/tp, H], bf16>) {
  %h = stg.einsum "bh,hf->bf" %x, %w1 : !stg.tensor<[B/dp, H], bf16>, !stg.tensor<[H, F/tp], bf16> -> !stg.tensor<[B/dp, F/tp], bf16>
  %y = stg.einsum "bf,fh->bh" %h, %w2 : !stg.tensor<[B/dp, F/tp], bf16>, !stg.tensor<[F/tp, H], bf16> -> !stg.tensor<[B/dp, H] @tp, bf16>
  %z = stg.all_reduce %y on @m [tp] : !stg.tensor<[B/dp, H] @tp, bf16> -> !stg.tensor<[B/dp, H], bf16>
  %u = stg.elementwise silu %x : !stg.tensor<[B/dp, H], bf16> -> !stg.tensor<[B/dp, H], bf16>
  %o = stg.elementwise add %u, %z : !stg.tensor<[B/dp, H], bf16>, !stg.tensor<[B/dp, H], bf16> -> !stg.tensor<[B/dp, H], bf16>
  func.return
}

// CHECK-LABEL: func.func @mlp
// CHECK-SAME:    attributes {stg.scheduled}
// CHECK:         %y = stg.einsum
// CHECK-NEXT:    %z_t = stg.all_reduce %y on @m [tp] async stream "tp" : !stg.tensor<[B/dp, H] @tp, bf16> -> !stg.token<!stg.tensor<[B/dp, H], bf16>>
// CHECK-NEXT:    %u = stg.elementwise silu %x
// CHECK-NEXT:    %z = stg.wait %z_t : !stg.token<!stg.tensor<[B/dp, H], bf16>>
// CHECK-NEXT:    %o = stg.elementwise add %u, %z

// -----

// Streams: one per communicator group, its axes in mesh order; one per peer and
// direction; the copy stream. A send's token is waited for at the end of its block;
// a use inside a loop waits before the loop.

stg.mesh @m [dp = 2, pp = 2, tp = 2]
func.func @streams(%g: !stg.tensor<[H] @dp*tp, f32>, %a: !stg.tensor<[B, H], bf16>) {
  %s = stg.all_reduce %g on @m [tp, dp] : !stg.tensor<[H] @dp*tp, f32> -> !stg.tensor<[H], f32>
  stg.send %a to @m[pp = 1] tag 0 : !stg.tensor<[B, H], bf16>
  %r = stg.recv from @m[pp = 1] tag 1 : !stg.tensor<[B, H], bf16>
  %h = stg.offload %r : !stg.tensor<[B, H], bf16> -> !stg.host<[B, H], bf16>
  %out = stg.repeat L carry(%c = %s : !stg.tensor<[H], f32>) {
    %n = stg.elementwise add %c, %s : !stg.tensor<[H], f32>, !stg.tensor<[H], f32> -> !stg.tensor<[H], f32>
    stg.yield %n : !stg.tensor<[H], f32>
  }
  func.return
}

// CHECK-LABEL: func.func @streams
// CHECK-NEXT:    %s_t = stg.all_reduce %g on @m [tp, dp] async stream "dp,tp"
// CHECK-NEXT:    %{{.*}} = stg.send %a to @m[pp = 1] tag 0 async stream "send:pp=1" : !stg.tensor<[B, H], bf16>
// CHECK-NEXT:    %r_t = stg.recv from @m[pp = 1] tag 1 async stream "recv:pp=1" : !stg.token<!stg.tensor<[B, H], bf16>>
// CHECK-NEXT:    %r = stg.wait %r_t
// CHECK-NEXT:    %h_t = stg.offload %r async stream "copy"
// CHECK-NEXT:    %s = stg.wait %s_t
// CHECK-NEXT:    %out = stg.repeat L carry(%c = %s
// CHECK:         stg.wait %{{.*}} : !stg.token
// CHECK-NEXT:    stg.wait %h_t
// CHECK-NEXT:    func.return

// -----

// A group of collectives is issued as one; its members stay synchronous.

stg.mesh @m [fsdp = 2]
func.func @unit(%w1: !stg.tensor<[H/fsdp, F], bf16>, %w2: !stg.tensor<[F/fsdp, H], bf16>) {
  %g1, %g2 = stg.group {
    %0 = stg.all_gather %w1 on @m [fsdp] : !stg.tensor<[H/fsdp, F], bf16> -> !stg.tensor<[H, F], bf16>
    %1 = stg.all_gather %w2 on @m [fsdp] : !stg.tensor<[F/fsdp, H], bf16> -> !stg.tensor<[F, H], bf16>
    stg.yield %0, %1 : !stg.tensor<[H, F], bf16>, !stg.tensor<[F, H], bf16>
  } : !stg.tensor<[H, F], bf16>, !stg.tensor<[F, H], bf16>
  %y = stg.einsum "hf,fh->h" %g1, %g2 : !stg.tensor<[H, F], bf16>, !stg.tensor<[F, H], bf16> -> !stg.tensor<[H], bf16>
  func.return
}

// CHECK-LABEL: func.func @unit
// CHECK-NEXT:    %g1_t, %g2_t = stg.group async stream "fsdp" {
// CHECK-NEXT:      stg.all_gather %w1 on @m [fsdp] : !stg.tensor<[H/fsdp, F], bf16> -> !stg.tensor<[H, F], bf16>
// CHECK-NEXT:      stg.all_gather %w2 on @m [fsdp] : !stg.tensor<[F/fsdp, H], bf16> -> !stg.tensor<[F, H], bf16>
// CHECK-NEXT:      stg.yield
// CHECK-NEXT:    } : !stg.token<!stg.tensor<[H, F], bf16>>, !stg.token<!stg.tensor<[F, H], bf16>>
// CHECK-NEXT:    %g1 = stg.wait %g1_t
// CHECK-NEXT:    %g2 = stg.wait %g2_t
// CHECK-NEXT:    %y = stg.einsum "hf,fh->h" %g1, %g2

