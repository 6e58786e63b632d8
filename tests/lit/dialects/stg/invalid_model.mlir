// RUN: stagec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Model-specific ops: ssm_scan, moe_dispatch, moe_combine and opaque.

// ssm_scan scans a dim that exists ...
stg.mesh @m [dp, tp, sp, ep]
func.func @f(%x: !stg.tensor<[B, S, D, P], f32>) {
  %h = stg.ssm_scan %x, %x dim 4 : !stg.tensor<[B, S, D, P], f32>, !stg.tensor<[B, S, D, P], f32> -> !stg.tensor<[B, S, D, P], f32>
  func.return
}

// CHECK: ssm_scan: dims [4] must be distinct and in [0, 4)

// -----

// ... with decay and input of one layout: shape ...
stg.mesh @m [dp, tp, sp, ep]
func.func @f(%a: !stg.tensor<[B, S, D, 1], f32>, %x: !stg.tensor<[B, S, D, P], f32>) {
  %h = stg.ssm_scan %a, %x dim 1 : !stg.tensor<[B, S, D, 1], f32>, !stg.tensor<[B, S, D, P], f32> -> !stg.tensor<[B, S, D, P], f32>
  func.return
}

// CHECK: ssm_scan: decay [B, S, D, 1] and input [B, S, D, P] must have one layout

// -----

// ... and split.
stg.mesh @m [dp, tp, sp, ep]
func.func @f(%a: !stg.tensor<[B/dp, S, D, P], f32>, %x: !stg.tensor<[B, S, D, P], f32>) {
  %h = stg.ssm_scan %a, %x dim 1 : !stg.tensor<[B/dp, S, D, P], f32>, !stg.tensor<[B, S, D, P], f32> -> !stg.tensor<[B, S, D, P], f32>
  func.return
}

// CHECK: ssm_scan: decay [B/dp, S, D, P] and input [B, S, D, P] must have one layout

// -----

// The recurrence is not linear in the decay.
stg.mesh @m [dp, tp, sp, ep]
func.func @f(%a: !stg.tensor<[B, S, D, P] @tp, f32>, %x: !stg.tensor<[B, S, D, P], f32>) {
  %h = stg.ssm_scan %a, %x dim 1 : !stg.tensor<[B, S, D, P] @tp, f32>, !stg.tensor<[B, S, D, P], f32> -> !stg.tensor<[B, S, D, P], f32>
  func.return
}

// CHECK: ssm_scan: decay [B, S, D, P] @tp is a partial sum over [tp]; this op is not linear, so all_reduce (or reduce_scatter) it first

// -----

// The scanned dim is whole.
stg.mesh @m [dp, tp, sp, ep]
func.func @f(%x: !stg.tensor<[B, S/sp, D, P], f32>) {
  %h = stg.ssm_scan %x, %x dim 1 : !stg.tensor<[B, S/sp, D, P], f32>, !stg.tensor<[B, S/sp, D, P], f32> -> !stg.tensor<[B, S/sp, D, P], f32>
  func.return
}

// CHECK: ssm_scan: dim 1 of [B, S/sp, D, P] must not be split (the recurrence runs along it); all_gather it over [sp] first

// -----

// The result has the input's layout.
stg.mesh @m [dp, tp, sp, ep]
func.func @f(%x: !stg.tensor<[B, S, D/tp, P], f32>) {
  %h = stg.ssm_scan %x, %x dim 1 : !stg.tensor<[B, S, D/tp, P], f32>, !stg.tensor<[B, S, D/tp, P], f32> -> !stg.tensor<[B, S, D, P], f32>
  func.return
}

// CHECK: ssm_scan: result should be [B, S, D/tp, P], not [B, S, D, P]

// -----

// moe_dispatch: tokens [T, H], scores [T, E], expert buffers [E, C, H].
stg.mesh @m [dp, tp, sp, ep]
func.func @f(%t: !stg.tensor<[T, S, H], bf16>, %s: !stg.tensor<[T, E], f32>) {
  %d = stg.moe_dispatch %t, %s top_k 2 : !stg.tensor<[T, S, H], bf16>, !stg.tensor<[T, E], f32> -> !stg.tensor<[E, C, H], bf16>
  func.return
}

