// RUN: stagec-opt %s | stagec-opt | filecheck %s

// Trailing size-1 dims may be added or dropped by a reshape (unsqueeze / squeeze at
// the end, as [B, S] -> [B, S, 1] before a broadcast).

stg.mesh @m [dp]
func.func @f(%x: !stg.tensor<[B/dp, S], f32>, %z: !stg.tensor<[B/dp, S, 1], f32>) {
  %y = stg.reshape %x : !stg.tensor<[B/dp, S], f32> -> !stg.tensor<[B/dp, S, 1], f32>
  %w = stg.reshape %z : !stg.tensor<[B/dp, S, 1], f32> -> !stg.tensor<[B/dp, S], f32>
  %v = stg.reshape %x : !stg.tensor<[B/dp, S], f32> -> !stg.tensor<[B/dp, S, 1, 1], f32>
  func.return
}

// CHECK:      %y = stg.reshape %x : !stg.tensor<[B/dp, S], f32> -> !stg.tensor<[B/dp, S, 1], f32>
// CHECK-NEXT: %w = stg.reshape %z : !stg.tensor<[B/dp, S, 1], f32> -> !stg.tensor<[B/dp, S], f32>
// CHECK-NEXT: %v = stg.reshape %x : !stg.tensor<[B/dp, S], f32> -> !stg.tensor<[B/dp, S, 1, 1], f32>
