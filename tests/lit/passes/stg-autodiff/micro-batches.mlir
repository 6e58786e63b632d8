// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-autodiff{optimizer=sgd momentum=0.9 micro_batches=4})' | filecheck %s

// Four micro-batches: inputs gain a leading [4] dim scanned by stg.microbatch, the seed
// and the loss are scaled by 1/4, gradients accumulate into the "grad" states, and
// the optimizer zeroes them after SGD with momentum.

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
// CHECK-NEXT: %0 = stg.input "input_ids" : !stg.tensor<[4, B, S], i64>
// CHECK-NEXT: %1 = stg.input "labels" : !stg.tensor<[4, B, S], i64>
// CHECK-NEXT: %2 = stg.fill 0.000000e+00 : !stg.tensor<[], f32>
// CHECK-NEXT: %3 = stg.microbatch 4 carry(%4 = %2 : !stg.tensor<[], f32>) scan(%ids = %0 : !stg.tensor<[4, B, S], i64>, %labels = %1 : !stg.tensor<[4, B, S], i64>) {
// CHECK-NEXT: %h, %5, %6, %7, %logits, %loss = stg.phase forward {
// CHECK-NEXT: %emb = stg.param "model.embed_tokens.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: %x = stg.embedding %emb, %ids : !stg.tensor<[V, H], f32>, !stg.tensor<[B, S], i64> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: %h_1, %8, %9, %10 = stg.repeat L carry(%hin = %x : !stg.tensor<[B, S, H], f32>) {
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
// CHECK-NEXT: stg.yield %h_1, %8, %9, %10, %logits_1, %loss_1 : !stg.tensor<[B, S, H], f32>, !stg.tensor<[L, B, S, H], f32>, !stg.tensor<[L, B, S, F], f32>, !stg.tensor<[L, B, S, F], f32>, !stg.tensor<[B, S, V], f32>, !stg.tensor<[], f32>
// CHECK-NEXT: }
// CHECK-NEXT: stg.phase backward {
// CHECK-NEXT: %11 = stg.fill 2.500000e-01 : !stg.tensor<[], f32>
// CHECK-NEXT: %12 = stg.vjp(%logits, %labels) wrt [0] cotangents(%11 : !stg.tensor<[], f32>) {
// CHECK-NEXT: ^bb0(%13: !stg.tensor<[B, S, V], f32>, %14: !stg.tensor<[B, S], i64>):
// CHECK-NEXT: %loss_2 = stg.cross_entropy %13, %14 : !stg.tensor<[B, S, V], f32>, !stg.tensor<[B, S], i64> -> !stg.tensor<[], f32>
// CHECK-NEXT: stg.yield %loss_2 : !stg.tensor<[], f32>
// CHECK-NEXT: } : (!stg.tensor<[B, S, V], f32>, !stg.tensor<[B, S], i64>) -> (!stg.tensor<[B, S, V], f32>)
// CHECK-NEXT: %emb_1 = stg.param "model.embed_tokens.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: %15 = stg.einsum "bsv,vh->bsh" %12, %emb_1 : !stg.tensor<[B, S, V], f32>, !stg.tensor<[V, H], f32> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: %16 = stg.einsum "bsv,bsh->vh" %12, %h : !stg.tensor<[B, S, V], f32>, !stg.tensor<[B, S, H], f32> -> !stg.tensor<[V, H], f32>
// CHECK-NEXT: %17 = stg.repeat L carry(%18 = %15 : !stg.tensor<[B, S, H], f32>) scan(%hin_1 = %5 : !stg.tensor<[L, B, S, H], f32>, %u_1 = %6 : !stg.tensor<[L, B, S, F], f32>, %a_1 = %7 : !stg.tensor<[L, B, S, F], f32>) reverse {
// CHECK-NEXT: %w2_1 = stg.param "model.layers.down.weight" : !stg.tensor<[H, F], f32>
// CHECK-NEXT: %19 = stg.einsum "bsh,hf->bsf" %18, %w2_1 : !stg.tensor<[B, S, H], f32>, !stg.tensor<[H, F], f32> -> !stg.tensor<[B, S, F], f32>
// CHECK-NEXT: %20 = stg.einsum "bsh,bsf->hf" %18, %a_1 : !stg.tensor<[B, S, H], f32>, !stg.tensor<[B, S, F], f32> -> !stg.tensor<[H, F], f32>
// CHECK-NEXT: %21 = stg.elementwise silu_grad %19, %u_1 : !stg.tensor<[B, S, F], f32>, !stg.tensor<[B, S, F], f32> -> !stg.tensor<[B, S, F], f32>
// CHECK-NEXT: %w_1 = stg.param "model.layers.up.weight" : !stg.tensor<[F, H], f32>
// CHECK-NEXT: %22 = stg.einsum "bsf,fh->bsh" %21, %w_1 : !stg.tensor<[B, S, F], f32>, !stg.tensor<[F, H], f32> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: %23 = stg.einsum "bsf,bsh->fh" %21, %hin_1 : !stg.tensor<[B, S, F], f32>, !stg.tensor<[B, S, H], f32> -> !stg.tensor<[F, H], f32>
// CHECK-NEXT: %24 = stg.elementwise add %18, %22 : !stg.tensor<[B, S, H], f32>, !stg.tensor<[B, S, H], f32> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: %25 = stg.optimizer_state "grad" of "model.layers.down.weight" : !stg.tensor<[H, F], f32>
// CHECK-NEXT: %26 = stg.elementwise add %25, %20 : !stg.tensor<[H, F], f32>, !stg.tensor<[H, F], f32> -> !stg.tensor<[H, F], f32>
// CHECK-NEXT: stg.assign %26 to "grad" of "model.layers.down.weight" : !stg.tensor<[H, F], f32>
// CHECK-NEXT: %27 = stg.optimizer_state "grad" of "model.layers.up.weight" : !stg.tensor<[F, H], f32>
// CHECK-NEXT: %28 = stg.elementwise add %27, %23 : !stg.tensor<[F, H], f32>, !stg.tensor<[F, H], f32> -> !stg.tensor<[F, H], f32>
// CHECK-NEXT: stg.assign %28 to "grad" of "model.layers.up.weight" : !stg.tensor<[F, H], f32>
// CHECK-NEXT: stg.yield %24 : !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: }
// CHECK-NEXT: %29 = stg.vjp(%emb_1, %ids) wrt [0] cotangents(%17 : !stg.tensor<[B, S, H], f32>) {
// CHECK-NEXT: ^bb0(%30: !stg.tensor<[V, H], f32>, %31: !stg.tensor<[B, S], i64>):
// CHECK-NEXT: %x_1 = stg.embedding %30, %31 : !stg.tensor<[V, H], f32>, !stg.tensor<[B, S], i64> -> !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: stg.yield %x_1 : !stg.tensor<[B, S, H], f32>
// CHECK-NEXT: } : (!stg.tensor<[V, H], f32>, !stg.tensor<[B, S], i64>) -> (!stg.tensor<[V, H], f32>)
// CHECK-NEXT: %32 = stg.elementwise add %16, %29 : !stg.tensor<[V, H], f32>, !stg.tensor<[V, H], f32> -> !stg.tensor<[V, H], f32>
// CHECK-NEXT: %33 = stg.optimizer_state "grad" of "model.embed_tokens.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: %34 = stg.elementwise add %33, %32 : !stg.tensor<[V, H], f32>, !stg.tensor<[V, H], f32> -> !stg.tensor<[V, H], f32>
// CHECK-NEXT: stg.assign %34 to "grad" of "model.embed_tokens.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: stg.yield
// CHECK-NEXT: }
// CHECK-NEXT: %35 = stg.elementwise scale %loss by 2.500000e-01 : !stg.tensor<[], f32> -> !stg.tensor<[], f32>
// CHECK-NEXT: %36 = stg.elementwise add %4, %35 : !stg.tensor<[], f32>, !stg.tensor<[], f32> -> !stg.tensor<[], f32>
// CHECK-NEXT: stg.yield %36 : !stg.tensor<[], f32>
// CHECK-NEXT: }
// CHECK-NEXT: stg.phase optimizer {
// CHECK-NEXT: %37 = stg.param "model.embed_tokens.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: %38 = stg.optimizer_state "grad" of "model.embed_tokens.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: %39 = stg.optimizer_state "momentum" of "model.embed_tokens.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: %40, %41 = stg.sgd %37, %38 momentum %39 by 9.000000e-01 : !stg.tensor<[V, H], f32> lr 1.000000e-04 weight_decay 0.000000e+00 : !stg.tensor<[V, H], f32>, !stg.tensor<[V, H], f32> -> !stg.tensor<[V, H], f32>, !stg.tensor<[V, H], f32>
// CHECK-NEXT: stg.assign %41 to "momentum" of "model.embed_tokens.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: stg.assign %40 to "model.embed_tokens.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: %42 = stg.fill 0.000000e+00 : !stg.tensor<[V, H], f32>
// CHECK-NEXT: stg.assign %42 to "grad" of "model.embed_tokens.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT: stg.repeat L {
// CHECK-NEXT: %43 = stg.param "model.layers.up.weight" : !stg.tensor<[F, H], f32>
// CHECK-NEXT: %44 = stg.optimizer_state "grad" of "model.layers.up.weight" : !stg.tensor<[F, H], f32>
// CHECK-NEXT: %45 = stg.optimizer_state "momentum" of "model.layers.up.weight" : !stg.tensor<[F, H], f32>
// CHECK-NEXT: %46, %47 = stg.sgd %43, %44 momentum %45 by 9.000000e-01 : !stg.tensor<[F, H], f32> lr 1.000000e-04 weight_decay 0.000000e+00 : !stg.tensor<[F, H], f32>, !stg.tensor<[F, H], f32> -> !stg.tensor<[F, H], f32>, !stg.tensor<[F, H], f32>
// CHECK-NEXT: stg.assign %47 to "momentum" of "model.layers.up.weight" : !stg.tensor<[F, H], f32>
// CHECK-NEXT: stg.assign %46 to "model.layers.up.weight" : !stg.tensor<[F, H], f32>
// CHECK-NEXT: %48 = stg.fill 0.000000e+00 : !stg.tensor<[F, H], f32>
// CHECK-NEXT: stg.assign %48 to "grad" of "model.layers.up.weight" : !stg.tensor<[F, H], f32>
// CHECK-NEXT: %49 = stg.param "model.layers.down.weight" : !stg.tensor<[H, F], f32>
// CHECK-NEXT: %50 = stg.optimizer_state "grad" of "model.layers.down.weight" : !stg.tensor<[H, F], f32>
// CHECK-NEXT: %51 = stg.optimizer_state "momentum" of "model.layers.down.weight" : !stg.tensor<[H, F], f32>
// CHECK-NEXT: %52, %53 = stg.sgd %49, %50 momentum %51 by 9.000000e-01 : !stg.tensor<[H, F], f32> lr 1.000000e-04 weight_decay 0.000000e+00 : !stg.tensor<[H, F], f32>, !stg.tensor<[H, F], f32> -> !stg.tensor<[H, F], f32>, !stg.tensor<[H, F], f32>
// CHECK-NEXT: stg.assign %53 to "momentum" of "model.layers.down.weight" : !stg.tensor<[H, F], f32>
// CHECK-NEXT: stg.assign %52 to "model.layers.down.weight" : !stg.tensor<[H, F], f32>
// CHECK-NEXT: %54 = stg.fill 0.000000e+00 : !stg.tensor<[H, F], f32>
// CHECK-NEXT: stg.assign %54 to "grad" of "model.layers.down.weight" : !stg.tensor<[H, F], f32>
// CHECK-NEXT: stg.yield
// CHECK-NEXT: }
// CHECK-NEXT: stg.yield
// CHECK-NEXT: }
// CHECK-NEXT: func.return %3 : !stg.tensor<[], f32>
// CHECK-NEXT: }
// CHECK-NEXT: }
