// RUN: stagec-opt %s | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Every type is the argument of a function declaration, so that each prints on a
// line of its own.

stg.mesh @m [dp, tp, cp, sp]

// Unsplit, and one dim split over one axis.
func.func private @unsplit(!stg.tensor<[B, S, H], bf16>)
func.func private @split(!stg.tensor<[B/dp, S/sp, H], bf16>)
// Several axes split one dim, major to minor; the order is kept.
func.func private @split_two_axes(!stg.tensor<[B, 4*H/tp/cp], bf16>)
func.func private @split_two_axes_swapped(!stg.tensor<[B, 4*H/cp/tp], bf16>)
func.func private @split_three_axes(!stg.tensor<[B/dp/sp/cp, H], bf16>)
// Parenthesised sizes: a quotient or a sum is part of the size, not a split.
func.func private @sum_size(!stg.tensor<[(H + 2*D*KV)/tp], bf16>)
func.func private @quotient_size(!stg.tensor<[B, S, N, (H/N)], bf16>)
func.func private @quotient_size_split(!stg.tensor<[(H/N)/tp], bf16>)
func.func private @difference_size(!stg.tensor<[(S - 1)], bf16>)
func.func private @constant_sum(!stg.tensor<[2*(H + 1)], bf16>)
// Redundant parentheses around a product are dropped; constants and products print bare.
func.func private @bare_products(!stg.tensor<[(2*H), H*N, 8, 4*B*S/dp], bf16>)
// Partial sums; several axes print in sorted order, whatever order they are written in.
func.func private @partial(!stg.tensor<[B, H] @tp, bf16>)
func.func private @partial_two(!stg.tensor<[B/sp, H] @tp*dp, bf16>)
func.func private @partial_two_sorted(!stg.tensor<[B/sp, H] @dp*tp, bf16>)
// Scalars.
func.func private @scalar(!stg.tensor<[], f32>)
func.func private @scalar_partial(!stg.tensor<[] @dp, f32>)
// Every element type.
func.func private @bf16(!stg.tensor<[N], bf16>)
func.func private @f16(!stg.tensor<[N], f16>)
func.func private @f32(!stg.tensor<[N], f32>)
func.func private @f64(!stg.tensor<[N], f64>)
func.func private @i64(!stg.tensor<[N], i64>)
func.func private @i32(!stg.tensor<[N], i32>)
func.func private @i1(!stg.tensor<[N], i1>)
// Host tensors share the syntax.
func.func private @host(!stg.host<[B/dp, (H + 2*D*KV)/tp] @sp, bf16>)
func.func private @host_scalar(!stg.host<[], f32>)
// Tokens: bare, or carrying a device or host tensor.
func.func private @token(!stg.token)
func.func private @token_tensor(!stg.token<!stg.tensor<[B, H/tp] @dp, bf16>>)
func.func private @token_host(!stg.token<!stg.host<[B/dp, H], f32>>)

