// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-autodiff{optimizer=none recompute=true})' | filecheck %s

// With recompute, the forward repeat saves only each layer's input; the backward
// layer body re-runs the layer in a recompute phase first (stage.md Fig. 11).

func.func @forward() -> !stg.tensor<[], f32> {
  %ids = stg.input "input_ids" : !stg.tensor<[B, S], i64>
  %labels = stg.input "labels" : !stg.tensor<[B, S], i64>
  %emb = stg.param "model.embed_tokens.weight" : !stg.tensor<[V, H], f32>
  %x = stg.embedding %emb, %ids : !stg.tensor<[V, H], f32>, !stg.tensor<[B, S], i64> -> !stg.tensor<[B, S, H], f32>
  %h = stg.repeat L carry(%hin = %x : !stg.tensor<[B, S, H], f32>) {
    %w = stg.param "model.layers.up.weight" : !stg.tensor<[F, H], f32>
    %w2 = stg.param "model.layers.down.weight" : !stg.tensor<[H, F], f32>
    %u = stg.einsum "bsh,fh->bsf" %hin, %w : !stg.tensor<[B, S, H], f32>, !stg.tensor<[F, H], f32> -> !stg.tensor<[B, S, F], f32>
    %a = stg.elementwise silu %u : !stg.tensor<[B, S, F], f32> -> !stg.tensor<[B, S, F], f32>
    %d = stg.einsum "bsf,hf->bsh" %a, %w2 : !stg.tensor<[B, S, F], f32>, !stg.tensor<[H, F], f32> -> !stg.tensor<[B, S, H], f32>
    %r = stg.elementwise add %hin, %d : !stg.tensor<[B, S, H], f32>, !stg.tensor<[B, S, H], f32> -> !stg.tensor<[B, S, H], f32>
    stg.yield %r : !stg.tensor<[B, S, H], f32>
  }
  %logits = stg.einsum "bsh,vh->bsv" %h, %emb : !stg.tensor<[B, S, H], f32>, !stg.tensor<[V, H], f32> -> !stg.tensor<[B, S, V], f32>
  %loss = stg.cross_entropy %logits, %labels : !stg.tensor<[B, S, V], f32>, !stg.tensor<[B, S], i64> -> !stg.tensor<[], f32>
  func.return %loss : !stg.tensor<[], f32>
}

