// RUN: stagec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Layout and shape rules of the compute ops other than einsum: elementwise, reduce,
// softmax, norm, attention, embedding and cross_entropy.

// A binary kind takes two operands ...
stg.mesh @m [dp, tp, sp]
func.func @f(%a: !stg.tensor<[B, H], f32>) {
  %y = stg.elementwise add %a : !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: elementwise add takes 2 operands, not 1

// -----

// ... a unary kind one.
stg.mesh @m [dp, tp, sp]
func.func @f(%a: !stg.tensor<[B, H], f32>) {
  %y = stg.elementwise gelu %a, %a : !stg.tensor<[B, H], f32>, !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: elementwise gelu takes 1 operands, not 2

// -----

// Operands broadcast to the result, so their rank is at most the result's.
stg.mesh @m [dp, tp, sp]
func.func @f(%a: !stg.tensor<[B, S, H], f32>, %b: !stg.tensor<[S, H], f32>) {
  %y = stg.elementwise mul %a, %b : !stg.tensor<[B, S, H], f32>, !stg.tensor<[S, H], f32> -> !stg.tensor<[S, H], f32>
  func.return
}

// CHECK: elementwise mul: operand #0 has a higher rank than the result

// -----

// A size-1 dim broadcasts only when it is whole.
stg.mesh @m [dp, tp, sp]
func.func @f(%a: !stg.tensor<[1/dp, H], f32>, %b: !stg.tensor<[B, H], f32>) {
  %y = stg.elementwise add %a, %b : !stg.tensor<[1/dp, H], f32>, !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: elementwise add: a broadcast dim cannot be split

// -----

// Other sizes must match the result's.
stg.mesh @m [dp, tp, sp]
func.func @f(%a: !stg.tensor<[B, 2*H], f32>) {
  %y = stg.elementwise exp %a : !stg.tensor<[B, 2*H], f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: elementwise exp: operand #0 dim of size 2*H does not broadcast to H

// -----

// Trailing dims line up: [S] against [B, S, H] meets H.
stg.mesh @m [dp, tp, sp]
func.func @f(%a: !stg.tensor<[B, S, H], f32>, %b: !stg.tensor<[S], f32>) {
  %y = stg.elementwise sub %a, %b : !stg.tensor<[B, S, H], f32>, !stg.tensor<[S], f32> -> !stg.tensor<[B, S, H], f32>
  func.return
}

// CHECK: elementwise sub: operand #1 dim of size S does not broadcast to H

// -----

// Operands agree on each dim's split.
stg.mesh @m [dp, tp, sp]
func.func @f(%a: !stg.tensor<[B/dp, H], f32>, %b: !stg.tensor<[B/tp, H], f32>) {
  %y = stg.elementwise max %a, %b : !stg.tensor<[B/dp, H], f32>, !stg.tensor<[B/tp, H], f32> -> !stg.tensor<[B/dp, H], f32>
  func.return
}

// CHECK: elementwise max: result dim 0 is split over [dp] in one operand but over [tp] in operand #1; reshard one of them first

// -----

// One axis cannot split two dims.
stg.mesh @m [dp, tp, sp]
func.func @f(%a: !stg.tensor<[B/dp, H], f32>, %b: !stg.tensor<[B, H/dp], f32>) {
  %y = stg.elementwise min %a, %b : !stg.tensor<[B/dp, H], f32>, !stg.tensor<[B, H/dp], f32> -> !stg.tensor<[B/dp, H], f32>
  func.return
}

// CHECK: elementwise min: mesh axis 'dp' splits both result dim 0 and result dim 1

// -----

// A partial operand cannot be sliced over its partial axis.
stg.mesh @m [dp, tp, sp]
func.func @f(%a: !stg.tensor<[B, H] @tp, f32>, %b: !stg.tensor<[B, H/tp], f32>) {
  %y = stg.elementwise mul %a, %b : !stg.tensor<[B, H] @tp, f32>, !stg.tensor<[B, H/tp], f32> -> !stg.tensor<[B, H/tp], f32>
  func.return
}

// CHECK: elementwise mul: operand #0 ([B, H] @tp) would have to be sliced over [tp] for result dim 1, but it is already distributed over that axis

// -----

// A sum of partial sums is a partial sum only over the same axes.
stg.mesh @m [dp, tp, sp]
func.func @f(%a: !stg.tensor<[B, H] @tp, f32>, %b: !stg.tensor<[B, H], f32>) {
  %y = stg.elementwise add %a, %b : !stg.tensor<[B, H] @tp, f32>, !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H] @tp, f32>
  func.return
}

// CHECK: elementwise add: operands must be partial sums over the same axes ([B, H] @tp vs [B, H])

// -----

// A product has at most one partial factor per axis.
stg.mesh @m [dp, tp, sp]
func.func @f(%a: !stg.tensor<[B, H] @tp, f32>) {
  %y = stg.elementwise rotary %a, %a : !stg.tensor<[B, H] @tp, f32>, !stg.tensor<[B, H] @tp, f32> -> !stg.tensor<[B, H] @tp, f32>
  func.return
}

// CHECK: elementwise rotary: operands #0 and #1 are both partial sums over 'tp'; their product is not a partial sum - all_reduce one first

// -----

// A divisor cannot be a partial sum.
stg.mesh @m [dp, tp, sp]
func.func @f(%a: !stg.tensor<[B, H], f32>, %b: !stg.tensor<[B, H] @dp, f32>) {
  %y = stg.elementwise div %a, %b : !stg.tensor<[B, H], f32>, !stg.tensor<[B, H] @dp, f32> -> !stg.tensor<[B, H] @dp, f32>
  func.return
}

// CHECK: elementwise div: divisor [B, H] @dp is a partial sum over [dp]; this op is not linear, so all_reduce (or reduce_scatter) it first

// -----

// Non-linear kinds take no partial sums.
stg.mesh @m [dp, tp, sp]
func.func @f(%a: !stg.tensor<[B, H] @dp*tp, f32>) {
  %y = stg.elementwise gelu %a : !stg.tensor<[B, H] @dp*tp, f32> -> !stg.tensor<[B, H] @dp*tp, f32>
  func.return
}

// CHECK: elementwise gelu: operand [B, H] @dp*tp is a partial sum over [dp, tp]; this op is not linear, so all_reduce (or reduce_scatter) it first

// -----

stg.mesh @m [dp, tp, sp]
func.func @f(%a: !stg.tensor<[B, H] @tp, f32>, %b: !stg.tensor<[B, H], f32>) {
  %y = stg.elementwise silu_grad %b, %a : !stg.tensor<[B, H], f32>, !stg.tensor<[B, H] @tp, f32> -> !stg.tensor<[B, H] @tp, f32>
  func.return
}

// CHECK: elementwise silu_grad: operand [B, H] @tp is a partial sum over [tp]; this op is not linear, so all_reduce (or reduce_scatter) it first

// -----

// The result is what the op produces: a linear kind keeps the partial sum ...
stg.mesh @m [dp, tp, sp]
func.func @f(%a: !stg.tensor<[B, H] @tp, f32>) {
  %y = stg.elementwise scale %a by 2.0 : !stg.tensor<[B, H] @tp, f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: elementwise scale: result should be [B, H] @tp, not [B, H]

// -----

// ... and the split of a sliced operand.
stg.mesh @m [dp, tp, sp]
func.func @f(%a: !stg.tensor<[B, H/tp], f32>, %b: !stg.tensor<[H], f32>) {
  %y = stg.elementwise add %a, %b : !stg.tensor<[B, H/tp], f32>, !stg.tensor<[H], f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: elementwise add: result should be [B, H/tp], not [B, H]

// -----

// Reduced dims are distinct and in range.
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, S, H], f32>) {
  %y = stg.reduce sum %x dims [3 : i64] : !stg.tensor<[B, S, H], f32> -> !stg.tensor<[B, S, H], f32>
  func.return
}

// CHECK: reduce sum: dims [3] must be distinct and in [0, 3)

// -----

stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, S, H], f32>) {
  %y = stg.reduce mean %x dims [1 : i64, 1 : i64] : !stg.tensor<[B, S, H], f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: reduce mean: dims [1, 1] must be distinct and in [0, 3)

// -----

stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, S, H], f32>) {
  %y = stg.reduce mean %x dims [-1 : i64] : !stg.tensor<[B, S, H], f32> -> !stg.tensor<[B, S], f32>
  func.return
}