// CHECK: moe_dispatch: expects tokens [T, H], scores [T, E] and expert buffers [E, C, H]; got [T, S, H], [T, E], [E, C, H]

// -----

stg.mesh @m [dp, tp, sp, ep]
func.func @f(%t: !stg.tensor<[T, H], bf16>, %s: !stg.tensor<[T, E], f32>) {
  %d = stg.moe_dispatch %t, %s top_k 2 : !stg.tensor<[T, H], bf16>, !stg.tensor<[T, E], f32> -> !stg.tensor<[E, H], bf16>
  func.return
}

// CHECK: moe_dispatch: expects tokens [T, H], scores [T, E] and expert buffers [E, C, H]; got [T, H], [T, E], [E, H]

// -----

// The sizes agree: tokens ...
stg.mesh @m [dp, tp, sp, ep]
func.func @f(%t: !stg.tensor<[T, H], bf16>, %s: !stg.tensor<[2*T, E], f32>) {
  %d = stg.moe_dispatch %t, %s top_k 2 : !stg.tensor<[T, H], bf16>, !stg.tensor<[2*T, E], f32> -> !stg.tensor<[E, C, H], bf16>
  func.return
}

// CHECK: moe_dispatch: sizes disagree: tokens [T, H], scores [2*T, E], expert buffers [E, C, H]

// -----

// ... experts ...
stg.mesh @m [dp, tp, sp, ep]
func.func @f(%t: !stg.tensor<[T, H], bf16>, %s: !stg.tensor<[T, E], f32>) {
  %d = stg.moe_dispatch %t, %s top_k 2 : !stg.tensor<[T, H], bf16>, !stg.tensor<[T, E], f32> -> !stg.tensor<[8, C, H], bf16>
  func.return
}

// CHECK: moe_dispatch: sizes disagree: tokens [T, H], scores [T, E], expert buffers [8, C, H]

// -----

// ... and hidden.
stg.mesh @m [dp, tp, sp, ep]
func.func @f(%t: !stg.tensor<[T, H], bf16>, %s: !stg.tensor<[T, E], f32>) {
  %d = stg.moe_dispatch %t, %s top_k 2 : !stg.tensor<[T, H], bf16>, !stg.tensor<[T, E], f32> -> !stg.tensor<[E, C, 2*H], bf16>
  func.return
}

// CHECK: moe_dispatch: sizes disagree: tokens [T, H], scores [T, E], expert buffers [E, C, 2*H]

// -----

// Scores split tokens like the tokens ...
stg.mesh @m [dp, tp, sp, ep]
func.func @f(%t: !stg.tensor<[T/dp, H], bf16>, %s: !stg.tensor<[T, E], f32>) {
  %d = stg.moe_dispatch %t, %s top_k 2 : !stg.tensor<[T/dp, H], bf16>, !stg.tensor<[T, E], f32> -> !stg.tensor<[E, C/dp, H], bf16>
  func.return
}

// CHECK: moe_dispatch: scores must split tokens like the tokens do and keep every expert's column

// -----

// ... and keep every expert's column.
stg.mesh @m [dp, tp, sp, ep]
func.func @f(%t: !stg.tensor<[T, H], bf16>, %s: !stg.tensor<[T, E/ep], f32>) {
  %d = stg.moe_dispatch %t, %s top_k 2 : !stg.tensor<[T, H], bf16>, !stg.tensor<[T, E/ep], f32> -> !stg.tensor<[E, C, H], bf16>
  func.return
}

// CHECK: moe_dispatch: scores must split tokens like the tokens do and keep every expert's column

// -----

// Routing keeps every expert's buffer local; all_to_all moves them.
stg.mesh @m [dp, tp, sp, ep]
func.func @f(%t: !stg.tensor<[T, H], bf16>, %s: !stg.tensor<[T, E], f32>) {
  %d = stg.moe_dispatch %t, %s top_k 2 : !stg.tensor<[T, H], bf16>, !stg.tensor<[T, E], f32> -> !stg.tensor<[E/ep, C, H], bf16>
  func.return
}

