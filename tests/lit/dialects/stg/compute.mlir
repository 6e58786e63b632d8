// RUN: stagec-opt %s | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

stg.mesh @m [dp, tp, sp]

// einsum: a split kept index stays split in the result, a split contracted index
// makes the result a partial sum, an operand holding a dim others split is sliced
// locally, and a partial operand passes its partial sum through the product.
func.func @einsum(%x: !stg.tensor<[B/dp, H], bf16>, %w1: !stg.tensor<[H, F/tp], bf16>, %h: !stg.tensor<[B/dp, F/tp], bf16>, %w2: !stg.tensor<[F/tp, H], bf16>, %wh: !stg.tensor<[H/tp, F], bf16>, %y: !stg.tensor<[B/dp, H] @tp, bf16>, %w3: !stg.tensor<[H, F], bf16>, %v: !stg.tensor<[H], bf16>) {
  %column = stg.einsum "bh,hf->bf" %x, %w1 : !stg.tensor<[B/dp, H], bf16>, !stg.tensor<[H, F/tp], bf16> -> !stg.tensor<[B/dp, F/tp], bf16>
  %row = stg.einsum "bf,fh->bh" %h, %w2 : !stg.tensor<[B/dp, F/tp], bf16>, !stg.tensor<[F/tp, H], bf16> -> !stg.tensor<[B/dp, H] @tp, bf16>
  %sliced = stg.einsum "bh,hf->bf" %x, %wh : !stg.tensor<[B/dp, H], bf16>, !stg.tensor<[H/tp, F], bf16> -> !stg.tensor<[B/dp, F] @tp, bf16>
  %partial = stg.einsum "bh,hf->bf" %y, %w3 : !stg.tensor<[B/dp, H] @tp, bf16>, !stg.tensor<[H, F], bf16> -> !stg.tensor<[B/dp, F] @tp, bf16>
  %scalar = stg.einsum "bh,bh,h->" %x, %x, %v : !stg.tensor<[B/dp, H], bf16>, !stg.tensor<[B/dp, H], bf16>, !stg.tensor<[H], bf16> -> !stg.tensor<[] @dp, f32>
  %permuted = stg.einsum "bh->hb" %x {note} : !stg.tensor<[B/dp, H], bf16> -> !stg.tensor<[H, B/dp], bf16>
  func.return
}

// elementwise: every kind, binary (add .. min, rotary, *_grad) and unary (the rest);
// partial sums pass through sums, products with one partial factor, division of a
// partial numerator and the linear unary kinds; trailing-dim and size-1 broadcasting;
// a whole operand is sliced locally to the result's split.
func.func @elementwise(%a: !stg.tensor<[B/dp, S, H/tp], bf16>, %b: !stg.tensor<[B/dp, S, H/tp], bf16>, %p: !stg.tensor<[B/dp, S, H/tp] @sp, bf16>, %q: !stg.tensor<[B/dp, S, H/tp] @sp, bf16>, %v: !stg.tensor<[H/tp], bf16>, %r: !stg.tensor<[B/dp, 1, H/tp], bf16>, %c: !stg.tensor<[H], bf16>) {
  %add = stg.elementwise add %a, %b : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %sub = stg.elementwise sub %a, %b : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %mul = stg.elementwise mul %a, %b : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %div = stg.elementwise div %a, %b : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %max = stg.elementwise max %a, %b : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %min = stg.elementwise min %a, %b : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %rot = stg.elementwise rotary %a, %b : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %g1 = stg.elementwise relu_grad %a, %b : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %g2 = stg.elementwise gelu_grad %a, %b : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %g3 = stg.elementwise silu_grad %a, %b : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %g4 = stg.elementwise sigmoid_grad %a, %b : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %g5 = stg.elementwise tanh_grad %a, %b : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %neg = stg.elementwise neg %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %scale = stg.elementwise scale %a by 5.000000e-01 : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %cast = stg.elementwise cast %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], f32>
  %copy = stg.elementwise copy %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %exp = stg.elementwise exp %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %log = stg.elementwise log %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %sqrt = stg.elementwise sqrt %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %rsqrt = stg.elementwise rsqrt %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %square = stg.elementwise square %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %recip = stg.elementwise reciprocal %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %tanh = stg.elementwise tanh %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %sigmoid = stg.elementwise sigmoid %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %relu = stg.elementwise relu %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %gelu = stg.elementwise gelu %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %silu = stg.elementwise silu %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %drop = stg.elementwise dropout %a {p = 1.000000e-01 : f32} : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %padd = stg.elementwise add %p, %q : !stg.tensor<[B/dp, S, H/tp] @sp, bf16>, !stg.tensor<[B/dp, S, H/tp] @sp, bf16> -> !stg.tensor<[B/dp, S, H/tp] @sp, bf16>
  %pmul = stg.elementwise mul %p, %a : !stg.tensor<[B/dp, S, H/tp] @sp, bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp] @sp, bf16>
  %pdiv = stg.elementwise div %p, %a : !stg.tensor<[B/dp, S, H/tp] @sp, bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp] @sp, bf16>
  %pcast = stg.elementwise cast %p : !stg.tensor<[B/dp, S, H/tp] @sp, bf16> -> !stg.tensor<[B/dp, S, H/tp] @sp, f32>
  %bvec = stg.elementwise add %a, %v : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %bone = stg.elementwise mul %r, %a : !stg.tensor<[B/dp, 1, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  %slice = stg.elementwise add %a, %c : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[H], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
  func.return
}

