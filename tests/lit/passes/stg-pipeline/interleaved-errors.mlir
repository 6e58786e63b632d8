// What stg-pipeline refuses under schedule=interleaved-1f1b, each with the message a user sees.
// RUN: not stagec-opt %s --pass-pipeline='builtin.module(stg-autodiff{optimizer=sgd micro_batches=6},stg-pipeline{pp=4 schedule=interleaved-1f1b virtual_stages=2})' 2>&1 | filecheck %s --check-prefix=MB
// RUN: not stagec-opt %s --pass-pipeline='builtin.module(stg-autodiff{optimizer=sgd micro_batches=4},stg-pipeline{pp=2 schedule=interleaved-1f1b virtual_stages=2})' 2>&1 | filecheck %s --check-prefix=LAYERS
// RUN: not stagec-opt %s --pass-pipeline='builtin.module(stg-autodiff{optimizer=sgd micro_batches=4},stg-pipeline{pp=2 schedule=interleaved-1f1b virtual_stages=0})' 2>&1 | filecheck %s --check-prefix=V0
// RUN: not stagec-opt %s --pass-pipeline='builtin.module(stg-autodiff{optimizer=sgd micro_batches=4},stg-pipeline{pp=2 schedule=1f1b virtual_stages=2})' 2>&1 | filecheck %s --check-prefix=PLAIN
// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-autodiff{optimizer=sgd micro_batches=6},stg-pipeline{pp=3 schedule=interleaved-1f1b virtual_stages=2})' 2>&1 | filecheck %s --check-prefix=OK

// Megatron-LM asserts the micro-batch count is a multiple of pp under interleaving.
// MB: error: pass 'stg-pipeline' failed: schedule=interleaved-1f1b needs a multiple of pp=4 micro-batches (as Megatron-LM); the step has 6
// L = 6 layers do not cut into pp x v = 4 equal chunks (pp = 3, v = 2 does: 6 chunks of 1).
// LAYERS: error: pass 'stg-pipeline' failed: interleaved 1F1B cuts the 6 layers of the model (L = 6) into pp x virtual_stages = 2 x 2 = 4 equal chunks: the layer count must be a multiple of 4
// V0: error: pass 'stg-pipeline' failed: virtual_stages=0: each rank holds at least 1 model chunk
// PLAIN: error: pass 'stg-pipeline' failed: virtual_stages=2 needs schedule=interleaved-1f1b (schedule=1f1b runs one chunk per rank)
// OK: layers = "0.0: [0, L/6) of L; 1.0: [L/6, L/3) of L; 2.0: [L/3, L/2) of L; 0.1: [L/2, 2*L/3) of L; 1.1: [2*L/3, 5*L/6) of L; 2.1: [5*L/6, L) of L", virtual_stages = 2 : i64
builtin.module attributes {stg.config = {L = 6 : i64}} {
  func.func @forward() -> !stg.tensor<[], f32> {
    %ids = stg.input "input_ids" : !stg.tensor<[B, S], i64>
    %labels = stg.input "labels" : !stg.tensor<[B, S], i64>
    %emb = stg.param "embed.weight" : !stg.tensor<[V, H], f32>
    %x = stg.embedding %emb, %ids : !stg.tensor<[V, H], f32>, !stg.tensor<[B, S], i64> -> !stg.tensor<[B, S, H], f32>
    %h = stg.repeat L carry(%hin = %x : !stg.tensor<[B, S, H], f32>) {
      %w = stg.param "layers.up.weight" : !stg.tensor<[H, H], f32>
      %u = stg.einsum "bsh,fh->bsf" %hin, %w : !stg.tensor<[B, S, H], f32>, !stg.tensor<[H, H], f32> -> !stg.tensor<[B, S, H], f32>
      %r = stg.elementwise add %hin, %u : !stg.tensor<[B, S, H], f32>, !stg.tensor<[B, S, H], f32> -> !stg.tensor<[B, S, H], f32>
      stg.yield %r : !stg.tensor<[B, S, H], f32>
    }
    %w3 = stg.param "head.weight" : !stg.tensor<[V, H], f32>
    %logits = stg.einsum "bsh,vh->bsv" %h, %w3 : !stg.tensor<[B, S, H], f32>, !stg.tensor<[V, H], f32> -> !stg.tensor<[B, S, V], f32>
    %loss = stg.cross_entropy %logits, %labels : !stg.tensor<[B, S, V], f32>, !stg.tensor<[B, S], i64> -> !stg.tensor<[], f32>
    func.return %loss : !stg.tensor<[], f32>
  }
}