// CHECK: reduce mean: dims [-1] must be distinct and in [0, 3)

// -----

// A max over a split dim would be a partial max, which stg cannot express.
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, S/dp, H], f32>) {
  %y = stg.reduce max %x dims [1 : i64] : !stg.tensor<[B, S/dp, H], f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: reduce max: dim 1 of [B, S/dp, H] must not be split (a max cannot be a partial result); all_gather it over [dp] first

// -----

// A max is not linear.
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, H] @tp, f32>) {
  %y = stg.reduce min %x dims [1 : i64] : !stg.tensor<[B, H] @tp, f32> -> !stg.tensor<[B] @tp, f32>
  func.return
}

// CHECK: reduce min: operand [B, H] @tp is a partial sum over [tp]; this op is not linear, so all_reduce (or reduce_scatter) it first

// -----

// A sum over a split dim is a partial sum over its axes.
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, S, H/tp], f32>) {
  %y = stg.reduce sum %x dims [2 : i64] : !stg.tensor<[B, S, H/tp], f32> -> !stg.tensor<[B, S], f32>
  func.return
}

// CHECK: reduce sum: result should be [B, S] @tp, not [B, S]

// -----

// softmax normalises along a dim that exists ...
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, S, S], f32>) {
  %y = stg.softmax %x dim 3 : !stg.tensor<[B, S, S], f32> -> !stg.tensor<[B, S, S], f32>
  func.return
}

