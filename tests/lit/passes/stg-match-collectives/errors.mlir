// A reshard that no collectives can do is an error naming the reshard (its place in
// this file) and both layouts. --verify-diagnostics prints each chunk's error and
// goes on.
// RUN: stagec-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(stg-match-collectives)' | filecheck %s
// Without it, the first error ends the run with exit code 2.
// RUN: not stagec-opt %s --split-input-file --pass-pipeline='builtin.module(stg-match-collectives)' 2>&1 | filecheck %s --check-prefix=FIRST

// The consumer wants a partial sum the producer does not hold (a PartialSum push,
// which stage.md §IV-D2 leaves out).
// FIRST: {{^}}{{.*}}errors.mlir:[[# @LINE + 4]]:8: error: pass 'stg-match-collectives' failed: 'stg.reshard' [B/dp, H] -> [B/dp, H] @tp: the consumer is a partial sum over [tp], which the producer is not; no collective makes a partial sum (stage.md §IV-D2: a PartialSum push is not supported){{$}}
// CHECK: {{^}}{{.*}}errors.mlir:[[# @LINE + 3]]:8: error: pass 'stg-match-collectives' failed: 'stg.reshard' [B/dp, H] -> [B/dp, H] @tp: the consumer is a partial sum over [tp], which the producer is not; no collective makes a partial sum (stage.md §IV-D2: a PartialSum push is not supported){{$}}
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>) {
  %r = stg.reshard %x on @m : !stg.tensor<[B/dp, H], f32> -> !stg.tensor<[B/dp, H] @tp, f32>
  func.return
}

// -----

// A partial sum over another axis than the producer's is the same case.
// CHECK: {{^}}{{.*}}errors.mlir:[[# @LINE + 3]]:8: error: pass 'stg-match-collectives' failed: 'stg.reshard' [B, H] @dp -> [B, H] @tp: the consumer is a partial sum over [tp], which the producer is not; no collective makes a partial sum (stage.md §IV-D2: a PartialSum push is not supported){{$}}
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B, H] @dp, f32>) {
  %r = stg.reshard %x on @m : !stg.tensor<[B, H] @dp, f32> -> !stg.tensor<[B, H] @tp, f32>
  func.return
}

// -----

// Inside a region, the error still names the reshard.
// CHECK: {{^}}{{.*}}errors.mlir:[[# @LINE + 4]]:10: error: pass 'stg-match-collectives' failed: 'stg.reshard' [B, H] -> [B, H] @dp*tp: the consumer is a partial sum over [dp, tp], which the producer is not; no collective makes a partial sum (stage.md §IV-D2: a PartialSum push is not supported){{$}}
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B, H], f32>) {
  stg.repeat 2 {
    %r = stg.reshard %x on @m : !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H] @dp*tp, f32>
    stg.yield
  }
  func.return
}
