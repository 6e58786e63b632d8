// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-autodiff{optimizer=sgd micro_batches=4},cse,stg-pipeline{pp=2 schedule=interleaved-1f1b virtual_stages=2})' | filecheck %s
// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-autodiff{optimizer=sgd micro_batches=4},cse,stg-pipeline{pp=2 schedule=interleaved-1f1b virtual_stages=2})' | stagec-opt | filecheck %s

// Interleaved 1F1B, pp = 2 ranks of v = 2 chunks each: the L layers are cut into
// 4 virtual stages of L/4; rank k holds virtual stages k (chunk 0) and k + 2 (chunk 1).
// The activation goes 0.0 -> 1.0 -> 0.1 -> 1.1 (tags 0, 1, 2: rank 1's chunk 0 sends
// to rank 0's chunk 1) and its cotangent back 1.1 -> 0.1 -> 1.0 -> 0.0 (tags 3, 4, 5).
// Rank 0's calls are Megatron's order for pp = 2, v = 2, M = 4 (4 warm-up forwards,
// derived in tests/unit/pipeline/test_interleaved_schedule.py):
//   F0.0 F0.1 F1.0 F1.1 F0.2 B1.0 F0.3 B1.1 F1.2 B0.0 F1.3 B0.1 B1.2 B1.3 B0.2 B0.3
// (chunk.micro-batch), so the calls are chunk 0, 0, 1, 1, 0, 1b, 0, 1b, 1, 0b, 1, 0b, 1b, 1b, 0b, 0b.

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

// CHECK:      builtin.module attributes {stg.pipeline = {pp = 2 : i64, schedule = "interleaved-1f1b", micro_batches = 4 : i64, layers = "0.0: [0, L/4) of L; 1.0: [L/4, L/2) of L; 0.1: [L/2, 3*L/4) of L; 1.1: [3*L/4, L) of L", virtual_stages = 2 : i64}} {
// CHECK-NEXT:   stg.mesh @mesh [pp = 2]

// CHECK-LABEL: func.func @stage0_chunk0_forward(%ids: !stg.tensor<[B, S], i64>)
// CHECK:         stg.embedding
// CHECK:         stg.repeat L/4 offset 0 of L carry
// CHECK:         stg.send %{{.*}} to @mesh[pp = 1] tag 0 : !stg.tensor<[B, S, H], f32>
// CHECK-LABEL: func.func @stage0_chunk0_backward(
// CHECK:         stg.recv from @mesh[pp = 1] tag 5 : !stg.tensor<[B, S, H], f32>
// CHECK-LABEL: func.func @stage0_chunk1_forward()
// CHECK:         stg.recv from @mesh[pp = 1] tag 1 : !stg.tensor<[B, S, H], f32>
// CHECK:         stg.repeat L/4 offset L/2 of L carry
// CHECK:         stg.send %{{.*}} to @mesh[pp = 1] tag 2 : !stg.tensor<[B, S, H], f32>
// CHECK-LABEL: func.func @stage0_chunk1_backward(
// CHECK:         stg.recv from @mesh[pp = 1] tag 3 : !stg.tensor<[B, S, H], f32>
// CHECK:         stg.repeat L/4 offset L/2 of L carry
// CHECK:         stg.send %{{.*}} to @mesh[pp = 1] tag 4 : !stg.tensor<[B, S, H], f32>