// reduce: a sum or mean over a split dim is a partial sum over its axes.
func.func @reduce(%x: !stg.tensor<[B/dp, S, H/tp], f32>, %p: !stg.tensor<[B/dp, H] @sp, f32>) {
  %sum = stg.reduce sum %x dims [2 : i64] : !stg.tensor<[B/dp, S, H/tp], f32> -> !stg.tensor<[B/dp, S] @tp, f32>
  %mean = stg.reduce mean %x dims [0 : i64, 1 : i64] : !stg.tensor<[B/dp, S, H/tp], f32> -> !stg.tensor<[H/tp] @dp, f32>
  %max = stg.reduce max %x dims [1 : i64] : !stg.tensor<[B/dp, S, H/tp], f32> -> !stg.tensor<[B/dp, H/tp], f32>
  %min = stg.reduce min %x dims [1 : i64] : !stg.tensor<[B/dp, S, H/tp], f32> -> !stg.tensor<[B/dp, H/tp], f32>
  %all = stg.reduce sum %x dims [0 : i64, 1 : i64, 2 : i64] : !stg.tensor<[B/dp, S, H/tp], f32> -> !stg.tensor<[] @dp*tp, f32>
  %psum = stg.reduce sum %p dims [1 : i64] : !stg.tensor<[B/dp, H] @sp, f32> -> !stg.tensor<[B/dp] @sp, f32>
  %none = stg.reduce sum %x dims [] : !stg.tensor<[B/dp, S, H/tp], f32> -> !stg.tensor<[B/dp, S, H/tp], f32>
  func.return
}

func.func @softmax(%x: !stg.tensor<[B/dp, N/tp, S/sp, S], f32>) {
  %s = stg.softmax %x dim 3 : !stg.tensor<[B/dp, N/tp, S/sp, S], f32> -> !stg.tensor<[B/dp, N/tp, S/sp, S], f32>
  func.return
}

// norm: rms and layer, with and without bias and eps.
func.func @norm(%x: !stg.tensor<[B/dp, S/sp, H], bf16>, %w: !stg.tensor<[H], f32>, %b: !stg.tensor<[H], f32>) {
  %rms = stg.norm rms %x, %w : !stg.tensor<[B/dp, S/sp, H], bf16>, !stg.tensor<[H], f32> -> !stg.tensor<[B/dp, S/sp, H], bf16>
  %rms_eps = stg.norm rms %x, %w {eps = 1.000000e-06 : f32} : !stg.tensor<[B/dp, S/sp, H], bf16>, !stg.tensor<[H], f32> -> !stg.tensor<[B/dp, S/sp, H], bf16>
  %ln = stg.norm layer %x, %w : !stg.tensor<[B/dp, S/sp, H], bf16>, !stg.tensor<[H], f32> -> !stg.tensor<[B/dp, S/sp, H], bf16>
  %ln_bias = stg.norm layer %x, %w, %b : !stg.tensor<[B/dp, S/sp, H], bf16>, !stg.tensor<[H], f32>, !stg.tensor<[H], f32> -> !stg.tensor<[B/dp, S/sp, H], bf16>
  %ln_bias_eps = stg.norm layer %x, %w, %b {eps = 1.000000e-05 : f32} : !stg.tensor<[B/dp, S/sp, H], bf16>, !stg.tensor<[H], f32>, !stg.tensor<[H], f32> -> !stg.tensor<[B/dp, S/sp, H], bf16>
  func.return
}