// CHECK: softmax: dims [3] must be distinct and in [0, 3)

// -----

// ... and is whole on every rank ...
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, S, S/tp], f32>) {
  %y = stg.softmax %x dim 2 : !stg.tensor<[B, S, S/tp], f32> -> !stg.tensor<[B, S, S/tp], f32>
  func.return
}

// CHECK: softmax: dim 2 of [B, S, S/tp] must not be split (it normalises along it); all_gather it over [tp] first

// -----

// ... of an operand that is not a partial sum.
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, S] @tp, f32>) {
  %y = stg.softmax %x dim 1 : !stg.tensor<[B, S] @tp, f32> -> !stg.tensor<[B, S] @tp, f32>
  func.return
}

// CHECK: softmax: operand [B, S] @tp is a partial sum over [tp]; this op is not linear, so all_reduce (or reduce_scatter) it first

// -----

// The result keeps the input's layout.
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B/dp, S], f32>) {
  %y = stg.softmax %x dim 1 : !stg.tensor<[B/dp, S], f32> -> !stg.tensor<[B, S], f32>
  func.return
}

// CHECK: softmax: result should be [B/dp, S], not [B, S]

// -----

// norm needs a dim to normalise.
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[], f32>, %w: !stg.tensor<[H], f32>) {
  %y = stg.norm rms %x, %w : !stg.tensor<[], f32>, !stg.tensor<[H], f32> -> !stg.tensor<[], f32>
  func.return
}

// CHECK: norm rms: the input needs at least one dim

// -----

// The input is not a partial sum ...
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, H] @tp, f32>, %w: !stg.tensor<[H], f32>) {
  %y = stg.norm rms %x, %w : !stg.tensor<[B, H] @tp, f32>, !stg.tensor<[H], f32> -> !stg.tensor<[B, H] @tp, f32>
  func.return
}

// CHECK: norm rms: operand [B, H] @tp is a partial sum over [tp]; this op is not linear, so all_reduce (or reduce_scatter) it first

// -----

// ... and its last dim is whole.
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, H/tp], f32>, %w: !stg.tensor<[H], f32>) {
  %y = stg.norm layer %x, %w : !stg.tensor<[B, H/tp], f32>, !stg.tensor<[H], f32> -> !stg.tensor<[B, H/tp], f32>
  func.return
}

// CHECK: norm layer: dim 1 of [B, H/tp] must not be split (it normalises along it); all_gather it over [tp] first

// -----

