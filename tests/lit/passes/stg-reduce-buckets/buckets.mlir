// RUN: stagec-opt %s --split-input-file -p 'stg-reduce-buckets{bucket-elements=5000}' | filecheck %s
// RUN: stagec-opt %s --split-input-file -p 'stg-reduce-buckets{bucket-elements=5000},stg-reduce-buckets{bucket-elements=5000}' | filecheck %s --check-prefix=TWICE
// RUN: stagec-opt %s --split-input-file -p 'stg-reduce-buckets{bucket-elements=5000 double-buffer=false}' | filecheck %s --check-prefix=SINGLE
// RUN: stagec-opt %s --split-input-file -p stg-reduce-buckets | filecheck %s --check-prefix=DEFAULT

// Three gradients of [64, 32] = 2048 elements and one of [64] = 64, made in that order
// with compute between. DeepCompile's bucket (reduce_grad, ReduceBucket::shouldFlush:
// flush when the bucket holds something and offset + numel > size):
//   bucket 5000: g1 -> 2048; g2 -> 4096; g3: 4096 + 2048 = 6144 > 5000, flush {g1, g2}
//   before g3 is issued; g3 -> 2048; g4 -> 2112; the end flushes {g3, g4}.
// Double buffer: {g1, g2} is waited for right after {g3, g4} is issued (the compute
// stream copies into the other bucket first); the end waits for the rest.
// SINGLE (no double buffer): each bucket is waited for right after its issue.
// DEFAULT (5e8 elements): all four in one bucket at the end.
// Running it twice changes nothing: a bucket is a group, left as it is.

stg.mesh @m [fsdp = 2]
func.func @backward(%g1: !stg.tensor<[64, 32] @fsdp, bf16>, %g2: !stg.tensor<[64, 32] @fsdp, bf16>, %g3: !stg.tensor<[64, 32] @fsdp, bf16>, %g4: !stg.tensor<[64] @fsdp, bf16>, %x: !stg.tensor<[8, 64], bf16>, %w: !stg.tensor<[64, 64], bf16>) -> !stg.tensor<[8, 64], bf16> attributes {stg.scheduled} {
  %t1 = stg.reduce_scatter %g1 on @m [fsdp] async stream "fsdp" : !stg.tensor<[64, 32] @fsdp, bf16> -> !stg.token<!stg.tensor<[64/fsdp, 32], bf16>>
  %r1 = stg.wait %t1 : !stg.token<!stg.tensor<[64/fsdp, 32], bf16>>
  %c1 = stg.elementwise cast %r1 : !stg.tensor<[64/fsdp, 32], bf16> -> !stg.tensor<[64/fsdp, 32], f32>
  stg.assign %c1 to "grad" of "w1" : !stg.tensor<[64/fsdp, 32], f32>
  %a = stg.einsum "bh,hf->bf" %x, %w : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
  %t2 = stg.reduce_scatter %g2 on @m [fsdp] async stream "fsdp" : !stg.tensor<[64, 32] @fsdp, bf16> -> !stg.token<!stg.tensor<[64/fsdp, 32], bf16>>
  %r2 = stg.wait %t2 : !stg.token<!stg.tensor<[64/fsdp, 32], bf16>>
  %c2 = stg.elementwise cast %r2 : !stg.tensor<[64/fsdp, 32], bf16> -> !stg.tensor<[64/fsdp, 32], f32>
  stg.assign %c2 to "grad" of "w2" : !stg.tensor<[64/fsdp, 32], f32>
  %b = stg.einsum "bh,hf->bf" %a, %w : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
  %t3 = stg.reduce_scatter %g3 on @m [fsdp] async stream "fsdp" : !stg.tensor<[64, 32] @fsdp, bf16> -> !stg.token<!stg.tensor<[64/fsdp, 32], bf16>>
  %r3 = stg.wait %t3 : !stg.token<!stg.tensor<[64/fsdp, 32], bf16>>
  %c3 = stg.elementwise cast %r3 : !stg.tensor<[64/fsdp, 32], bf16> -> !stg.tensor<[64/fsdp, 32], f32>
  stg.assign %c3 to "grad" of "w3" : !stg.tensor<[64/fsdp, 32], f32>
  %c = stg.einsum "bh,hf->bf" %b, %w : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
  %t4 = stg.reduce_scatter %g4 on @m [fsdp] async stream "fsdp" : !stg.tensor<[64] @fsdp, bf16> -> !stg.token<!stg.tensor<[64/fsdp], bf16>>
  %r4 = stg.wait %t4 : !stg.token<!stg.tensor<[64/fsdp], bf16>>
  %c4 = stg.elementwise cast %r4 : !stg.tensor<[64/fsdp], bf16> -> !stg.tensor<[64/fsdp], f32>
  stg.assign %c4 to "grad" of "w4" : !stg.tensor<[64/fsdp], f32>
  %d = stg.elementwise silu %c : !stg.tensor<[8, 64], bf16> -> !stg.tensor<[8, 64], bf16>
  func.return %d : !stg.tensor<[8, 64], bf16>
}