// attention: MHA, GQA (symbolic and constant heads), MQA and MLA (d != e), causal
// and not; heads split over tp and the query sequence over sp.
func.func @attention(%q: !stg.tensor<[B/dp, S/sp, N/tp, D], bf16>, %k: !stg.tensor<[B/dp, S, N/tp, D], bf16>, %kg: !stg.tensor<[B/dp, S, KV/tp, D], bf16>, %k1: !stg.tensor<[B/dp, S, 1, D], bf16>, %q1: !stg.tensor<[B/dp, S/sp, N, D], bf16>, %ve: !stg.tensor<[B/dp, S, N/tp, E], bf16>, %qc: !stg.tensor<[B, S, 32, 128], bf16>, %kc: !stg.tensor<[B, S, 8, 128], bf16>) {
  %mha = stg.attention %q, %k, %k heads N kv_heads N causal : !stg.tensor<[B/dp, S/sp, N/tp, D], bf16>, !stg.tensor<[B/dp, S, N/tp, D], bf16>, !stg.tensor<[B/dp, S, N/tp, D], bf16> -> !stg.tensor<[B/dp, S/sp, N/tp, D], bf16>
  %mha_full = stg.attention %q, %k, %k heads N kv_heads N : !stg.tensor<[B/dp, S/sp, N/tp, D], bf16>, !stg.tensor<[B/dp, S, N/tp, D], bf16>, !stg.tensor<[B/dp, S, N/tp, D], bf16> -> !stg.tensor<[B/dp, S/sp, N/tp, D], bf16>
  %gqa = stg.attention %q, %kg, %kg heads N kv_heads KV causal : !stg.tensor<[B/dp, S/sp, N/tp, D], bf16>, !stg.tensor<[B/dp, S, KV/tp, D], bf16>, !stg.tensor<[B/dp, S, KV/tp, D], bf16> -> !stg.tensor<[B/dp, S/sp, N/tp, D], bf16>
  %gqa_const = stg.attention %qc, %kc, %kc heads 32 kv_heads 8 causal : !stg.tensor<[B, S, 32, 128], bf16>, !stg.tensor<[B, S, 8, 128], bf16>, !stg.tensor<[B, S, 8, 128], bf16> -> !stg.tensor<[B, S, 32, 128], bf16>
  %mqa = stg.attention %q1, %k1, %k1 heads N kv_heads 1 causal : !stg.tensor<[B/dp, S/sp, N, D], bf16>, !stg.tensor<[B/dp, S, 1, D], bf16>, !stg.tensor<[B/dp, S, 1, D], bf16> -> !stg.tensor<[B/dp, S/sp, N, D], bf16>
  %mla = stg.attention %q, %k, %ve heads N kv_heads N causal {note} : !stg.tensor<[B/dp, S/sp, N/tp, D], bf16>, !stg.tensor<[B/dp, S, N/tp, D], bf16>, !stg.tensor<[B/dp, S, N/tp, E], bf16> -> !stg.tensor<[B/dp, S/sp, N/tp, E], bf16>
  %mla_full = stg.attention %q, %k, %ve heads N kv_heads N : !stg.tensor<[B/dp, S/sp, N/tp, D], bf16>, !stg.tensor<[B/dp, S, N/tp, D], bf16>, !stg.tensor<[B/dp, S, N/tp, E], bf16> -> !stg.tensor<[B/dp, S/sp, N/tp, E], bf16>
  func.return
}

// embedding: a vocab split over tp leaves a partial sum over tp.
func.func @embedding(%t: !stg.tensor<[V/tp, H], bf16>, %u: !stg.tensor<[V, H/tp], bf16>, %ids: !stg.tensor<[B/dp, S], i64>, %ids32: !stg.tensor<[B/dp, S/sp], i32>) {
  %vocab = stg.embedding %t, %ids : !stg.tensor<[V/tp, H], bf16>, !stg.tensor<[B/dp, S], i64> -> !stg.tensor<[B/dp, S, H] @tp, bf16>
  %hidden = stg.embedding %u, %ids32 : !stg.tensor<[V, H/tp], bf16>, !stg.tensor<[B/dp, S/sp], i32> -> !stg.tensor<[B/dp, S/sp, H/tp], bf16>
  func.return
}

// cross_entropy: ranks holding a slice of the tokens hold a partial loss; a split
// vocab (vocab-parallel) is combined inside the op, so it leaves no partial sum.
func.func @cross_entropy(%logits: !stg.tensor<[B/dp, S/sp, V], bf16>, %labels: !stg.tensor<[B/dp, S/sp], i64>, %l2: !stg.tensor<[T, V], f32>, %t2: !stg.tensor<[T], i32>, %l3: !stg.tensor<[B/dp, S, V/tp], bf16>, %t3: !stg.tensor<[B/dp, S], i64>) {
  %split = stg.cross_entropy %logits, %labels : !stg.tensor<[B/dp, S/sp, V], bf16>, !stg.tensor<[B/dp, S/sp], i64> -> !stg.tensor<[] @dp*sp, f32>
  %whole = stg.cross_entropy %l2, %t2 : !stg.tensor<[T, V], f32>, !stg.tensor<[T], i32> -> !stg.tensor<[], f32>
  %vocab = stg.cross_entropy %l3, %t3 : !stg.tensor<[B/dp, S, V/tp], bf16>, !stg.tensor<[B/dp, S], i64> -> !stg.tensor<[] @dp, f32>
  func.return
}