// CHECK: moe_dispatch: routing works on every expert's buffer locally; move experts across ranks with all_to_all

// -----

// The capacity dim is split like the tokens ...
stg.mesh @m [dp, tp, sp, ep]
func.func @f(%t: !stg.tensor<[T/dp, H], bf16>, %s: !stg.tensor<[T/dp, E], f32>) {
  %d = stg.moe_dispatch %t, %s top_k 2 : !stg.tensor<[T/dp, H], bf16>, !stg.tensor<[T/dp, E], f32> -> !stg.tensor<[E, C, H], bf16>
  func.return
}

// CHECK: moe_dispatch: the capacity dim must be split like the tokens ([T/dp, H]) and hidden alike; got [E, C, H]

// -----

// ... and hidden like hidden.
stg.mesh @m [dp, tp, sp, ep]
func.func @f(%t: !stg.tensor<[T, H/tp], bf16>, %s: !stg.tensor<[T, E], f32>) {
  %d = stg.moe_dispatch %t, %s top_k 2 : !stg.tensor<[T, H/tp], bf16>, !stg.tensor<[T, E], f32> -> !stg.tensor<[E, C, H], bf16>
  func.return
}

// CHECK: moe_dispatch: the capacity dim must be split like the tokens ([T, H/tp]) and hidden alike; got [E, C, H]

// -----

// Routing is not linear in the scores ...
stg.mesh @m [dp, tp, sp, ep]
func.func @f(%t: !stg.tensor<[T, H], bf16>, %s: !stg.tensor<[T, E] @tp, f32>) {
  %d = stg.moe_dispatch %t, %s top_k 2 : !stg.tensor<[T, H], bf16>, !stg.tensor<[T, E] @tp, f32> -> !stg.tensor<[E, C, H], bf16>
  func.return
}

// CHECK: moe_dispatch: scores [T, E] @tp is a partial sum over [tp]; this op is not linear, so all_reduce (or reduce_scatter) it first

// -----

// ... and dispatch takes whole tokens ...
stg.mesh @m [dp, tp, sp, ep]
func.func @f(%t: !stg.tensor<[T, H] @tp, bf16>, %s: !stg.tensor<[T, E], f32>) {
  %d = stg.moe_dispatch %t, %s top_k 2 : !stg.tensor<[T, H] @tp, bf16>, !stg.tensor<[T, E], f32> -> !stg.tensor<[E, C, H], bf16>
  func.return
}

// CHECK: moe_dispatch: tokens [T, H] @tp is a partial sum over [tp]; this op is not linear, so all_reduce (or reduce_scatter) it first

// -----

// ... and gives whole buffers.
stg.mesh @m [dp, tp, sp, ep]
func.func @f(%t: !stg.tensor<[T, H], bf16>, %s: !stg.tensor<[T, E], f32>) {
  %d = stg.moe_dispatch %t, %s top_k 2 : !stg.tensor<[T, H], bf16>, !stg.tensor<[T, E], f32> -> !stg.tensor<[E, C, H] @tp, bf16>
  func.return
}

// CHECK: moe_dispatch: result [E, C, H] @tp is a partial sum over [tp]; this op is not linear, so all_reduce (or reduce_scatter) it first

// -----

// top_k is in [1, experts].
stg.mesh @m [dp, tp, sp, ep]
func.func @f(%t: !stg.tensor<[T, H], bf16>, %s: !stg.tensor<[T, 8], f32>) {
  %d = stg.moe_dispatch %t, %s top_k 9 : !stg.tensor<[T, H], bf16>, !stg.tensor<[T, 8], f32> -> !stg.tensor<[8, C, H], bf16>
  func.return
}

// CHECK: 'stg.moe_dispatch': top_k = 9 must be in [1, 8] (the number of experts)

// -----

