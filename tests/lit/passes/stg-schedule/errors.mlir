// RUN: not stagec-opt %s -p stg-schedule 2>&1 | filecheck %s

// The scheduled form issues collectives, not abstract layout changes.

stg.mesh @m [tp = 2]
func.func @unmatched(%y: !stg.tensor<[B, H] @tp, bf16>) {
  %z = stg.reshard %y on @m : !stg.tensor<[B, H] @tp, bf16> -> !stg.tensor<[B, H], bf16>
  func.return
}

// CHECK: a stg.reshard is left: run stg-match-collectives before stg-schedule