// CHECK:      builtin.module {
// CHECK-NEXT:   stg.mesh @m [dp, tp, sp]
// CHECK-NEXT:   func.func @einsum(%x: !stg.tensor<[B/dp, H], bf16>, %w1: !stg.tensor<[H, F/tp], bf16>, %h: !stg.tensor<[B/dp, F/tp], bf16>, %w2: !stg.tensor<[F/tp, H], bf16>, %wh: !stg.tensor<[H/tp, F], bf16>, %y: !stg.tensor<[B/dp, H] @tp, bf16>, %w3: !stg.tensor<[H, F], bf16>, %v: !stg.tensor<[H], bf16>) {
// CHECK-NEXT:     %column = stg.einsum "bh,hf->bf" %x, %w1 : !stg.tensor<[B/dp, H], bf16>, !stg.tensor<[H, F/tp], bf16> -> !stg.tensor<[B/dp, F/tp], bf16>
// CHECK-NEXT:     %row = stg.einsum "bf,fh->bh" %h, %w2 : !stg.tensor<[B/dp, F/tp], bf16>, !stg.tensor<[F/tp, H], bf16> -> !stg.tensor<[B/dp, H] @tp, bf16>
// CHECK-NEXT:     %sliced = stg.einsum "bh,hf->bf" %x, %wh : !stg.tensor<[B/dp, H], bf16>, !stg.tensor<[H/tp, F], bf16> -> !stg.tensor<[B/dp, F] @tp, bf16>
// CHECK-NEXT:     %partial = stg.einsum "bh,hf->bf" %y, %w3 : !stg.tensor<[B/dp, H] @tp, bf16>, !stg.tensor<[H, F], bf16> -> !stg.tensor<[B/dp, F] @tp, bf16>
// CHECK-NEXT:     %scalar = stg.einsum "bh,bh,h->" %x, %x, %v : !stg.tensor<[B/dp, H], bf16>, !stg.tensor<[B/dp, H], bf16>, !stg.tensor<[H], bf16> -> !stg.tensor<[] @dp, f32>
// CHECK-NEXT:     %permuted = stg.einsum "bh->hb" %x {note} : !stg.tensor<[B/dp, H], bf16> -> !stg.tensor<[H, B/dp], bf16>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @elementwise(%a: !stg.tensor<[B/dp, S, H/tp], bf16>, %b: !stg.tensor<[B/dp, S, H/tp], bf16>, %p: !stg.tensor<[B/dp, S, H/tp] @sp, bf16>, %q: !stg.tensor<[B/dp, S, H/tp] @sp, bf16>, %v: !stg.tensor<[H/tp], bf16>, %r: !stg.tensor<[B/dp, 1, H/tp], bf16>, %c: !stg.tensor<[H], bf16>) {
// CHECK-NEXT:     %add = stg.elementwise add %a, %b : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %sub = stg.elementwise sub %a, %b : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %mul = stg.elementwise mul %a, %b : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %div = stg.elementwise div %a, %b : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %max = stg.elementwise max %a, %b : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %min = stg.elementwise min %a, %b : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %rot = stg.elementwise rotary %a, %b : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %g1 = stg.elementwise relu_grad %a, %b : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %g2 = stg.elementwise gelu_grad %a, %b : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %g3 = stg.elementwise silu_grad %a, %b : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %g4 = stg.elementwise sigmoid_grad %a, %b : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %g5 = stg.elementwise tanh_grad %a, %b : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %neg = stg.elementwise neg %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %scale = stg.elementwise scale %a by 5.000000e-01 : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %cast = stg.elementwise cast %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], f32>
// CHECK-NEXT:     %copy = stg.elementwise copy %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %exp = stg.elementwise exp %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %log = stg.elementwise log %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %sqrt = stg.elementwise sqrt %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %rsqrt = stg.elementwise rsqrt %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %square = stg.elementwise square %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %recip = stg.elementwise reciprocal %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %tanh = stg.elementwise tanh %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %sigmoid = stg.elementwise sigmoid %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %relu = stg.elementwise relu %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %gelu = stg.elementwise gelu %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %silu = stg.elementwise silu %a : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %drop = stg.elementwise dropout %a {p = 1.000000e-01 : f32} : !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %padd = stg.elementwise add %p, %q : !stg.tensor<[B/dp, S, H/tp] @sp, bf16>, !stg.tensor<[B/dp, S, H/tp] @sp, bf16> -> !stg.tensor<[B/dp, S, H/tp] @sp, bf16>
// CHECK-NEXT:     %pmul = stg.elementwise mul %p, %a : !stg.tensor<[B/dp, S, H/tp] @sp, bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp] @sp, bf16>
// CHECK-NEXT:     %pdiv = stg.elementwise div %p, %a : !stg.tensor<[B/dp, S, H/tp] @sp, bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp] @sp, bf16>
// CHECK-NEXT:     %pcast = stg.elementwise cast %p : !stg.tensor<[B/dp, S, H/tp] @sp, bf16> -> !stg.tensor<[B/dp, S, H/tp] @sp, f32>
// CHECK-NEXT:     %bvec = stg.elementwise add %a, %v : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %bone = stg.elementwise mul %r, %a : !stg.tensor<[B/dp, 1, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     %slice = stg.elementwise add %a, %c : !stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[H], bf16> -> !stg.tensor<[B/dp, S, H/tp], bf16>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @reduce(%x: !stg.tensor<[B/dp, S, H/tp], f32>, %p: !stg.tensor<[B/dp, H] @sp, f32>) {
// CHECK-NEXT:     %sum = stg.reduce sum %x dims [2 : i64] : !stg.tensor<[B/dp, S, H/tp], f32> -> !stg.tensor<[B/dp, S] @tp, f32>
// CHECK-NEXT:     %mean = stg.reduce mean %x dims [0 : i64, 1 : i64] : !stg.tensor<[B/dp, S, H/tp], f32> -> !stg.tensor<[H/tp] @dp, f32>
// CHECK-NEXT:     %max = stg.reduce max %x dims [1 : i64] : !stg.tensor<[B/dp, S, H/tp], f32> -> !stg.tensor<[B/dp, H/tp], f32>
// CHECK-NEXT:     %min = stg.reduce min %x dims [1 : i64] : !stg.tensor<[B/dp, S, H/tp], f32> -> !stg.tensor<[B/dp, H/tp], f32>
// CHECK-NEXT:     %all = stg.reduce sum %x dims [0 : i64, 1 : i64, 2 : i64] : !stg.tensor<[B/dp, S, H/tp], f32> -> !stg.tensor<[] @dp*tp, f32>
// CHECK-NEXT:     %psum = stg.reduce sum %p dims [1 : i64] : !stg.tensor<[B/dp, H] @sp, f32> -> !stg.tensor<[B/dp] @sp, f32>
// CHECK-NEXT:     %none = stg.reduce sum %x dims [] : !stg.tensor<[B/dp, S, H/tp], f32> -> !stg.tensor<[B/dp, S, H/tp], f32>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @softmax(%x: !stg.tensor<[B/dp, N/tp, S/sp, S], f32>) {
// CHECK-NEXT:     %s = stg.softmax %x dim 3 : !stg.tensor<[B/dp, N/tp, S/sp, S], f32> -> !stg.tensor<[B/dp, N/tp, S/sp, S], f32>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @norm(%x: !stg.tensor<[B/dp, S/sp, H], bf16>, %w: !stg.tensor<[H], f32>, %b: !stg.tensor<[H], f32>) {
// CHECK-NEXT:     %rms = stg.norm rms %x, %w : !stg.tensor<[B/dp, S/sp, H], bf16>, !stg.tensor<[H], f32> -> !stg.tensor<[B/dp, S/sp, H], bf16>
// CHECK-NEXT:     %rms_eps = stg.norm rms %x, %w {eps = 1.000000e-06 : f32} : !stg.tensor<[B/dp, S/sp, H], bf16>, !stg.tensor<[H], f32> -> !stg.tensor<[B/dp, S/sp, H], bf16>
// CHECK-NEXT:     %ln = stg.norm layer %x, %w : !stg.tensor<[B/dp, S/sp, H], bf16>, !stg.tensor<[H], f32> -> !stg.tensor<[B/dp, S/sp, H], bf16>
// CHECK-NEXT:     %ln_bias = stg.norm layer %x, %w, %b : !stg.tensor<[B/dp, S/sp, H], bf16>, !stg.tensor<[H], f32>, !stg.tensor<[H], f32> -> !stg.tensor<[B/dp, S/sp, H], bf16>
// CHECK-NEXT:     %ln_bias_eps = stg.norm layer %x, %w, %b {eps = 1.000000e-05 : f32} : !stg.tensor<[B/dp, S/sp, H], bf16>, !stg.tensor<[H], f32>, !stg.tensor<[H], f32> -> !stg.tensor<[B/dp, S/sp, H], bf16>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @attention(%q: !stg.tensor<[B/dp, S/sp, N/tp, D], bf16>, %k: !stg.tensor<[B/dp, S, N/tp, D], bf16>, %kg: !stg.tensor<[B/dp, S, KV/tp, D], bf16>, %k1: !stg.tensor<[B/dp, S, 1, D], bf16>, %q1: !stg.tensor<[B/dp, S/sp, N, D], bf16>, %ve: !stg.tensor<[B/dp, S, N/tp, E], bf16>, %qc: !stg.tensor<[B, S, 32, 128], bf16>, %kc: !stg.tensor<[B, S, 8, 128], bf16>) {
// CHECK-NEXT:     %mha = stg.attention %q, %k, %k heads N kv_heads N causal : !stg.tensor<[B/dp, S/sp, N/tp, D], bf16>, !stg.tensor<[B/dp, S, N/tp, D], bf16>, !stg.tensor<[B/dp, S, N/tp, D], bf16> -> !stg.tensor<[B/dp, S/sp, N/tp, D], bf16>
// CHECK-NEXT:     %mha_full = stg.attention %q, %k, %k heads N kv_heads N : !stg.tensor<[B/dp, S/sp, N/tp, D], bf16>, !stg.tensor<[B/dp, S, N/tp, D], bf16>, !stg.tensor<[B/dp, S, N/tp, D], bf16> -> !stg.tensor<[B/dp, S/sp, N/tp, D], bf16>
// CHECK-NEXT:     %gqa = stg.attention %q, %kg, %kg heads N kv_heads KV causal : !stg.tensor<[B/dp, S/sp, N/tp, D], bf16>, !stg.tensor<[B/dp, S, KV/tp, D], bf16>, !stg.tensor<[B/dp, S, KV/tp, D], bf16> -> !stg.tensor<[B/dp, S/sp, N/tp, D], bf16>
// CHECK-NEXT:     %gqa_const = stg.attention %qc, %kc, %kc heads 32 kv_heads 8 causal : !stg.tensor<[B, S, 32, 128], bf16>, !stg.tensor<[B, S, 8, 128], bf16>, !stg.tensor<[B, S, 8, 128], bf16> -> !stg.tensor<[B, S, 32, 128], bf16>
// CHECK-NEXT:     %mqa = stg.attention %q1, %k1, %k1 heads N kv_heads 1 causal : !stg.tensor<[B/dp, S/sp, N, D], bf16>, !stg.tensor<[B/dp, S, 1, D], bf16>, !stg.tensor<[B/dp, S, 1, D], bf16> -> !stg.tensor<[B/dp, S/sp, N, D], bf16>
// CHECK-NEXT:     %mla = stg.attention %q, %k, %ve heads N kv_heads N causal {note} : !stg.tensor<[B/dp, S/sp, N/tp, D], bf16>, !stg.tensor<[B/dp, S, N/tp, D], bf16>, !stg.tensor<[B/dp, S, N/tp, E], bf16> -> !stg.tensor<[B/dp, S/sp, N/tp, E], bf16>
// CHECK-NEXT:     %mla_full = stg.attention %q, %k, %ve heads N kv_heads N : !stg.tensor<[B/dp, S/sp, N/tp, D], bf16>, !stg.tensor<[B/dp, S, N/tp, D], bf16>, !stg.tensor<[B/dp, S, N/tp, E], bf16> -> !stg.tensor<[B/dp, S/sp, N/tp, E], bf16>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @embedding(%t: !stg.tensor<[V/tp, H], bf16>, %u: !stg.tensor<[V, H/tp], bf16>, %ids: !stg.tensor<[B/dp, S], i64>, %ids32: !stg.tensor<[B/dp, S/sp], i32>) {
// CHECK-NEXT:     %vocab = stg.embedding %t, %ids : !stg.tensor<[V/tp, H], bf16>, !stg.tensor<[B/dp, S], i64> -> !stg.tensor<[B/dp, S, H] @tp, bf16>
// CHECK-NEXT:     %hidden = stg.embedding %u, %ids32 : !stg.tensor<[V, H/tp], bf16>, !stg.tensor<[B/dp, S/sp], i32> -> !stg.tensor<[B/dp, S/sp, H/tp], bf16>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @cross_entropy(%logits: !stg.tensor<[B/dp, S/sp, V], bf16>, %labels: !stg.tensor<[B/dp, S/sp], i64>, %l2: !stg.tensor<[T, V], f32>, %t2: !stg.tensor<[T], i32>, %l3: !stg.tensor<[B/dp, S, V/tp], bf16>, %t3: !stg.tensor<[B/dp, S], i64>) {
// CHECK-NEXT:     %split = stg.cross_entropy %logits, %labels : !stg.tensor<[B/dp, S/sp, V], bf16>, !stg.tensor<[B/dp, S/sp], i64> -> !stg.tensor<[] @dp*sp, f32>
// CHECK-NEXT:     %whole = stg.cross_entropy %l2, %t2 : !stg.tensor<[T, V], f32>, !stg.tensor<[T], i32> -> !stg.tensor<[], f32>
// CHECK-NEXT:     %vocab = stg.cross_entropy %l3, %t3 : !stg.tensor<[B/dp, S, V/tp], bf16>, !stg.tensor<[B/dp, S], i64> -> !stg.tensor<[] @dp, f32>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }

