// RUN: stagec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Type-level rules of !stg.tensor, !stg.host and !stg.token, checked as the types
// are built.

// An axis splits two dims.
func.func private @f(!stg.tensor<[B/tp, H/tp], bf16>)

// CHECK: mesh axis 'tp' distributes [B/tp, H/tp] twice; an axis may split one dim or mark a partial sum, not both

// -----

// An axis splits one dim twice.
func.func private @f(!stg.tensor<[B/tp/tp], bf16>)

// CHECK: mesh axis 'tp' distributes [B/tp/tp] twice; an axis may split one dim or mark a partial sum, not both

// -----

// An axis both splits a dim and marks a partial sum.
func.func private @f(!stg.host<[B, H/tp] @tp, f32>)

// CHECK: mesh axis 'tp' distributes [B, H/tp] @tp twice; an axis may split one dim or mark a partial sum, not both

// -----

// A zero size.
func.func private @f(!stg.tensor<[B, 0], bf16>)

// CHECK: dim size 0 of [B, 0] must be positive

// -----

// A negative constant size.
func.func private @f(!stg.tensor<[(1 - 3)/tp], bf16>)

// CHECK: dim size -2 of [(-2)/tp] must be positive

// -----

// A fractional constant size.
func.func private @f(!stg.host<[(1/2)], f32>)

// CHECK: dim size 1/2 of [(1/2)] must be positive

// -----

// An element type that is neither an integer nor a float.
func.func private @f(!stg.tensor<[N], index>)

// CHECK: index is not a tensor element type

// -----

func.func private @f(!stg.host<[N], complex<f32>>)

// CHECK: complex<f32> is not a tensor element type

// -----

// A token carries a tensor, not a scalar type ...
func.func private @f(!stg.token<f32>)

// CHECK: a token carries a !stg.tensor or !stg.host, not f32

// -----

// ... nor another token.
func.func private @f(!stg.token<!stg.token>)

// CHECK: a token carries a !stg.tensor or !stg.host, not !stg.token

// -----

// A lone negative term is never a size, whatever B is.
func.func private @f(!stg.tensor<[(-B), H], f32>)

// CHECK: dim size -B of [(-B), H] must be positive
