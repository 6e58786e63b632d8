// Reshards inside regions are matched too: repeat bodies, phases, micro-batch loops.
// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-match-collectives)' | filecheck %s
// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-match-collectives)' | filecheck %s --check-prefix=NORESHARD

// NORESHARD: builtin.module
// NORESHARD-NOT: stg.reshard

stg.mesh @m [dp, tp]

// CHECK-LABEL: func.func @layers
// CHECK:         %fw = stg.phase forward {
// CHECK-NEXT:      %y = stg.repeat L carry(%h = %x : !stg.tensor<[B/dp, H], f32>) {
// CHECK-NEXT:        %hs = stg.local_slice %h on @m [tp] : !stg.tensor<[B/dp, H], f32> -> !stg.tensor<[B/dp, H/tp], f32>
// CHECK-NEXT:        %p = stg.einsum "bh,hk->bk" %hs, %w : !stg.tensor<[B/dp, H/tp], f32>, !stg.tensor<[H/tp, H], f32> -> !stg.tensor<[B/dp, H] @tp, f32>
// CHECK-NEXT:        %h2 = stg.all_reduce %p on @m [tp] : !stg.tensor<[B/dp, H] @tp, f32> -> !stg.tensor<[B/dp, H], f32>
// CHECK-NEXT:        stg.yield %h2 : !stg.tensor<[B/dp, H], f32>
// CHECK-NEXT:      }
// CHECK-NEXT:      %mb = stg.microbatch M carry(%acc = %y : !stg.tensor<[B/dp, H], f32>) {
// CHECK-NEXT:        %g = stg.all_gather %acc on @m [dp] : !stg.tensor<[B/dp, H], f32> -> !stg.tensor<[B, H], f32>
// CHECK-NEXT:        %s = stg.local_slice %g on @m [dp] : !stg.tensor<[B, H], f32> -> !stg.tensor<[B/dp, H], f32>
// CHECK-NEXT:        stg.yield %s : !stg.tensor<[B/dp, H], f32>
// CHECK-NEXT:      }
// CHECK-NEXT:      stg.yield %mb : !stg.tensor<[B/dp, H], f32>
// CHECK-NEXT:    }
func.func @layers(%x: !stg.tensor<[B/dp, H], f32>, %w: !stg.tensor<[H/tp, H], f32>) -> !stg.tensor<[B/dp, H], f32> {
  %fw = stg.phase forward {
    %y = stg.repeat L carry(%h = %x : !stg.tensor<[B/dp, H], f32>) {
      %hs = stg.reshard %h on @m : !stg.tensor<[B/dp, H], f32> -> !stg.tensor<[B/dp, H/tp], f32>
      %p = stg.einsum "bh,hk->bk" %hs, %w : !stg.tensor<[B/dp, H/tp], f32>, !stg.tensor<[H/tp, H], f32> -> !stg.tensor<[B/dp, H] @tp, f32>
      %h2 = stg.reshard %p on @m : !stg.tensor<[B/dp, H] @tp, f32> -> !stg.tensor<[B/dp, H], f32>
      stg.yield %h2 : !stg.tensor<[B/dp, H], f32>
    }
    %mb = stg.microbatch M carry(%acc = %y : !stg.tensor<[B/dp, H], f32>) {
      %g = stg.reshard %acc on @m : !stg.tensor<[B/dp, H], f32> -> !stg.tensor<[B, H], f32>
      %s = stg.reshard %g on @m : !stg.tensor<[B, H], f32> -> !stg.tensor<[B/dp, H], f32>
      stg.yield %s : !stg.tensor<[B/dp, H], f32>
    }
    stg.yield %mb : !stg.tensor<[B/dp, H], f32>
  }
  func.return %fw : !stg.tensor<[B/dp, H], f32>
}