// CHECK-LABEL: func.func @train_step_stage0() attributes {stg.stage = {pp = 0 : i64}} {
// CHECK:         func.call @stage0_chunk0_forward(%ids)
// CHECK-NEXT:    func.call @stage0_chunk0_forward(%ids_1)
// CHECK-NEXT:    func.call @stage0_chunk1_forward()
// CHECK-NEXT:    func.call @stage0_chunk1_forward()
// CHECK-NEXT:    func.call @stage0_chunk0_forward(%ids_2)
// CHECK-NEXT:    func.call @stage0_chunk1_backward(
// CHECK-NEXT:    func.call @stage0_chunk0_forward(%ids_3)
// CHECK-NEXT:    func.call @stage0_chunk1_backward(
// CHECK-NEXT:    func.call @stage0_chunk1_forward()
// CHECK-NEXT:    func.call @stage0_chunk0_backward(
// CHECK-NEXT:    func.call @stage0_chunk1_forward()
// CHECK-NEXT:    func.call @stage0_chunk0_backward(
// CHECK-NEXT:    func.call @stage0_chunk1_backward(
// CHECK-NEXT:    func.call @stage0_chunk1_backward(
// CHECK-NEXT:    func.call @stage0_chunk0_backward(
// CHECK-NEXT:    func.call @stage0_chunk0_backward(
// CHECK:         stg.phase optimizer
// CHECK:           stg.repeat L/4 offset 0 of L {
// CHECK:           stg.repeat L/4 offset L/2 of L {

// CHECK-LABEL: func.func @stage1_chunk0_forward()
// CHECK:         stg.recv from @mesh[pp = 0] tag 0 : !stg.tensor<[B, S, H], f32>
// CHECK:         stg.repeat L/4 offset L/4 of L carry
// CHECK:         stg.send %{{.*}} to @mesh[pp = 0] tag 1 : !stg.tensor<[B, S, H], f32>
// CHECK-LABEL: func.func @stage1_chunk0_backward(
// CHECK:         stg.recv from @mesh[pp = 0] tag 4 : !stg.tensor<[B, S, H], f32>
// CHECK:         stg.send %{{.*}} to @mesh[pp = 0] tag 5 : !stg.tensor<[B, S, H], f32>
// CHECK-LABEL: func.func @stage1_chunk1_forward(%labels: !stg.tensor<[B, S], i64>)
// CHECK:         stg.recv from @mesh[pp = 0] tag 2 : !stg.tensor<[B, S, H], f32>
// CHECK:         stg.repeat L/4 offset 3*L/4 of L carry
// CHECK:         stg.cross_entropy
// CHECK-LABEL: func.func @stage1_chunk1_backward(
// CHECK:         stg.send %{{.*}} to @mesh[pp = 0] tag 3 : !stg.tensor<[B, S, H], f32>
// CHECK-LABEL: func.func @train_step_stage1() -> !stg.tensor<[], f32> attributes {stg.stage = {pp = 1 : i64}} {
// Rank 1 (2 warm-up forwards): F0.0 F0.1 F1.0 B1.0 F1.1 B1.1 F0.2 B0.0 F0.3 B0.1 F1.2 B1.2 F1.3 B1.3 B0.2 B0.3
// CHECK:         func.call @stage1_chunk0_forward()
// CHECK-NEXT:    func.call @stage1_chunk0_forward()
// CHECK-NEXT:    func.call @stage1_chunk1_forward(%labels)
// CHECK:         func.call @stage1_chunk1_backward(
// CHECK-NEXT:    func.call @stage1_chunk1_forward(%labels_1)
// CHECK:         func.call @stage1_chunk1_backward(
// CHECK-NEXT:    func.call @stage1_chunk0_forward()
// CHECK-NEXT:    func.call @stage1_chunk0_backward(
// CHECK-NEXT:    func.call @stage1_chunk0_forward()
// CHECK-NEXT:    func.call @stage1_chunk0_backward(
// CHECK-NEXT:    func.call @stage1_chunk1_forward(%labels_2)
// CHECK:         func.call @stage1_chunk1_backward(
// CHECK-NEXT:    func.call @stage1_chunk1_forward(%labels_3)
// CHECK:         func.call @stage1_chunk1_backward(
// CHECK-NEXT:    func.call @stage1_chunk0_backward(
// CHECK-NEXT:    func.call @stage1_chunk0_backward(
// CHECK:         func.return
