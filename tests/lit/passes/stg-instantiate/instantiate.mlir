// RUN: stagec-opt %s --split-input-file --pass-pipeline='builtin.module(stg-instantiate{B=8 S=4096 H=1024 F=4096 N=16 D=64 L=32 M=4 dp=2 tp=4 allow-unused=true})' | filecheck %s

// Tensor dims: global sizes become numbers, split axes stay named (the mesh says
// dp = 2); a size with a quotient of its own is substituted whole, 4*H = 4096.
// CHECK-LABEL: func.func @tensor_dims
// CHECK:       %x = stg.input "x" : !stg.tensor<[8/dp, 4096, 1024], bf16>
// CHECK:       %w = stg.param "w" : !stg.tensor<[1024, 4096/tp], bf16>
// CHECK:       %h = stg.param "h" : !stg.tensor<[16, 64], f32>
stg.mesh @m [dp, tp]
func.func @tensor_dims() {
  %x = stg.input "x" : !stg.tensor<[B/dp, S, H], bf16>
  %w = stg.param "w" : !stg.tensor<[H, 4*H/tp], bf16>
  %h = stg.param "h" : !stg.tensor<[(H/D), D], f32>
  func.return
}

// -----

// Partial sums keep their axes: [B, F] @tp is still a partial sum over tp.
// CHECK-LABEL: func.func @partial_sums
// CHECK:       stg.einsum "bf,fh->bh" %y, %w2 : !stg.tensor<[8, 4096/tp], bf16>, !stg.tensor<[4096/tp, 1024], bf16> -> !stg.tensor<[8, 1024] @tp, bf16>
// CHECK:       stg.all_reduce %p on @m [tp] : !stg.tensor<[8, 1024] @tp, bf16> -> !stg.tensor<[8, 1024], bf16>
stg.mesh @m [tp]
func.func @partial_sums() {
  %y = stg.input "y" : !stg.tensor<[B, F/tp], bf16>
  %w2 = stg.param "w2" : !stg.tensor<[F/tp, H], bf16>
  %p = stg.einsum "bf,fh->bh" %y, %w2 : !stg.tensor<[B, F/tp], bf16>, !stg.tensor<[F/tp, H], bf16> -> !stg.tensor<[B, H] @tp, bf16>
  %s = stg.all_reduce %p on @m [tp] : !stg.tensor<[B, H] @tp, bf16> -> !stg.tensor<[B, H], bf16>
  func.return
}

// -----

// Repeat and micro-batch counts, the carried and scanned block arguments of their
// bodies, and the stacked [L, ...] result.
// CHECK-LABEL: func.func @loop_counts
// CHECK:       %out, %acts = stg.repeat 32 carry(%h = %x : !stg.tensor<[8, 1024], bf16>) {
// CHECK-NEXT:    %g = stg.elementwise gelu %h : !stg.tensor<[8, 1024], bf16> -> !stg.tensor<[8, 1024], bf16>
// CHECK-NEXT:    stg.yield %g, %h : !stg.tensor<[8, 1024], bf16>, !stg.tensor<[8, 1024], bf16>
// CHECK-NEXT:  }
// CHECK-NEXT:  %back = stg.repeat 32 carry(%d = %out : !stg.tensor<[8, 1024], bf16>) scan(%a = %acts : !stg.tensor<[32, 8, 1024], bf16>) reverse {
// CHECK:       stg.microbatch 4 carry(%c = %x : !stg.tensor<[8, 1024], bf16>) {
func.func @loop_counts() {
  %x = stg.input "x" : !stg.tensor<[B, H], bf16>
  %out, %acts = stg.repeat L carry(%h = %x : !stg.tensor<[B, H], bf16>) {
    %g = stg.elementwise gelu %h : !stg.tensor<[B, H], bf16> -> !stg.tensor<[B, H], bf16>
    stg.yield %g, %h : !stg.tensor<[B, H], bf16>, !stg.tensor<[B, H], bf16>
  }
  %back = stg.repeat L carry(%d = %out : !stg.tensor<[B, H], bf16>) scan(%a = %acts : !stg.tensor<[L, B, H], bf16>) reverse {
    %e = stg.elementwise gelu_grad %a, %d : !stg.tensor<[B, H], bf16>, !stg.tensor<[B, H], bf16> -> !stg.tensor<[B, H], bf16>
    stg.yield %e : !stg.tensor<[B, H], bf16>
  }
  %mb = stg.microbatch M carry(%c = %x : !stg.tensor<[B, H], bf16>) {
    stg.yield %c : !stg.tensor<[B, H], bf16>
  }
  func.return
}

// -----