// CHECK-LABEL: func.func @backward
// CHECK-NEXT:    %a = stg.einsum
// CHECK-NEXT:    %b = stg.einsum
// CHECK-NEXT:    %t1, %t2 = stg.group async stream "fsdp" {
// CHECK-NEXT:      stg.reduce_scatter %g1 on @m [fsdp] : !stg.tensor<[64, 32] @fsdp, bf16> -> !stg.tensor<[64/fsdp, 32], bf16>
// CHECK-NEXT:      stg.reduce_scatter %g2 on @m [fsdp]
// CHECK-NEXT:      stg.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %c = stg.einsum
// CHECK-NEXT:    %d = stg.elementwise silu %c
// CHECK-NEXT:    %t3, %t4 = stg.group async stream "fsdp" {
// CHECK-NEXT:      stg.reduce_scatter %g3 on @m [fsdp]
// CHECK-NEXT:      stg.reduce_scatter %g4 on @m [fsdp]
// CHECK-NEXT:      stg.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %r1 = stg.wait %t1
// CHECK-NEXT:    %c1 = stg.elementwise cast %r1
// CHECK-NEXT:    stg.assign %c1 to "grad" of "w1"
// CHECK-NEXT:    %r2 = stg.wait %t2
// CHECK-NEXT:    %c2 = stg.elementwise cast %r2
// CHECK-NEXT:    stg.assign %c2 to "grad" of "w2"
// CHECK-NEXT:    %r3 = stg.wait %t3
// CHECK-NEXT:    %c3 = stg.elementwise cast %r3
// CHECK-NEXT:    stg.assign %c3 to "grad" of "w3"
// CHECK-NEXT:    %r4 = stg.wait %t4
// CHECK-NEXT:    %c4 = stg.elementwise cast %r4
// CHECK-NEXT:    stg.assign %c4 to "grad" of "w4"
// CHECK-NEXT:    func.return %d

// TWICE-LABEL: func.func @backward
// TWICE-NEXT:    %a = stg.einsum
// TWICE-NEXT:    %b = stg.einsum
// TWICE-NEXT:    %t1, %t2 = stg.group async stream "fsdp" {
// TWICE:         %c = stg.einsum
// TWICE-NEXT:    %d = stg.elementwise silu %c
// TWICE-NEXT:    %t3, %t4 = stg.group async stream "fsdp" {
// TWICE:         %r1 = stg.wait %t1
// TWICE:         %r4 = stg.wait %t4
// TWICE:         func.return %d

// SINGLE-LABEL: func.func @backward
// SINGLE-NEXT:    %a = stg.einsum
// SINGLE-NEXT:    %b = stg.einsum
// SINGLE-NEXT:    %t1, %t2 = stg.group async stream "fsdp" {
// SINGLE:         }
// SINGLE-NEXT:    %r1 = stg.wait %t1
// SINGLE-NEXT:    %c1 = stg.elementwise cast %r1
// SINGLE-NEXT:    stg.assign %c1 to "grad" of "w1"
// SINGLE-NEXT:    %r2 = stg.wait %t2
// SINGLE-NEXT:    %c2 = stg.elementwise cast %r2
// SINGLE-NEXT:    stg.assign %c2 to "grad" of "w2"
// SINGLE-NEXT:    %c = stg.einsum
// SINGLE-NEXT:    %d = stg.elementwise silu %c
// SINGLE-NEXT:    %t3, %t4 = stg.group async stream "fsdp" {
// SINGLE:         }
// SINGLE-NEXT:    %r3 = stg.wait %t3
// SINGLE:         %r4 = stg.wait %t4
// SINGLE:         func.return %d

// DEFAULT-LABEL: func.func @backward
// DEFAULT-NEXT:    %a = stg.einsum
// DEFAULT-NEXT:    %b = stg.einsum
// DEFAULT-NEXT:    %c = stg.einsum
// DEFAULT-NEXT:    %d = stg.elementwise silu %c
// DEFAULT-NEXT:    %t1, %t2, %t3, %t4 = stg.group async stream "fsdp" {
// DEFAULT:         %r1 = stg.wait %t1
// DEFAULT:         func.return %d

// -----

// A gradient larger than the bucket is a bucket of its own (reserve: the bucket grows);
// the one before it is flushed first. A bucket of one gradient is a group of one
// (running the pass again leaves it), issued where its bucket is flushed. Accumulation: the read of the accumulated gradient
// moves with its chain. Reductions over another axis, or of another dtype, have their
// own buckets.