// CHECK:      builtin.module {
// CHECK-NEXT:   stg.mesh @m [dp, tp, cp, sp]
// CHECK-NEXT:   func.func private @unsplit(!stg.tensor<[B, S, H], bf16>) -> ()
// CHECK-NEXT:   func.func private @split(!stg.tensor<[B/dp, S/sp, H], bf16>) -> ()
// CHECK-NEXT:   func.func private @split_two_axes(!stg.tensor<[B, 4*H/tp/cp], bf16>) -> ()
// CHECK-NEXT:   func.func private @split_two_axes_swapped(!stg.tensor<[B, 4*H/cp/tp], bf16>) -> ()
// CHECK-NEXT:   func.func private @split_three_axes(!stg.tensor<[B/dp/sp/cp, H], bf16>) -> ()
// CHECK-NEXT:   func.func private @sum_size(!stg.tensor<[(2*D*KV + H)/tp], bf16>) -> ()
// CHECK-NEXT:   func.func private @quotient_size(!stg.tensor<[B, S, N, (H/N)], bf16>) -> ()
// CHECK-NEXT:   func.func private @quotient_size_split(!stg.tensor<[(H/N)/tp], bf16>) -> ()
// CHECK-NEXT:   func.func private @difference_size(!stg.tensor<[(S - 1)], bf16>) -> ()
// CHECK-NEXT:   func.func private @constant_sum(!stg.tensor<[(2*H + 2)], bf16>) -> ()
// CHECK-NEXT:   func.func private @bare_products(!stg.tensor<[2*H, H*N, 8, 4*B*S/dp], bf16>) -> ()
// CHECK-NEXT:   func.func private @partial(!stg.tensor<[B, H] @tp, bf16>) -> ()
// CHECK-NEXT:   func.func private @partial_two(!stg.tensor<[B/sp, H] @dp*tp, bf16>) -> ()
// CHECK-NEXT:   func.func private @partial_two_sorted(!stg.tensor<[B/sp, H] @dp*tp, bf16>) -> ()
// CHECK-NEXT:   func.func private @scalar(!stg.tensor<[], f32>) -> ()
// CHECK-NEXT:   func.func private @scalar_partial(!stg.tensor<[] @dp, f32>) -> ()
// CHECK-NEXT:   func.func private @bf16(!stg.tensor<[N], bf16>) -> ()
// CHECK-NEXT:   func.func private @f16(!stg.tensor<[N], f16>) -> ()
// CHECK-NEXT:   func.func private @f32(!stg.tensor<[N], f32>) -> ()
// CHECK-NEXT:   func.func private @f64(!stg.tensor<[N], f64>) -> ()
// CHECK-NEXT:   func.func private @i64(!stg.tensor<[N], i64>) -> ()
// CHECK-NEXT:   func.func private @i32(!stg.tensor<[N], i32>) -> ()
// CHECK-NEXT:   func.func private @i1(!stg.tensor<[N], i1>) -> ()
// CHECK-NEXT:   func.func private @host(!stg.host<[B/dp, (2*D*KV + H)/tp] @sp, bf16>) -> ()
// CHECK-NEXT:   func.func private @host_scalar(!stg.host<[], f32>) -> ()
// CHECK-NEXT:   func.func private @token(!stg.token) -> ()
// CHECK-NEXT:   func.func private @token_tensor(!stg.token<!stg.tensor<[B, H/tp] @dp, bf16>>) -> ()
// CHECK-NEXT:   func.func private @token_host(!stg.token<!stg.host<[B/dp, H], f32>>) -> ()
// CHECK-NEXT: }

// GENERIC:      "builtin.module"() ({
// GENERIC-NEXT:   "stg.mesh"()
// GENERIC-NEXT:   "func.func"() <{sym_name = "unsplit", function_type = (!stg.tensor<[B, S, H], bf16>) -> (), sym_visibility = "private"}> ({
// GENERIC-NEXT:   }) : () -> ()
// GENERIC:        "func.func"() <{sym_name = "split_two_axes", function_type = (!stg.tensor<[B, 4*H/tp/cp], bf16>) -> (), sym_visibility = "private"}> ({
// GENERIC:        "func.func"() <{sym_name = "sum_size", function_type = (!stg.tensor<[(2*D*KV + H)/tp], bf16>) -> (), sym_visibility = "private"}> ({
// GENERIC:        "func.func"() <{sym_name = "quotient_size", function_type = (!stg.tensor<[B, S, N, (H/N)], bf16>) -> (), sym_visibility = "private"}> ({
// GENERIC:        "func.func"() <{sym_name = "partial_two", function_type = (!stg.tensor<[B/sp, H] @dp*tp, bf16>) -> (), sym_visibility = "private"}> ({
// GENERIC:        "func.func"() <{sym_name = "scalar_partial", function_type = (!stg.tensor<[] @dp, f32>) -> (), sym_visibility = "private"}> ({
// GENERIC:        "func.func"() <{sym_name = "host", function_type = (!stg.host<[B/dp, (2*D*KV + H)/tp] @sp, bf16>) -> (), sym_visibility = "private"}> ({
// GENERIC:        "func.func"() <{sym_name = "token", function_type = (!stg.token) -> (), sym_visibility = "private"}> ({
// GENERIC:        "func.func"() <{sym_name = "token_tensor", function_type = (!stg.token<!stg.tensor<[B, H/tp] @dp, bf16>>) -> (), sym_visibility = "private"}> ({
// GENERIC:        "func.func"() <{sym_name = "token_host", function_type = (!stg.token<!stg.host<[B/dp, H], f32>>) -> (), sym_visibility = "private"}> ({
// GENERIC-NEXT:   }) : () -> ()
// GENERIC-NEXT: }) : () -> ()