stg.mesh @m [dp, tp, sp, ep]
func.func @f(%t: !stg.tensor<[T, H], bf16>, %s: !stg.tensor<[T, E], f32>) {
  %d = stg.moe_dispatch %t, %s top_k 0 : !stg.tensor<[T, H], bf16>, !stg.tensor<[T, E], f32> -> !stg.tensor<[E, C, H], bf16>
  func.return
}

// With a symbolic expert count the bound is the count's expression.
// CHECK: 'stg.moe_dispatch': top_k = 0 must be in [1, E] (the number of experts)

// -----

// moe_combine: the same shape rules, the result being the tokens.
stg.mesh @m [dp, tp, sp, ep]
func.func @f(%e: !stg.tensor<[E, C, H], bf16>, %s: !stg.tensor<[T, E], f32>) {
  %c = stg.moe_combine %e, %s top_k 2 : !stg.tensor<[E, C, H], bf16>, !stg.tensor<[T, E], f32> -> !stg.tensor<[T, 2*H], bf16>
  func.return
}

// CHECK: moe_combine: sizes disagree: tokens [T, 2*H], scores [T, E], expert buffers [E, C, H]

// -----

stg.mesh @m [dp, tp, sp, ep]
func.func @f(%e: !stg.tensor<[E, C/dp, H], bf16>, %s: !stg.tensor<[T, E], f32>) {
  %c = stg.moe_combine %e, %s top_k 2 : !stg.tensor<[E, C/dp, H], bf16>, !stg.tensor<[T, E], f32> -> !stg.tensor<[T, H], bf16>
  func.return
}

// CHECK: moe_combine: the capacity dim must be split like the tokens ([T, H]) and hidden alike; got [E, C/dp, H]

// -----

stg.mesh @m [dp, tp, sp, ep]
func.func @f(%e: !stg.tensor<[E, C, H], bf16>, %s: !stg.tensor<[T, 4], f32>) {
  %c = stg.moe_combine %e, %s top_k 2 : !stg.tensor<[E, C, H], bf16>, !stg.tensor<[T, 4], f32> -> !stg.tensor<[T, H], bf16>
  func.return
}

// CHECK: moe_combine: sizes disagree: tokens [T, H], scores [T, 4], expert buffers [E, C, H]

// -----

stg.mesh @m [dp, tp, sp, ep]
func.func @f(%e: !stg.tensor<[4, C, H], bf16>, %s: !stg.tensor<[T, 4], f32>) {
  %c = stg.moe_combine %e, %s top_k 5 : !stg.tensor<[4, C, H], bf16>, !stg.tensor<[T, 4], f32> -> !stg.tensor<[T, H], bf16>
  func.return
}

// CHECK: 'stg.moe_combine': top_k = 5 must be in [1, 4]

// -----

// The result is a partial sum exactly where the expert outputs are.
stg.mesh @m [dp, tp, sp, ep]
func.func @f(%e: !stg.tensor<[E, C, H] @tp, bf16>, %s: !stg.tensor<[T, E], f32>) {
  %c = stg.moe_combine %e, %s top_k 2 : !stg.tensor<[E, C, H] @tp, bf16>, !stg.tensor<[T, E], f32> -> !stg.tensor<[T, H], bf16>
  func.return
}

// CHECK: moe_combine: the result is a partial sum exactly where the expert outputs are

// -----

// opaque FLOPs and bytes are not negative.
stg.mesh @m [dp, tp, sp, ep]
func.func @f(%x: !stg.tensor<[B], f32>) {
  %y = stg.opaque "k"(%x) flops <-1> bytes <0> : (!stg.tensor<[B], f32>) -> (!stg.tensor<[B], f32>)
  func.return
}

// CHECK: opaque 'k': flops must not be negative, not -1

// -----

stg.mesh @m [dp, tp, sp, ep]
func.func @f(%x: !stg.tensor<[B], f32>) {
  %y = stg.opaque "k"(%x) flops <2> bytes <4 - 8> : (!stg.tensor<[B], f32>) -> (!stg.tensor<[B], f32>)
  func.return
}

// CHECK: opaque 'k': bytes must not be negative, not -4
