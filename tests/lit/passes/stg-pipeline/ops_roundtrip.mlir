// RUN: stagec-opt %s | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-annotate-costs)' | filecheck %s --check-prefix=COST

// What stg-pipeline adds to the dialect: a repeat that runs a slice of a layer stack
// (a stage's layers, `offset ... of <stack size>`), and the all-reduce of a tied
// weight's gradient among the stages holding it.

stg.mesh @m [pp = 4, tp]

func.func @stage2(%x: !stg.tensor<[B, H], f32>, %g: !stg.tensor<[V, H/tp], f32>) -> !stg.tensor<[B, H], f32> {
  %y, %saved = stg.repeat L/4 offset L/2 of L carry(%h = %x : !stg.tensor<[B, H], f32>) {
    %w = stg.param "layers.w" : !stg.tensor<[H, H], f32>
    %h2 = stg.einsum "bh,gh->bg" %h, %w : !stg.tensor<[B, H], f32>, !stg.tensor<[H, H], f32> -> !stg.tensor<[B, H], f32>
    stg.yield %h2, %h : !stg.tensor<[B, H], f32>, !stg.tensor<[B, H], f32>
  }
  %z = stg.repeat L/4 offset 0 of L carry(%h = %y : !stg.tensor<[B, H], f32>) scan(%s = %saved : !stg.tensor<[(L/4), B, H], f32>) reverse {
    stg.yield %h : !stg.tensor<[B, H], f32>
  }
  %whole = stg.repeat L carry(%h = %z : !stg.tensor<[B, H], f32>) {
    stg.yield %h : !stg.tensor<[B, H], f32>
  }
  %numeric = stg.repeat 2 offset 6 of 8 carry(%h = %z : !stg.tensor<[B, H], f32>) {
    stg.yield %h : !stg.tensor<[B, H], f32>
  }
  %sum = stg.all_reduce_stages %g on @m [pp] among [0, 3] : !stg.tensor<[V, H/tp], f32> -> !stg.tensor<[V, H/tp], f32>
  %t = stg.all_reduce_stages %g on @m [pp] among [3, 1, 2] async {note} : !stg.tensor<[V, H/tp], f32> -> !stg.token<!stg.tensor<[V, H/tp], f32>>
  func.return %whole : !stg.tensor<[B, H], f32>
}

// CHECK:      %y, %saved = stg.repeat L/4 offset L/2 of L carry(%h = %x : !stg.tensor<[B, H], f32>) {
// CHECK:        stg.yield %h2, %h : !stg.tensor<[B, H], f32>, !stg.tensor<[B, H], f32>
// CHECK:      %z = stg.repeat L/4 offset 0 of L carry(%h_1 = %y : !stg.tensor<[B, H], f32>) scan(%s = %saved : !stg.tensor<[(L/4), B, H], f32>) reverse {
// CHECK:      %whole = stg.repeat L carry(
// CHECK:      %numeric = stg.repeat 2 offset 6 of 8 carry(
// CHECK:      %sum = stg.all_reduce_stages %g on @m [pp] among [0, 3] : !stg.tensor<[V, H/tp], f32> -> !stg.tensor<[V, H/tp], f32>
// CHECK-NEXT: %t = stg.all_reduce_stages %g on @m [pp] among [3, 1, 2] async {note} : !stg.tensor<[V, H/tp], f32> -> !stg.token<!stg.tensor<[V, H/tp], f32>>

// GENERIC: "stg.repeat"(%x) <{count = #stg.expr<L/4>, operandSegmentSizes = array<i32: 1, 0>, offset = #stg.expr<L/2>, stack = #stg.expr<L>}>
// GENERIC: "stg.all_reduce_stages"(%g) <{mesh = @m, axes = ["pp"], among = [0 : i64, 3 : i64]}>

// Its bytes are the local input, as every all-reduce's (Chakra's comm_size).
// COST: stg.all_reduce_stages %g on @m [pp] among [0, 3] {stg.flops = #stg.expr<0>, stg.bytes = #stg.expr<4*H*V/tp>}