// RMSNorm has no bias.
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, H], f32>, %w: !stg.tensor<[H], f32>) {
  %y = stg.norm rms %x, %w, %w : !stg.tensor<[B, H], f32>, !stg.tensor<[H], f32>, !stg.tensor<[H], f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: norm rms: RMSNorm has no bias

// -----

// The weight is the whole [H] vector: not another size ...
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, H], f32>, %w: !stg.tensor<[2*H], f32>) {
  %y = stg.norm rms %x, %w : !stg.tensor<[B, H], f32>, !stg.tensor<[2*H], f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: norm rms: the weight must be the whole [H] vector, not [2*H]

// -----

// ... nor a split ...
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, H], f32>, %w: !stg.tensor<[H/tp], f32>) {
  %y = stg.norm layer %x, %w : !stg.tensor<[B, H], f32>, !stg.tensor<[H/tp], f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: norm layer: the weight must be the whole [H] vector, not [H/tp]

// -----

// ... nor a matrix.
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, H], f32>, %w: !stg.tensor<[H, H], f32>) {
  %y = stg.norm layer %x, %w : !stg.tensor<[B, H], f32>, !stg.tensor<[H, H], f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: norm layer: the weight must be the whole [H] vector, not [H, H]

// -----

// The same for the bias.
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B, H], f32>, %w: !stg.tensor<[H], f32>, %b: !stg.tensor<[H] @dp, f32>) {
  %y = stg.norm layer %x, %w, %b : !stg.tensor<[B, H], f32>, !stg.tensor<[H], f32>, !stg.tensor<[H] @dp, f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: norm layer: the bias must be the whole [H] vector, not [H] @dp

// -----

// The result keeps the input's layout.
stg.mesh @m [dp, tp, sp]
func.func @f(%x: !stg.tensor<[B/dp, H], f32>, %w: !stg.tensor<[H], f32>) {
  %y = stg.norm rms %x, %w {eps = 1.000000e-05 : f32} : !stg.tensor<[B/dp, H], f32>, !stg.tensor<[H], f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: norm rms: result should be [B/dp, H], not [B, H]

// -----

// attention takes [batch, seq, heads, head_dim] tensors.
stg.mesh @m [dp, tp, sp]
func.func @f(%q: !stg.tensor<[B, S, H], bf16>, %k: !stg.tensor<[B, S, N, D], bf16>) {
  %o = stg.attention %q, %k, %k heads N kv_heads N : !stg.tensor<[B, S, H], bf16>, !stg.tensor<[B, S, N, D], bf16>, !stg.tensor<[B, S, N, D], bf16> -> !stg.tensor<[B, S, N, D], bf16>
  func.return
}

// CHECK: attention: query must be [batch, seq, heads, head_dim], not [B, S, H]

// -----

stg.mesh @m [dp, tp, sp]
func.func @f(%q: !stg.tensor<[B, S, N, D], bf16>, %v: !stg.tensor<[B, S, N], bf16>) {
  %o = stg.attention %q, %q, %v heads N kv_heads N : !stg.tensor<[B, S, N, D], bf16>, !stg.tensor<[B, S, N, D], bf16>, !stg.tensor<[B, S, N], bf16> -> !stg.tensor<[B, S, N, D], bf16>
  func.return
}

// CHECK: attention: value must be [batch, seq, heads, head_dim], not [B, S, N]

// -----

// None of them is a partial sum.
stg.mesh @m [dp, tp, sp]
func.func @f(%q: !stg.tensor<[B, S, N, D], bf16>, %k: !stg.tensor<[B, S, N, D] @tp, bf16>) {
  %o = stg.attention %q, %k, %q heads N kv_heads N : !stg.tensor<[B, S, N, D], bf16>, !stg.tensor<[B, S, N, D] @tp, bf16>, !stg.tensor<[B, S, N, D], bf16> -> !stg.tensor<[B, S, N, D], bf16>
  func.return
}

// CHECK: attention: key [B, S, N, D] @tp is a partial sum over [tp]; this op is not linear, so all_reduce (or reduce_scatter) it first

// -----

// heads and kv_heads are the query's and the key/value's head counts.
stg.mesh @m [dp, tp, sp]
func.func @f(%q: !stg.tensor<[B, S, N, D], bf16>, %k: !stg.tensor<[B, S, KV, D], bf16>) {
  %o = stg.attention %q, %k, %k heads N kv_heads N : !stg.tensor<[B, S, N, D], bf16>, !stg.tensor<[B, S, KV, D], bf16>, !stg.tensor<[B, S, KV, D], bf16> -> !stg.tensor<[B, S, N, D], bf16>
  func.return
}

// CHECK: attention: heads N / kv_heads N do not match the query's N and the key/value's KV/KV heads

// -----

// Query heads form equal groups over the kv heads.
stg.mesh @m [dp, tp, sp]
func.func @f(%q: !stg.tensor<[B, S, 32, D], bf16>, %k: !stg.tensor<[B, S, 5, D], bf16>) {
  %o = stg.attention %q, %k, %k heads 32 kv_heads 5 causal : !stg.tensor<[B, S, 32, D], bf16>, !stg.tensor<[B, S, 5, D], bf16>, !stg.tensor<[B, S, 5, D], bf16> -> !stg.tensor<[B, S, 32, D], bf16>
  func.return
}

// CHECK: attention: 32 heads cannot be grouped over 5 kv heads

// -----

// q, k and v agree on the batch ...
stg.mesh @m [dp, tp, sp]
func.func @f(%q: !stg.tensor<[B, S, N, D], bf16>, %k: !stg.tensor<[2*B, S, N, D], bf16>) {
  %o = stg.attention %q, %k, %k heads N kv_heads N : !stg.tensor<[B, S, N, D], bf16>, !stg.tensor<[2*B, S, N, D], bf16>, !stg.tensor<[2*B, S, N, D], bf16> -> !stg.tensor<[B, S, N, D], bf16>
  func.return
}

// CHECK: attention: q [B, S, N, D], k [2*B, S, N, D] and v [2*B, S, N, D] disagree on batch, key/value sequence or query/key head_dim

// -----

// ... k and v on the sequence, q and k on the head_dim.
stg.mesh @m [dp, tp, sp]
func.func @f(%q: !stg.tensor<[B, S, N, D], bf16>, %k: !stg.tensor<[B, T, N, D], bf16>) {
  %o = stg.attention %q, %k, %q heads N kv_heads N : !stg.tensor<[B, S, N, D], bf16>, !stg.tensor<[B, T, N, D], bf16>, !stg.tensor<[B, S, N, D], bf16> -> !stg.tensor<[B, S, N, D], bf16>
  func.return
}

// CHECK: attention: q [B, S, N, D], k [B, T, N, D] and v [B, S, N, D] disagree on batch, key/value sequence or query/key head_dim

// -----

stg.mesh @m [dp, tp, sp]
func.func @f(%q: !stg.tensor<[B, S, N, D], bf16>, %k: !stg.tensor<[B, S, N, E], bf16>) {
  %o = stg.attention %q, %k, %k heads N kv_heads N : !stg.tensor<[B, S, N, D], bf16>, !stg.tensor<[B, S, N, E], bf16>, !stg.tensor<[B, S, N, E], bf16> -> !stg.tensor<[B, S, N, E], bf16>
  func.return
}

// CHECK: attention: q [B, S, N, D], k [B, S, N, E] and v [B, S, N, E] disagree on batch, key/value sequence or query/key head_dim

// -----

// Key/value heads split over the query heads' axes or a leading part of them (a kv
// head held whole by the ranks of the rest), never over others.
stg.mesh @m [dp, tp, sp]
func.func @f(%q: !stg.tensor<[B, S, N/tp, D], bf16>, %k: !stg.tensor<[B, S, N/dp, D], bf16>) {
  %o = stg.attention %q, %k, %k heads N kv_heads N : !stg.tensor<[B, S, N/tp, D], bf16>, !stg.tensor<[B, S, N/dp, D], bf16>, !stg.tensor<[B, S, N/dp, D], bf16> -> !stg.tensor<[B, S, N/tp, D], bf16>
  func.return
}

// CHECK: attention: the key/value heads must split over the query heads' axes tp or a leading part of them, not dp

// -----

stg.mesh @m [dp, tp, sp]
func.func @f(%q: !stg.tensor<[B, S, N/dp/tp, D], bf16>, %k: !stg.tensor<[B, S, N/tp, D], bf16>) {
  %o = stg.attention %q, %k, %k heads N kv_heads N : !stg.tensor<[B, S, N/dp/tp, D], bf16>, !stg.tensor<[B, S, N/tp, D], bf16>, !stg.tensor<[B, S, N/tp, D], bf16> -> !stg.tensor<[B, S, N/dp/tp, D], bf16>
  func.return
}

// CHECK: attention: the key/value heads must split over the query heads' axes dp, tp or a leading part of them, not tp

// -----

stg.mesh @m [dp, tp, sp]
func.func @f(%q: !stg.tensor<[B/dp, S, N, D], bf16>, %k: !stg.tensor<[B, S, N, D], bf16>) {
  %o = stg.attention %q, %k, %k heads N kv_heads N : !stg.tensor<[B/dp, S, N, D], bf16>, !stg.tensor<[B, S, N, D], bf16>, !stg.tensor<[B, S, N, D], bf16> -> !stg.tensor<[B/dp, S, N, D], bf16>
  func.return
}

// CHECK: attention: q, k and v must split batch, and k and v heads, over the same axes

// -----

// Every query sees the whole key/value sequence.
stg.mesh @m [dp, tp, sp]
func.func @f(%q: !stg.tensor<[B, S, N, D], bf16>, %k: !stg.tensor<[B, S/sp, N, D], bf16>) {
  %o = stg.attention %q, %k, %k heads N kv_heads N : !stg.tensor<[B, S, N, D], bf16>, !stg.tensor<[B, S/sp, N, D], bf16>, !stg.tensor<[B, S/sp, N, D], bf16> -> !stg.tensor<[B, S, N, D], bf16>
  func.return
}

// CHECK: attention: dim 1 of [B, S/sp, N, D] must not be split (every query attends to the whole key sequence); all_gather it over [sp] first

// -----

stg.mesh @m [dp, tp, sp]
func.func @f(%q: !stg.tensor<[B, S, N, D], bf16>, %v: !stg.tensor<[B, S/sp, N, D], bf16>) {
  %o = stg.attention %q, %q, %v heads N kv_heads N : !stg.tensor<[B, S, N, D], bf16>, !stg.tensor<[B, S, N, D], bf16>, !stg.tensor<[B, S/sp, N, D], bf16> -> !stg.tensor<[B, S, N, D], bf16>
  func.return
}

// CHECK: attention: dim 1 of [B, S/sp, N, D] must not be split (every query attends to the whole value sequence); all_gather it over [sp] first

// -----

// The head_dim is whole.
stg.mesh @m [dp, tp, sp]
func.func @f(%q: !stg.tensor<[B, S, N, D/tp], bf16>, %k: !stg.tensor<[B, S, N, D], bf16>) {
  %o = stg.attention %q, %k, %k heads N kv_heads N : !stg.tensor<[B, S, N, D/tp], bf16>, !stg.tensor<[B, S, N, D], bf16>, !stg.tensor<[B, S, N, D], bf16> -> !stg.tensor<[B, S, N, D], bf16>
  func.return
}

// CHECK: attention: dim 3 of [B, S, N, D/tp] must not be split (the query head_dim is contracted or kept whole); all_gather it over [tp] first

// -----

// The result is [b, s, heads, e], split like the query.
stg.mesh @m [dp, tp, sp]
func.func @f(%q: !stg.tensor<[B, S/sp, N, D], bf16>, %k: !stg.tensor<[B, S, N, D], bf16>, %v: !stg.tensor<[B, S, N, E], bf16>) {
  %o = stg.attention %q, %k, %v heads N kv_heads N causal : !stg.tensor<[B, S/sp, N, D], bf16>, !stg.tensor<[B, S, N, D], bf16>, !stg.tensor<[B, S, N, E], bf16> -> !stg.tensor<[B, S/sp, N, D], bf16>
  func.return
}

// CHECK: attention: result should be [B, S/sp, N, E], not [B, S/sp, N, D]

// -----

// The table is [vocab, hidden].
stg.mesh @m [dp, tp, sp]
func.func @f(%t: !stg.tensor<[V, H, 2], bf16>, %i: !stg.tensor<[B], i64>) {
  %e = stg.embedding %t, %i : !stg.tensor<[V, H, 2], bf16>, !stg.tensor<[B], i64> -> !stg.tensor<[B, H], bf16>
  func.return
}

// CHECK: embedding: the table must be [vocab, hidden], not [V, H, 2]

// -----

// Indices are integers.
stg.mesh @m [dp, tp, sp]
func.func @f(%t: !stg.tensor<[V, H], bf16>, %i: !stg.tensor<[B], f32>) {
  %e = stg.embedding %t, %i : !stg.tensor<[V, H], bf16>, !stg.tensor<[B], f32> -> !stg.tensor<[B, H], bf16>
  func.return
}

// CHECK: embedding: indices must have an integer element type, not f32

// -----

// Neither is a partial sum.
stg.mesh @m [dp, tp, sp]
func.func @f(%t: !stg.tensor<[V, H] @tp, bf16>, %i: !stg.tensor<[B], i64>) {
  %e = stg.embedding %t, %i : !stg.tensor<[V, H] @tp, bf16>, !stg.tensor<[B], i64> -> !stg.tensor<[B, H] @tp, bf16>
  func.return
}

// CHECK: embedding: table [V, H] @tp is a partial sum over [tp]; this op is not linear, so all_reduce (or reduce_scatter) it first

// -----

stg.mesh @m [dp, tp, sp]
func.func @f(%t: !stg.tensor<[V, H], bf16>, %i: !stg.tensor<[B] @dp, i64>) {
  %e = stg.embedding %t, %i : !stg.tensor<[V, H], bf16>, !stg.tensor<[B] @dp, i64> -> !stg.tensor<[B, H], bf16>
  func.return
}

// CHECK: embedding: indices [B] @dp is a partial sum over [dp]; this op is not linear, so all_reduce (or reduce_scatter) it first

// -----

// A rank holding a slice of the vocab needs every index.
stg.mesh @m [dp, tp, sp]
func.func @f(%t: !stg.tensor<[V/tp, H], bf16>, %i: !stg.tensor<[B/tp], i64>) {
  %e = stg.embedding %t, %i : !stg.tensor<[V/tp, H], bf16>, !stg.tensor<[B/tp], i64> -> !stg.tensor<[B/tp, H], bf16>
  func.return
}

// CHECK: embedding: the indices [B/tp] may not be split over the table's axes [tp]

// -----

// A vocab split leaves a partial sum over its axes.
stg.mesh @m [dp, tp, sp]
func.func @f(%t: !stg.tensor<[V/tp, H], bf16>, %i: !stg.tensor<[B/dp], i64>) {
  %e = stg.embedding %t, %i : !stg.tensor<[V/tp, H], bf16>, !stg.tensor<[B/dp], i64> -> !stg.tensor<[B/dp, H], bf16>
  func.return
}

// CHECK: embedding: result should be [B/dp, H] @tp, not [B/dp, H]

// -----

// Labels are integers.
stg.mesh @m [dp, tp, sp]
func.func @f(%l: !stg.tensor<[T, V], f32>, %y: !stg.tensor<[T], f32>) {
  %c = stg.cross_entropy %l, %y : !stg.tensor<[T, V], f32>, !stg.tensor<[T], f32> -> !stg.tensor<[], f32>
  func.return
}

// CHECK: cross_entropy: labels must have an integer element type, not f32

// -----

// Logits are not a partial sum.
stg.mesh @m [dp, tp, sp]
func.func @f(%l: !stg.tensor<[T, V] @tp, f32>, %y: !stg.tensor<[T], i64>) {
  %c = stg.cross_entropy %l, %y : !stg.tensor<[T, V] @tp, f32>, !stg.tensor<[T], i64> -> !stg.tensor<[], f32>
  func.return
}

// CHECK: cross_entropy: logits [T, V] @tp is a partial sum over [tp]; this op is not linear, so all_reduce (or reduce_scatter) it first

// -----

// Logits have a vocab dim.
stg.mesh @m [dp, tp, sp]
func.func @f(%l: !stg.tensor<[], f32>, %y: !stg.tensor<[], i64>) {
  %c = stg.cross_entropy %l, %y : !stg.tensor<[], f32>, !stg.tensor<[], i64> -> !stg.tensor<[], f32>
  func.return
}

// CHECK: cross_entropy: logits need a vocab dim


// -----

// Labels match the logits' token dims, in size ...
stg.mesh @m [dp, tp, sp]
func.func @f(%l: !stg.tensor<[B, S, V], f32>, %y: !stg.tensor<[B], i64>) {
  %c = stg.cross_entropy %l, %y : !stg.tensor<[B, S, V], f32>, !stg.tensor<[B], i64> -> !stg.tensor<[], f32>
  func.return
}

// CHECK: cross_entropy: labels [B] must match the logits' token dims [B, S, V]

// -----

// ... and in split.
stg.mesh @m [dp, tp, sp]
func.func @f(%l: !stg.tensor<[B/dp, S, V], f32>, %y: !stg.tensor<[B, S], i64>) {
  %c = stg.cross_entropy %l, %y : !stg.tensor<[B/dp, S, V], f32>, !stg.tensor<[B, S], i64> -> !stg.tensor<[] @dp, f32>
  func.return
}

// CHECK: cross_entropy: labels [B, S] must match the logits' token dims [B/dp, S, V]

// -----

// Ranks holding a slice of the tokens hold a partial loss.
stg.mesh @m [dp, tp, sp]
func.func @f(%l: !stg.tensor<[B/dp, S/sp, V], f32>, %y: !stg.tensor<[B/dp, S/sp], i64>) {
  %c = stg.cross_entropy %l, %y : !stg.tensor<[B/dp, S/sp, V], f32>, !stg.tensor<[B/dp, S/sp], i64> -> !stg.tensor<[] @dp, f32>
  func.return
}

// CHECK: cross_entropy: result should be [] @dp*sp, not [] @dp

// -----

// ... nor over the hidden dim's axes, which the result takes from the table.
stg.mesh @m [dp, tp, sp]
func.func @f(%t: !stg.tensor<[V, H/tp], bf16>, %i: !stg.tensor<[B/tp], i64>) {
  %e = stg.embedding %t, %i : !stg.tensor<[V, H/tp], bf16>, !stg.tensor<[B/tp], i64> -> !stg.tensor<[B/tp, H], bf16>
  func.return
}

// CHECK: embedding: the indices [B/tp] may not be split over the table's axes [tp]

// -----

// Mixed precision is explicit: einsum operands meet in one element type ...
func.func @f(%x: !stg.tensor<[B, H], bf16>, %w: !stg.tensor<[H, F], f32>) {
  %y = stg.einsum "bh,hf->bf" %x, %w : !stg.tensor<[B, H], bf16>, !stg.tensor<[H, F], f32> -> !stg.tensor<[B, F], f32>
  func.return
}

// CHECK: einsum 'bh,hf->bf': operands have different element types (bf16, f32); insert an elementwise cast

// -----

// ... and so do an elementwise op's operands and result (but for cast).
func.func @f(%x: !stg.tensor<[B, H], bf16>) {
  %y = stg.elementwise gelu %x : !stg.tensor<[B, H], bf16> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: elementwise gelu: operands have different element types (bf16, f32); insert an elementwise cast

// -----

func.func @scale_without_factor(%a: !stg.tensor<[B, H], f32>) {
  // expected-error @+1 {{elementwise scale: needs its factor: `scale %x by 0.5`}}
  %y = stg.elementwise scale %a : !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
  func.return
}
// CHECK: elementwise scale: needs its factor: `scale %x by 0.5`

// -----

func.func @factor_on_other_kind(%a: !stg.tensor<[B, H], f32>) {
  // expected-error @+1 {{elementwise exp: takes no `by` scalar}}
  %y = stg.elementwise exp %a by 2.0 : !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
  func.return
}
// CHECK: elementwise exp: takes no `by` scalar