// GENERIC:      "builtin.module"() ({
// GENERIC-NEXT:   "stg.mesh"() <{sym_name = "m", axes = ["dp", "tp", "sp"], sizes = [#stg.expr<dp>, #stg.expr<tp>, #stg.expr<sp>]}> : () -> ()
// GENERIC-NEXT:   "func.func"() <{sym_name = "einsum", function_type = (!stg.tensor<[B/dp, H], bf16>, !stg.tensor<[H, F/tp], bf16>, !stg.tensor<[B/dp, F/tp], bf16>, !stg.tensor<[F/tp, H], bf16>, !stg.tensor<[H/tp, F], bf16>, !stg.tensor<[B/dp, H] @tp, bf16>, !stg.tensor<[H, F], bf16>, !stg.tensor<[H], bf16>) -> ()}> ({
// GENERIC:          %column = "stg.einsum"(%x, %w1) <{equation = "bh,hf->bf"}> : (!stg.tensor<[B/dp, H], bf16>, !stg.tensor<[H, F/tp], bf16>) -> !stg.tensor<[B/dp, F/tp], bf16>
// GENERIC:          "func.return"() : () -> ()
// GENERIC:          %add = "stg.elementwise"(%a, %b) <{kind = #stg<elementwise_kind add>}> : (!stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %sub = "stg.elementwise"(%a, %b) <{kind = #stg<elementwise_kind sub>}> : (!stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %mul = "stg.elementwise"(%a, %b) <{kind = #stg<elementwise_kind mul>}> : (!stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %div = "stg.elementwise"(%a, %b) <{kind = #stg<elementwise_kind div>}> : (!stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %max = "stg.elementwise"(%a, %b) <{kind = #stg<elementwise_kind max>}> : (!stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %min = "stg.elementwise"(%a, %b) <{kind = #stg<elementwise_kind min>}> : (!stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %rot = "stg.elementwise"(%a, %b) <{kind = #stg<elementwise_kind rotary>}> : (!stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %g1 = "stg.elementwise"(%a, %b) <{kind = #stg<elementwise_kind relu_grad>}> : (!stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %g2 = "stg.elementwise"(%a, %b) <{kind = #stg<elementwise_kind gelu_grad>}> : (!stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %g3 = "stg.elementwise"(%a, %b) <{kind = #stg<elementwise_kind silu_grad>}> : (!stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %g4 = "stg.elementwise"(%a, %b) <{kind = #stg<elementwise_kind sigmoid_grad>}> : (!stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %g5 = "stg.elementwise"(%a, %b) <{kind = #stg<elementwise_kind tanh_grad>}> : (!stg.tensor<[B/dp, S, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %neg = "stg.elementwise"(%a) <{kind = #stg<elementwise_kind neg>}> : (!stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %scale = "stg.elementwise"(%a) <{kind = #stg<elementwise_kind scale>, scalar = 5.000000e-01 : f64}> : (!stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %cast = "stg.elementwise"(%a) <{kind = #stg<elementwise_kind cast>}> : (!stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], f32>
// GENERIC-NEXT:     %copy = "stg.elementwise"(%a) <{kind = #stg<elementwise_kind copy>}> : (!stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %exp = "stg.elementwise"(%a) <{kind = #stg<elementwise_kind exp>}> : (!stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %log = "stg.elementwise"(%a) <{kind = #stg<elementwise_kind log>}> : (!stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %sqrt = "stg.elementwise"(%a) <{kind = #stg<elementwise_kind sqrt>}> : (!stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %rsqrt = "stg.elementwise"(%a) <{kind = #stg<elementwise_kind rsqrt>}> : (!stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %square = "stg.elementwise"(%a) <{kind = #stg<elementwise_kind square>}> : (!stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %recip = "stg.elementwise"(%a) <{kind = #stg<elementwise_kind reciprocal>}> : (!stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %tanh = "stg.elementwise"(%a) <{kind = #stg<elementwise_kind tanh>}> : (!stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %sigmoid = "stg.elementwise"(%a) <{kind = #stg<elementwise_kind sigmoid>}> : (!stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %relu = "stg.elementwise"(%a) <{kind = #stg<elementwise_kind relu>}> : (!stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %gelu = "stg.elementwise"(%a) <{kind = #stg<elementwise_kind gelu>}> : (!stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %silu = "stg.elementwise"(%a) <{kind = #stg<elementwise_kind silu>}> : (!stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC-NEXT:     %drop = "stg.elementwise"(%a) <{kind = #stg<elementwise_kind dropout>}> {p = 1.000000e-01 : f32} : (!stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC:          %pmul = "stg.elementwise"(%p, %a) <{kind = #stg<elementwise_kind mul>}> : (!stg.tensor<[B/dp, S, H/tp] @sp, bf16>, !stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp] @sp, bf16>
// GENERIC:          %bone = "stg.elementwise"(%r, %a) <{kind = #stg<elementwise_kind mul>}> : (!stg.tensor<[B/dp, 1, H/tp], bf16>, !stg.tensor<[B/dp, S, H/tp], bf16>) -> !stg.tensor<[B/dp, S, H/tp], bf16>
// GENERIC:          %sum = "stg.reduce"(%x) <{kind = #stg<reduce_kind sum>, dims = [2 : i64]}> : (!stg.tensor<[B/dp, S, H/tp], f32>) -> !stg.tensor<[B/dp, S] @tp, f32>
// GENERIC-NEXT:     %mean = "stg.reduce"(%x) <{kind = #stg<reduce_kind mean>, dims = [0 : i64, 1 : i64]}> : (!stg.tensor<[B/dp, S, H/tp], f32>) -> !stg.tensor<[H/tp] @dp, f32>
// GENERIC-NEXT:     %max = "stg.reduce"(%x) <{kind = #stg<reduce_kind max>, dims = [1 : i64]}> : (!stg.tensor<[B/dp, S, H/tp], f32>) -> !stg.tensor<[B/dp, H/tp], f32>
// GENERIC-NEXT:     %min = "stg.reduce"(%x) <{kind = #stg<reduce_kind min>, dims = [1 : i64]}> : (!stg.tensor<[B/dp, S, H/tp], f32>) -> !stg.tensor<[B/dp, H/tp], f32>
// GENERIC:          %s = "stg.softmax"(%x) <{dim = 3 : i64}> : (!stg.tensor<[B/dp, N/tp, S/sp, S], f32>) -> !stg.tensor<[B/dp, N/tp, S/sp, S], f32>
// GENERIC:          %rms = "stg.norm"(%x, %w) <{kind = #stg<norm_kind rms>, operandSegmentSizes = array<i32: 1, 1, 0>}> : (!stg.tensor<[B/dp, S/sp, H], bf16>, !stg.tensor<[H], f32>) -> !stg.tensor<[B/dp, S/sp, H], bf16>
// GENERIC-NEXT:     %rms_eps = "stg.norm"(%x, %w) <{kind = #stg<norm_kind rms>, eps = 1.000000e-06 : f32, operandSegmentSizes = array<i32: 1, 1, 0>}> : (!stg.tensor<[B/dp, S/sp, H], bf16>, !stg.tensor<[H], f32>) -> !stg.tensor<[B/dp, S/sp, H], bf16>
// GENERIC-NEXT:     %ln = "stg.norm"(%x, %w) <{kind = #stg<norm_kind layer>, operandSegmentSizes = array<i32: 1, 1, 0>}> : (!stg.tensor<[B/dp, S/sp, H], bf16>, !stg.tensor<[H], f32>) -> !stg.tensor<[B/dp, S/sp, H], bf16>
// GENERIC-NEXT:     %ln_bias = "stg.norm"(%x, %w, %b) <{kind = #stg<norm_kind layer>, operandSegmentSizes = array<i32: 1, 1, 1>}> : (!stg.tensor<[B/dp, S/sp, H], bf16>, !stg.tensor<[H], f32>, !stg.tensor<[H], f32>) -> !stg.tensor<[B/dp, S/sp, H], bf16>
// GENERIC-NEXT:     %ln_bias_eps = "stg.norm"(%x, %w, %b) <{kind = #stg<norm_kind layer>, eps = 1.000000e-05 : f32, operandSegmentSizes = array<i32: 1, 1, 1>}> : (!stg.tensor<[B/dp, S/sp, H], bf16>, !stg.tensor<[H], f32>, !stg.tensor<[H], f32>) -> !stg.tensor<[B/dp, S/sp, H], bf16>
// GENERIC:          %mha = "stg.attention"(%q, %k, %k) <{heads = #stg.expr<N>, kv_heads = #stg.expr<N>, causal}> : (!stg.tensor<[B/dp, S/sp, N/tp, D], bf16>, !stg.tensor<[B/dp, S, N/tp, D], bf16>, !stg.tensor<[B/dp, S, N/tp, D], bf16>) -> !stg.tensor<[B/dp, S/sp, N/tp, D], bf16>
// GENERIC-NEXT:     %mha_full = "stg.attention"(%q, %k, %k) <{heads = #stg.expr<N>, kv_heads = #stg.expr<N>}> : (!stg.tensor<[B/dp, S/sp, N/tp, D], bf16>, !stg.tensor<[B/dp, S, N/tp, D], bf16>, !stg.tensor<[B/dp, S, N/tp, D], bf16>) -> !stg.tensor<[B/dp, S/sp, N/tp, D], bf16>
// GENERIC:          %mla = "stg.attention"(%q, %k, %ve) <{heads = #stg.expr<N>, kv_heads = #stg.expr<N>, causal}> {note} : (!stg.tensor<[B/dp, S/sp, N/tp, D], bf16>, !stg.tensor<[B/dp, S, N/tp, D], bf16>, !stg.tensor<[B/dp, S, N/tp, E], bf16>) -> !stg.tensor<[B/dp, S/sp, N/tp, E], bf16>
// GENERIC:          %vocab = "stg.embedding"(%t, %ids) : (!stg.tensor<[V/tp, H], bf16>, !stg.tensor<[B/dp, S], i64>) -> !stg.tensor<[B/dp, S, H] @tp, bf16>
// GENERIC:          %split = "stg.cross_entropy"(%logits, %labels) : (!stg.tensor<[B/dp, S/sp, V], bf16>, !stg.tensor<[B/dp, S/sp], i64>) -> !stg.tensor<[] @dp*sp, f32>
// GENERIC:      }) : () -> ()