stg.mesh @m [fsdp = 2, dp = 2]
func.func @sizes(%g1: !stg.tensor<[64] @fsdp, bf16>, %g2: !stg.tensor<[128, 64] @fsdp, bf16>, %g3: !stg.tensor<[64] @dp, bf16>, %g4: !stg.tensor<[64] @fsdp, f32>, %x: !stg.tensor<[8, 64], bf16>, %w: !stg.tensor<[64, 64], bf16>) -> !stg.tensor<[8, 64], bf16> attributes {stg.scheduled} {
  %t1 = stg.reduce_scatter %g1 on @m [fsdp] async stream "fsdp" : !stg.tensor<[64] @fsdp, bf16> -> !stg.token<!stg.tensor<[64/fsdp], bf16>>
  %r1 = stg.wait %t1 : !stg.token<!stg.tensor<[64/fsdp], bf16>>
  %acc = stg.optimizer_state "grad" of "w1" : !stg.tensor<[64/fsdp], bf16>
  %s1 = stg.elementwise add %acc, %r1 : !stg.tensor<[64/fsdp], bf16>, !stg.tensor<[64/fsdp], bf16> -> !stg.tensor<[64/fsdp], bf16>
  stg.assign %s1 to "grad" of "w1" : !stg.tensor<[64/fsdp], bf16>
  %a = stg.einsum "bh,hf->bf" %x, %w : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
  %t2 = stg.reduce_scatter %g2 on @m [fsdp] async stream "fsdp" : !stg.tensor<[128, 64] @fsdp, bf16> -> !stg.token<!stg.tensor<[128/fsdp, 64], bf16>>
  %r2 = stg.wait %t2 : !stg.token<!stg.tensor<[128/fsdp, 64], bf16>>
  stg.assign %r2 to "grad" of "w2" : !stg.tensor<[128/fsdp, 64], bf16>
  %t3 = stg.all_reduce %g3 on @m [dp] async stream "dp" : !stg.tensor<[64] @dp, bf16> -> !stg.token<!stg.tensor<[64], bf16>>
  %r3 = stg.wait %t3 : !stg.token<!stg.tensor<[64], bf16>>
  stg.assign %r3 to "grad" of "w3" : !stg.tensor<[64], bf16>
  %t4 = stg.reduce_scatter %g4 on @m [fsdp] async stream "fsdp" : !stg.tensor<[64] @fsdp, f32> -> !stg.token<!stg.tensor<[64/fsdp], f32>>
  %r4 = stg.wait %t4 : !stg.token<!stg.tensor<[64/fsdp], f32>>
  stg.assign %r4 to "grad" of "w4" : !stg.tensor<[64/fsdp], f32>
  func.return %a : !stg.tensor<[8, 64], bf16>
}

// CHECK-LABEL: func.func @sizes
// CHECK-NEXT:    %a = stg.einsum
// CHECK-NEXT:    %t1 = stg.group async stream "fsdp" {
// CHECK-NEXT:      stg.reduce_scatter %g1 on @m [fsdp]
// CHECK-NEXT:      stg.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %t2 = stg.group async stream "fsdp" {
// CHECK-NEXT:      stg.reduce_scatter %g2 on @m [fsdp]
// CHECK-NEXT:      stg.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %r1 = stg.wait %t1
// CHECK-NEXT:    %acc = stg.optimizer_state "grad" of "w1"
// CHECK-NEXT:    %s1 = stg.elementwise add %acc, %r1
// CHECK-NEXT:    stg.assign %s1 to "grad" of "w1"
// CHECK-NEXT:    %t3 = stg.group async stream "dp" {
// CHECK-NEXT:      stg.all_reduce %g3 on @m [dp]
// CHECK-NEXT:      stg.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %t4 = stg.group async stream "fsdp" {
// CHECK-NEXT:      stg.reduce_scatter %g4 on @m [fsdp]
// CHECK-NEXT:      stg.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %r2 = stg.wait %t2
// CHECK-NEXT:    stg.assign %r2 to "grad" of "w2"
// CHECK-NEXT:    %r3 = stg.wait %t3
// CHECK-NEXT:    stg.assign %r3 to "grad" of "w3"
// CHECK-NEXT:    %r4 = stg.wait %t4
// CHECK-NEXT:    stg.assign %r4 to "grad" of "w4"
// CHECK-NEXT:    func.return %a

// TWICE-LABEL: func.func @sizes
// TWICE-NEXT:    %a = stg.einsum
// TWICE-NEXT:    %t1 = stg.group async stream "fsdp" {
// TWICE:         %t2 = stg.group async stream "fsdp" {
// TWICE:         %r1 = stg.wait %t1
