// RUN: not stagec-opt %s -p stg-reduce-buckets 2>&1 | filecheck %s
// RUN: stagec-opt %s -p 'stg-instantiate{H=64},stg-reduce-buckets' | filecheck %s --check-prefix=BOUND

// Buckets are sized in elements: a gradient whose size is a symbol needs it bound.

stg.mesh @m [fsdp = 2]
func.func @one(%g: !stg.tensor<[H] @fsdp, bf16>, %h: !stg.tensor<[H] @fsdp, bf16>) attributes {stg.scheduled} {
  %t = stg.reduce_scatter %g on @m [fsdp] async stream "fsdp" : !stg.tensor<[H] @fsdp, bf16> -> !stg.token<!stg.tensor<[H/fsdp], bf16>>
  %r = stg.wait %t : !stg.token<!stg.tensor<[H/fsdp], bf16>>
  stg.assign %r to "grad" of "w" : !stg.tensor<[H/fsdp], bf16>
  %u = stg.reduce_scatter %h on @m [fsdp] async stream "fsdp" : !stg.tensor<[H] @fsdp, bf16> -> !stg.token<!stg.tensor<[H/fsdp], bf16>>
  %s = stg.wait %u : !stg.token<!stg.tensor<[H/fsdp], bf16>>
  stg.assign %s to "grad" of "v" : !stg.tensor<[H/fsdp], bf16>
  func.return
}

// CHECK: stg-reduce-buckets counts a gradient's elements
// CHECK-SAME: H
// BOUND:      stg.group async stream "fsdp" {
// BOUND-NEXT:   stg.reduce_scatter %g
// BOUND-NEXT:   stg.reduce_scatter %h