// CHECK:      func.func @train_step() -> !stg.tensor<[], f32> {
// CHECK-NEXT: %ids = stg.input "input_ids" : !stg.tensor<[B, S], i64>
// CHECK-NEXT: %labels = stg.input "labels" : !stg.tensor<[B, S], i64>
// CHECK-NEXT: %h, %0, %logits, %loss = stg.phase forward {
// CHECK-NEXT: %emb = stg.param "model.embed_tokens.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: %x = stg.embedding %emb, %ids : !stg.tensor<[V, H], f32>, !stg.tensor<[B, S], i64> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: %h_1, %1 = stg.repeat L carry(%hin = %x : !stg.tensor<[B, S, H], f32>) {
// CHECK-NEXT: %w = stg.param "model.layers.up.weight" : !stg.tensor<[F, H], f32>
// CHECK-NEXT: %w2 = stg.param "model.layers.down.weight" : !stg.tensor<[H, F], f32>
// CHECK-NEXT: %u = stg.einsum "bsh,fh->bsf" %hin, %w : !stg.tensor<[B, S, H], f32>, !stg.tensor<[F, H], f32> -> !stg.tensor<[B, S, F], f32>
// CHECK-NEXT: %a = stg.elementwise silu %u : !stg.tensor<[B, S, F], f32> -> !stg.tensor<[B, S, F], f32>
// CHECK-NEXT: %d = stg.einsum "bsf,hf->bsh" %a, %w2 : !stg.tensor<[B, S, F], f32>, !stg.tensor<[H, F], f32> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: %r = stg.elementwise add %hin, %d : !stg.tensor<[B, S, H], f32>, !stg.tensor<[B, S, H], f32> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: stg.yield %r, %hin : !stg.tensor<[B, S, H], f32>, !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: }
// CHECK-NEXT: %logits_1 = stg.einsum "bsh,vh->bsv" %h_1, %emb : !stg.tensor<[B, S, H], f32>, !stg.tensor<[V, H], f32> -> !stg.tensor<[B, S, V], f32>
// CHECK-NEXT: %loss_1 = stg.cross_entropy %logits_1, %labels : !stg.tensor<[B, S, V], f32>, !stg.tensor<[B, S], i64> -> !stg.tensor<[], f32>
// CHECK-NEXT: stg.yield %h_1, %1, %logits_1, %loss_1 : !stg.tensor<[B, S, H], f32>, !stg.tensor<[L, B, S, H], f32>, !stg.tensor<[B, S, V], f32>, !stg.tensor<[], f32>
// CHECK-NEXT: }
// CHECK-NEXT: stg.phase backward {
// CHECK-NEXT: %2 = stg.fill 1.000000e+00 : !stg.tensor<[], f32>
// CHECK-NEXT: %3 = stg.vjp(%logits, %labels) wrt [0] cotangents(%2 : !stg.tensor<[], f32>) {
// CHECK-NEXT: ^bb0(%4: !stg.tensor<[B, S, V], f32>, %5: !stg.tensor<[B, S], i64>):
// CHECK-NEXT: %loss_2 = stg.cross_entropy %4, %5 : !stg.tensor<[B, S, V], f32>, !stg.tensor<[B, S], i64> -> !stg.tensor<[], f32>
// CHECK-NEXT: stg.yield %loss_2 : !stg.tensor<[], f32>
// CHECK-NEXT: } : (!stg.tensor<[B, S, V], f32>, !stg.tensor<[B, S], i64>) -> (!stg.tensor<[B, S, V], f32>)
// CHECK-NEXT: %emb_1 = stg.param "model.embed_tokens.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: %6 = stg.einsum "bsv,vh->bsh" %3, %emb_1 : !stg.tensor<[B, S, V], f32>, !stg.tensor<[V, H], f32> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: %7 = stg.einsum "bsv,bsh->vh" %3, %h : !stg.tensor<[B, S, V], f32>, !stg.tensor<[B, S, H], f32> -> !stg.tensor<[V, H], f32>
// CHECK-NEXT: %8 = stg.repeat L carry(%9 = %6 : !stg.tensor<[B, S, H], f32>) scan(%hin_1 = %0 : !stg.tensor<[L, B, S, H], f32>) reverse {
// CHECK-NEXT: %u_1, %a_1 = stg.phase recompute {
// CHECK-NEXT: %w_1 = stg.param "model.layers.up.weight" : !stg.tensor<[F, H], f32>
// CHECK-NEXT: %w2_1 = stg.param "model.layers.down.weight" : !stg.tensor<[H, F], f32>
// CHECK-NEXT: %u_2 = stg.einsum "bsh,fh->bsf" %hin_1, %w_1 : !stg.tensor<[B, S, H], f32>, !stg.tensor<[F, H], f32> -> !stg.tensor<[B, S, F], f32>
// CHECK-NEXT: %a_2 = stg.elementwise silu %u_2 : !stg.tensor<[B, S, F], f32> -> !stg.tensor<[B, S, F], f32>
// CHECK-NEXT: %d_1 = stg.einsum "bsf,hf->bsh" %a_2, %w2_1 : !stg.tensor<[B, S, F], f32>, !stg.tensor<[H, F], f32> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: %r_1 = stg.elementwise add %hin_1, %d_1 : !stg.tensor<[B, S, H], f32>, !stg.tensor<[B, S, H], f32> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: stg.yield %u_2, %a_2 : !stg.tensor<[B, S, F], f32>, !stg.tensor<[B, S, F], f32>
// CHECK-NEXT: }
// CHECK-NEXT: %w2_2 = stg.param "model.layers.down.weight" : !stg.tensor<[H, F], f32>
// CHECK-NEXT: %10 = stg.einsum "bsh,hf->bsf" %9, %w2_2 : !stg.tensor<[B, S, H], f32>, !stg.tensor<[H, F], f32> -> !stg.tensor<[B, S, F], f32>
// CHECK-NEXT: %11 = stg.einsum "bsh,bsf->hf" %9, %a_1 : !stg.tensor<[B, S, H], f32>, !stg.tensor<[B, S, F], f32> -> !stg.tensor<[H, F], f32>
// CHECK-NEXT: %12 = stg.elementwise silu_grad %10, %u_1 : !stg.tensor<[B, S, F], f32>, !stg.tensor<[B, S, F], f32> -> !stg.tensor<[B, S, F], f32>
// CHECK-NEXT: %w_2 = stg.param "model.layers.up.weight" : !stg.tensor<[F, H], f32>
// CHECK-NEXT: %13 = stg.einsum "bsf,fh->bsh" %12, %w_2 : !stg.tensor<[B, S, F], f32>, !stg.tensor<[F, H], f32> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: %14 = stg.einsum "bsf,bsh->fh" %12, %hin_1 : !stg.tensor<[B, S, F], f32>, !stg.tensor<[B, S, H], f32> -> !stg.tensor<[F, H], f32>
// CHECK-NEXT: %15 = stg.elementwise add %9, %13 : !stg.tensor<[B, S, H], f32>, !stg.tensor<[B, S, H], f32> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: stg.assign %11 to "grad" of "model.layers.down.weight" : !stg.tensor<[H, F], f32>
// CHECK-NEXT: stg.assign %14 to "grad" of "model.layers.up.weight" : !stg.tensor<[F, H], f32>
// CHECK-NEXT: stg.yield %15 : !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: }
// CHECK-NEXT: %16 = stg.vjp(%emb_1, %ids) wrt [0] cotangents(%8 : !stg.tensor<[B, S, H], f32>) {
// CHECK-NEXT: ^bb0(%17: !stg.tensor<[V, H], f32>, %18: !stg.tensor<[B, S], i64>):
// CHECK-NEXT: %x_1 = stg.embedding %17, %18 : !stg.tensor<[V, H], f32>, !stg.tensor<[B, S], i64> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: stg.yield %x_1 : !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: } : (!stg.tensor<[V, H], f32>, !stg.tensor<[B, S], i64>) -> (!stg.tensor<[V, H], f32>)
// CHECK-NEXT: %19 = stg.elementwise add %7, %16 : !stg.tensor<[V, H], f32>, !stg.tensor<[V, H], f32> -> !stg.tensor<[V, H], f32>
// CHECK-NEXT: stg.assign %19 to "grad" of "model.embed_tokens.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: stg.yield
// CHECK-NEXT: }
// CHECK-NEXT: func.return %loss : !stg.tensor<[], f32>
// CHECK-NEXT: }
// CHECK-NEXT: }
