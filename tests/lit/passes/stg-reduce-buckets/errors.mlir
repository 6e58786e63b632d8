// RUN: not stagec-opt %s -p stg-reduce-buckets 2>&1 | filecheck %s
// RUN: not stagec-opt %s -p 'stg-reduce-buckets{bucket-elements=0}' 2>&1 | filecheck %s --check-prefix=ZERO

// stg-reduce-buckets moves the asynchronous reductions of the scheduled form.

stg.mesh @m [fsdp = 2]
func.func @one(%g: !stg.tensor<[64] @fsdp, bf16>) {
  %r = stg.reduce_scatter %g on @m [fsdp] : !stg.tensor<[64] @fsdp, bf16> -> !stg.tensor<[64/fsdp], bf16>
  stg.assign %r to "grad" of "w" : !stg.tensor<[64/fsdp], bf16>
  func.return
}

// CHECK: stg-reduce-buckets moves asynchronous reductions: run stg-schedule first (a function is not stg.scheduled)
// ZERO: stg-reduce-buckets: bucket-elements=0: a bucket holds at least 1 element
