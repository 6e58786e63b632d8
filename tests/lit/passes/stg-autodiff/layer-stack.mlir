// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-autodiff{optimizer=adamw lr=0.001 weight_decay=0.1})' | filecheck %s

// A two-layer-stack model with tied embeddings: saved activations leave the forward
// repeat stacked and the backward repeat scans them in reverse; the tied table's two
// gradients are summed; AdamW updates the stacked parameters inside a repeat.

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
// CHECK-NEXT: %h, %0, %1, %2, %logits, %loss = stg.phase forward {
// CHECK-NEXT: %emb = stg.param "model.embed_tokens.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: %x = stg.embedding %emb, %ids : !stg.tensor<[V, H], f32>, !stg.tensor<[B, S], i64> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: %h_1, %3, %4, %5 = stg.repeat L carry(%hin = %x : !stg.tensor<[B, S, H], f32>) {
// CHECK-NEXT: %w = stg.param "model.layers.up.weight" : !stg.tensor<[F, H], f32>
// CHECK-NEXT: %w2 = stg.param "model.layers.down.weight" : !stg.tensor<[H, F], f32>
// CHECK-NEXT: %u = stg.einsum "bsh,fh->bsf" %hin, %w : !stg.tensor<[B, S, H], f32>, !stg.tensor<[F, H], f32> -> !stg.tensor<[B, S, F], f32>
// CHECK-NEXT: %a = stg.elementwise silu %u : !stg.tensor<[B, S, F], f32> -> !stg.tensor<[B, S, F], f32>
// CHECK-NEXT: %d = stg.einsum "bsf,hf->bsh" %a, %w2 : !stg.tensor<[B, S, F], f32>, !stg.tensor<[H, F], f32> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: %r = stg.elementwise add %hin, %d : !stg.tensor<[B, S, H], f32>, !stg.tensor<[B, S, H], f32> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: stg.yield %r, %hin, %u, %a : !stg.tensor<[B, S, H], f32>, !stg.tensor<[B, S, H], f32>, !stg.tensor<[B, S, F], f32>, !stg.tensor<[B, S, F], f32>
// CHECK-NEXT: }
// CHECK-NEXT: %logits_1 = stg.einsum "bsh,vh->bsv" %h_1, %emb : !stg.tensor<[B, S, H], f32>, !stg.tensor<[V, H], f32> -> !stg.tensor<[B, S, V], f32>
// CHECK-NEXT: %loss_1 = stg.cross_entropy %logits_1, %labels : !stg.tensor<[B, S, V], f32>, !stg.tensor<[B, S], i64> -> !stg.tensor<[], f32>
// CHECK-NEXT: stg.yield %h_1, %3, %4, %5, %logits_1, %loss_1 : !stg.tensor<[B, S, H], f32>, !stg.tensor<[L, B, S, H], f32>, !stg.tensor<[L, B, S, F], f32>, !stg.tensor<[L, B, S, F], f32>, !stg.tensor<[B, S, V], f32>, !stg.tensor<[], f32>
// CHECK-NEXT: }
// CHECK-NEXT: stg.phase backward {
// CHECK-NEXT: %6 = stg.fill 1.000000e+00 : !stg.tensor<[], f32>
// CHECK-NEXT: %7 = stg.vjp(%logits, %labels) wrt [0] cotangents(%6 : !stg.tensor<[], f32>) {
// CHECK-NEXT: ^bb0(%8: !stg.tensor<[B, S, V], f32>, %9: !stg.tensor<[B, S], i64>):
// CHECK-NEXT: %loss_2 = stg.cross_entropy %8, %9 : !stg.tensor<[B, S, V], f32>, !stg.tensor<[B, S], i64> -> !stg.tensor<[], f32>
// CHECK-NEXT: stg.yield %loss_2 : !stg.tensor<[], f32>
// CHECK-NEXT: } : (!stg.tensor<[B, S, V], f32>, !stg.tensor<[B, S], i64>) -> (!stg.tensor<[B, S, V], f32>)
// CHECK-NEXT: %emb_1 = stg.param "model.embed_tokens.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: %10 = stg.einsum "bsv,vh->bsh" %7, %emb_1 : !stg.tensor<[B, S, V], f32>, !stg.tensor<[V, H], f32> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: %11 = stg.einsum "bsv,bsh->vh" %7, %h : !stg.tensor<[B, S, V], f32>, !stg.tensor<[B, S, H], f32> -> !stg.tensor<[V, H], f32>
// CHECK-NEXT: %12 = stg.repeat L carry(%13 = %10 : !stg.tensor<[B, S, H], f32>) scan(%hin_1 = %0 : !stg.tensor<[L, B, S, H], f32>, %u_1 = %1 : !stg.tensor<[L, B, S, F], f32>, %a_1 = %2 : !stg.tensor<[L, B, S, F], f32>) reverse {
// CHECK-NEXT: %w2_1 = stg.param "model.layers.down.weight" : !stg.tensor<[H, F], f32>
// CHECK-NEXT: %14 = stg.einsum "bsh,hf->bsf" %13, %w2_1 : !stg.tensor<[B, S, H], f32>, !stg.tensor<[H, F], f32> -> !stg.tensor<[B, S, F], f32>
// CHECK-NEXT: %15 = stg.einsum "bsh,bsf->hf" %13, %a_1 : !stg.tensor<[B, S, H], f32>, !stg.tensor<[B, S, F], f32> -> !stg.tensor<[H, F], f32>
// CHECK-NEXT: %16 = stg.elementwise silu_grad %14, %u_1 : !stg.tensor<[B, S, F], f32>, !stg.tensor<[B, S, F], f32> -> !stg.tensor<[B, S, F], f32>
// CHECK-NEXT: %w_1 = stg.param "model.layers.up.weight" : !stg.tensor<[F, H], f32>
// CHECK-NEXT: %17 = stg.einsum "bsf,fh->bsh" %16, %w_1 : !stg.tensor<[B, S, F], f32>, !stg.tensor<[F, H], f32> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: %18 = stg.einsum "bsf,bsh->fh" %16, %hin_1 : !stg.tensor<[B, S, F], f32>, !stg.tensor<[B, S, H], f32> -> !stg.tensor<[F, H], f32>
// CHECK-NEXT: %19 = stg.elementwise add %13, %17 : !stg.tensor<[B, S, H], f32>, !stg.tensor<[B, S, H], f32> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: stg.assign %15 to "grad" of "model.layers.down.weight" : !stg.tensor<[H, F], f32>
// CHECK-NEXT: stg.assign %18 to "grad" of "model.layers.up.weight" : !stg.tensor<[F, H], f32>
// CHECK-NEXT: stg.yield %19 : !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: }
// CHECK-NEXT: %20 = stg.vjp(%emb_1, %ids) wrt [0] cotangents(%12 : !stg.tensor<[B, S, H], f32>) {
// CHECK-NEXT: ^bb0(%21: !stg.tensor<[V, H], f32>, %22: !stg.tensor<[B, S], i64>):
// CHECK-NEXT: %x_1 = stg.embedding %21, %22 : !stg.tensor<[V, H], f32>, !stg.tensor<[B, S], i64> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: stg.yield %x_1 : !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: } : (!stg.tensor<[V, H], f32>, !stg.tensor<[B, S], i64>) -> (!stg.tensor<[V, H], f32>)
// CHECK-NEXT: %23 = stg.elementwise add %11, %20 : !stg.tensor<[V, H], f32>, !stg.tensor<[V, H], f32> -> !stg.tensor<[V, H], f32>
// CHECK-NEXT: stg.assign %23 to "grad" of "model.embed_tokens.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: stg.yield
// CHECK-NEXT: }
// CHECK-NEXT: stg.phase optimizer {
// CHECK-NEXT: %24 = stg.param "model.embed_tokens.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: %25 = stg.optimizer_state "grad" of "model.embed_tokens.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: %26 = stg.optimizer_state "exp_avg" of "model.embed_tokens.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: %27 = stg.optimizer_state "exp_avg_sq" of "model.embed_tokens.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: %28 = stg.optimizer_state "step" of "model.embed_tokens.weight" : !stg.tensor<[], f32>
// CHECK-NEXT: %29, %30, %31, %32 = stg.adam %24, %25, %26, %27, %28 lr 1.000000e-03 betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08 weight_decay 1.000000e-01 decoupled : !stg.tensor<[V, H], f32>, !stg.tensor<[V, H], f32>, !stg.tensor<[V, H], f32>, !stg.tensor<[V, H], f32>, !stg.tensor<[], f32> -> !stg.tensor<[V, H], f32>, !stg.tensor<[V, H], f32>, !stg.tensor<[V, H], f32>, !stg.tensor<[], f32>
// CHECK-NEXT: stg.assign %30 to "exp_avg" of "model.embed_tokens.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: stg.assign %31 to "exp_avg_sq" of "model.embed_tokens.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: stg.assign %32 to "step" of "model.embed_tokens.weight" : !stg.tensor<[], f32>
// CHECK-NEXT: stg.assign %29 to "model.embed_tokens.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: stg.repeat L {
// CHECK-NEXT: %33 = stg.param "model.layers.up.weight" : !stg.tensor<[F, H], f32>
// CHECK-NEXT: %34 = stg.optimizer_state "grad" of "model.layers.up.weight" : !stg.tensor<[F, H], f32>
// CHECK-NEXT: %35 = stg.optimizer_state "exp_avg" of "model.layers.up.weight" : !stg.tensor<[F, H], f32>
// CHECK-NEXT: %36 = stg.optimizer_state "exp_avg_sq" of "model.layers.up.weight" : !stg.tensor<[F, H], f32>
// CHECK-NEXT: %37 = stg.optimizer_state "step" of "model.layers.up.weight" : !stg.tensor<[], f32>
// CHECK-NEXT: %38, %39, %40, %41 = stg.adam %33, %34, %35, %36, %37 lr 1.000000e-03 betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08 weight_decay 1.000000e-01 decoupled : !stg.tensor<[F, H], f32>, !stg.tensor<[F, H], f32>, !stg.tensor<[F, H], f32>, !stg.tensor<[F, H], f32>, !stg.tensor<[], f32> -> !stg.tensor<[F, H], f32>, !stg.tensor<[F, H], f32>, !stg.tensor<[F, H], f32>, !stg.tensor<[], f32>
// CHECK-NEXT: stg.assign %39 to "exp_avg" of "model.layers.up.weight" : !stg.tensor<[F, H], f32>
// CHECK-NEXT: stg.assign %40 to "exp_avg_sq" of "model.layers.up.weight" : !stg.tensor<[F, H], f32>
// CHECK-NEXT: stg.assign %41 to "step" of "model.layers.up.weight" : !stg.tensor<[], f32>
// CHECK-NEXT: stg.assign %38 to "model.layers.up.weight" : !stg.tensor<[F, H], f32>
// CHECK-NEXT: %42 = stg.param "model.layers.down.weight" : !stg.tensor<[H, F], f32>
// CHECK-NEXT: %43 = stg.optimizer_state "grad" of "model.layers.down.weight" : !stg.tensor<[H, F], f32>
// CHECK-NEXT: %44 = stg.optimizer_state "exp_avg" of "model.layers.down.weight" : !stg.tensor<[H, F], f32>
// CHECK-NEXT: %45 = stg.optimizer_state "exp_avg_sq" of "model.layers.down.weight" : !stg.tensor<[H, F], f32>
// CHECK-NEXT: %46 = stg.optimizer_state "step" of "model.layers.down.weight" : !stg.tensor<[], f32>
// CHECK-NEXT: %47, %48, %49, %50 = stg.adam %42, %43, %44, %45, %46 lr 1.000000e-03 betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08 weight_decay 1.000000e-01 decoupled : !stg.tensor<[H, F], f32>, !stg.tensor<[H, F], f32>, !stg.tensor<[H, F], f32>, !stg.tensor<[H, F], f32>, !stg.tensor<[], f32> -> !stg.tensor<[H, F], f32>, !stg.tensor<[H, F], f32>, !stg.tensor<[H, F], f32>, !stg.tensor<[], f32>
// CHECK-NEXT: stg.assign %48 to "exp_avg" of "model.layers.down.weight" : !stg.tensor<[H, F], f32>
// CHECK-NEXT: stg.assign %49 to "exp_avg_sq" of "model.layers.down.weight" : !stg.tensor<[H, F], f32>
// CHECK-NEXT: stg.assign %50 to "step" of "model.layers.down.weight" : !stg.tensor<[], f32>
// CHECK-NEXT: stg.assign %47 to "model.layers.down.weight" : !stg.tensor<[H, F], f32>
// CHECK-NEXT: stg.yield
// CHECK-NEXT: }
// CHECK-NEXT: stg.yield
// CHECK-NEXT: }
// CHECK-NEXT: func.return %loss : !stg.tensor<[], f32>
// CHECK-NEXT: }
// CHECK-NEXT: }
