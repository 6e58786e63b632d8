// RUN: stagec-opt %s | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-annotate-costs)' | filecheck %s --check-prefix=COST

// stg.local_slice: a tensor duplicated over the axes becomes a partition of one dim,
// each rank keeping its own block (stage.md Fig. 6, "Slice*"). The axes go to the
// minor end of the dim's split; partial sums over other axes stay.

stg.mesh @m [dp, tp = 4, cp]

func.func @local_slice(%x: !stg.tensor<[B, S, H], bf16>, %y: !stg.tensor<[B/dp, S, H] @tp, f32>) {
  %s = stg.local_slice %x on @m [tp] : !stg.tensor<[B, S, H], bf16> -> !stg.tensor<[B, S/tp, H], bf16>
  %minor = stg.local_slice %y on @m [cp] : !stg.tensor<[B/dp, S, H] @tp, f32> -> !stg.tensor<[B/dp/cp, S, H] @tp, f32>
  %two = stg.local_slice %x on @m [cp, tp] {note} : !stg.tensor<[B, S, H], bf16> -> !stg.tensor<[B, S, H/cp/tp], bf16>
  func.return
}

// CHECK:      builtin.module {
// CHECK-NEXT:   stg.mesh @m [dp, tp = 4, cp]
// CHECK-NEXT:   func.func @local_slice(%x: !stg.tensor<[B, S, H], bf16>, %y: !stg.tensor<[B/dp, S, H] @tp, f32>) {
// CHECK-NEXT:     %s = stg.local_slice %x on @m [tp] : !stg.tensor<[B, S, H], bf16> -> !stg.tensor<[B, S/tp, H], bf16>
// CHECK-NEXT:     %minor = stg.local_slice %y on @m [cp] : !stg.tensor<[B/dp, S, H] @tp, f32> -> !stg.tensor<[B/dp/cp, S, H] @tp, f32>
// CHECK-NEXT:     %two = stg.local_slice %x on @m [cp, tp] {note} : !stg.tensor<[B, S, H], bf16> -> !stg.tensor<[B, S, H/cp/tp], bf16>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }

// GENERIC: %s = "stg.local_slice"(%x) <{mesh = @m, axes = ["tp"]}> : (!stg.tensor<[B, S, H], bf16>) -> !stg.tensor<[B, S/tp, H], bf16>

// It moves nothing over the network: Chakra's comm_size is 0, and so are its FLOPs.
// COST: stg.local_slice %x on @m [tp] {stg.flops = #stg.expr<0>, stg.bytes = #stg.expr<0>}