// Attention heads: the heads and kv_heads properties with the head dims, here N
// split over tp (16/tp heads a rank).
// CHECK-LABEL: func.func @attention_heads
// CHECK:       stg.attention %q, %k, %k heads 16 kv_heads 16 causal : !stg.tensor<[8/dp, 4096, 16/tp, 64], bf16>, !stg.tensor<[8/dp, 4096, 16/tp, 64], bf16>, !stg.tensor<[8/dp, 4096, 16/tp, 64], bf16> -> !stg.tensor<[8/dp, 4096, 16/tp, 64], bf16>
stg.mesh @m [dp, tp]
func.func @attention_heads() {
  %q = stg.input "q" : !stg.tensor<[B/dp, S, N/tp, D], bf16>
  %k = stg.input "k" : !stg.tensor<[B/dp, S, N/tp, D], bf16>
  %o = stg.attention %q, %k, %k heads N kv_heads N causal : !stg.tensor<[B/dp, S, N/tp, D], bf16>, !stg.tensor<[B/dp, S, N/tp, D], bf16>, !stg.tensor<[B/dp, S, N/tp, D], bf16> -> !stg.tensor<[B/dp, S, N/tp, D], bf16>
  func.return
}

// -----

// Mesh axis sizes: symbolic axes get the bound value; a numeric one stays; an axis
// sized by an expression is evaluated (pp = 2*L/32 = 2); an unbound one stays.
// CHECK:      stg.mesh @world [dp = 2, pp = 2, tp = 4, ep]
stg.mesh @world [dp, pp = 2*L/32, tp = 4, ep]

// -----

// Nested regions: the body of a phase inside a micro-batch loop inside a function.
// CHECK-LABEL: func.func @nested
// CHECK:       stg.microbatch 4 carry(%c = %x : !stg.tensor<[8, 4096], f32>) {
// CHECK-NEXT:    %y = stg.phase forward {
// CHECK-NEXT:      %r = stg.repeat 32 carry(%h = %c : !stg.tensor<[8, 4096], f32>) {
// CHECK-NEXT:        %s = stg.softmax %h dim 1 : !stg.tensor<[8, 4096], f32> -> !stg.tensor<[8, 4096], f32>
func.func @nested() {
  %x = stg.input "x" : !stg.tensor<[B, S], f32>
  %mb = stg.microbatch M carry(%c = %x : !stg.tensor<[B, S], f32>) {
    %y = stg.phase forward {
      %r = stg.repeat L carry(%h = %c : !stg.tensor<[B, S], f32>) {
        %s = stg.softmax %h dim 1 : !stg.tensor<[B, S], f32> -> !stg.tensor<[B, S], f32>
        stg.yield %s : !stg.tensor<[B, S], f32>
      }
      stg.yield %r : !stg.tensor<[B, S], f32>
    }
    stg.yield %y : !stg.tensor<[B, S], f32>
  }
  func.return
}

// -----

// Function types and their entry block arguments, results included; a token's
// payload type too.
// CHECK-LABEL: func.func @signature(%a: !stg.tensor<[8/dp, 1024], bf16>, %b: !stg.token<!stg.tensor<[8, 1024], bf16>>) -> !stg.tensor<[8/dp, 1024], bf16> {
// CHECK-NEXT:    func.return %a : !stg.tensor<[8/dp, 1024], bf16>
// CHECK:       func.func private @declared(!stg.tensor<[4096, 1024], bf16>) -> !stg.tensor<[], f32>
stg.mesh @m [dp]
func.func @signature(%a: !stg.tensor<[B/dp, H], bf16>, %b: !stg.token<!stg.tensor<[B, H], bf16>>) -> !stg.tensor<[B/dp, H], bf16> {
  func.return %a : !stg.tensor<[B/dp, H], bf16>
}
func.func private @declared(!stg.tensor<[S, H], bf16>) -> !stg.tensor<[], f32>

// -----

// Opaque FLOPs and bytes, and any other attribute holding an expression, nested in
// arrays and dictionaries too (stg.flops as stg-annotate-costs writes it). Axis
// symbols in expressions take the mesh's tp = 4:
// flops 2*B*S*H/tp = 2*8*4096*1024/4 = 16777216, bytes B*S*H/tp = 8388608,
// gelu 8*B*S*H/tp = 67108864 (8 FLOPs an element, ELEMENTWISE_FLOPS in dialects/stg/compute.py).
// CHECK-LABEL: func.func @opaque_exprs
// CHECK:       stg.opaque "fused"(%x) flops <16777216> bytes <8388608> : (!stg.tensor<[8, 4096, 1024/tp], bf16>) -> (!stg.tensor<[8, 4096, 1024/tp], bf16>)
// CHECK:       stg.elementwise gelu %x {stg.flops = #stg.expr<67108864>, note = [#stg.expr<8>, {n = #stg.expr<2048>}]} :
stg.mesh @m [tp]
func.func @opaque_exprs() {
  %x = stg.input "x" : !stg.tensor<[B, S, H/tp], bf16>
  %y = stg.opaque "fused"(%x) flops <2*B*S*H/tp> bytes <B*S*H/tp> : (!stg.tensor<[B, S, H/tp], bf16>) -> (!stg.tensor<[B, S, H/tp], bf16>)
  %g = stg.elementwise gelu %x {stg.flops = #stg.expr<8*B*H*S/tp>, note = [#stg.expr<B>, {n = #stg.expr<2*H>}]} : !stg.tensor<[B, S, H/tp], bf16> -> !stg.tensor<[B, S, H/tp], bf16>
  func.return
}
