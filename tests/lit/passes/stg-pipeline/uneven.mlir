// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-autodiff{optimizer=sgd micro_batches=2},cse,stg-pipeline{pp=2})' | filecheck %s
// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-autodiff{optimizer=sgd micro_batches=2},cse,stg-pipeline{pp=3})' | filecheck %s --check-prefix=THREE

// stg.config binds L = 3, which two stages do not divide: the first stage takes the
// extra layer (counts become numbers, the stack stays `of L`), and the module's
// stg.pipeline attribute states the split. Three stages divide L: symbolic again.

builtin.module attributes {stg.config = {L = 3 : i64}} {
  func.func @forward() -> !stg.tensor<[], f32> {
    %ids = stg.input "input_ids" : !stg.tensor<[B, S], i64>
    %labels = stg.input "labels" : !stg.tensor<[B, S], i64>
    %emb = stg.param "embed.weight" : !stg.tensor<[V, H], f32>
    %x = stg.embedding %emb, %ids : !stg.tensor<[V, H], f32>, !stg.tensor<[B, S], i64> -> !stg.tensor<[B, S, H], f32>
    %h = stg.repeat L carry(%hin = %x : !stg.tensor<[B, S, H], f32>) {
      %w = stg.param "layers.w" : !stg.tensor<[H, H], f32>
      %u = stg.einsum "bsh,gh->bsg" %hin, %w : !stg.tensor<[B, S, H], f32>, !stg.tensor<[H, H], f32> -> !stg.tensor<[B, S, H], f32>
      %a = stg.elementwise tanh %u : !stg.tensor<[B, S, H], f32> -> !stg.tensor<[B, S, H], f32>
      stg.yield %a : !stg.tensor<[B, S, H], f32>
    }
    %head = stg.param "head.weight" : !stg.tensor<[V, H], f32>
    %logits = stg.einsum "bsh,vh->bsv" %h, %head : !stg.tensor<[B, S, H], f32>, !stg.tensor<[V, H], f32> -> !stg.tensor<[B, S, V], f32>
    %loss = stg.cross_entropy %logits, %labels : !stg.tensor<[B, S, V], f32>, !stg.tensor<[B, S], i64> -> !stg.tensor<[], f32>
    func.return %loss : !stg.tensor<[], f32>
  }
}

// CHECK:       stg.pipeline = {pp = 2 : i64, schedule = "1f1b", micro_batches = 2 : i64, layers = "0: [0, 2) of L; 1: [2, 3) of L"}
// CHECK-LABEL: func.func @stage0_forward(
// CHECK:         stg.repeat 2 offset 0 of L carry(
// CHECK-LABEL: func.func @stage0_backward(
// CHECK:         stg.repeat 2 offset 0 of L carry({{.*}}) scan(%hin = %0 : !stg.tensor<[2, B, S, H], f32>, %u = %1 : !stg.tensor<[2, B, S, H], f32>) reverse {
// CHECK-LABEL: func.func @train_step_stage0()
// CHECK:         stg.repeat 2 offset 0 of L {
// CHECK-LABEL: func.func @stage1_forward(
// CHECK:         stg.repeat 1 offset 2 of L carry(
// CHECK-LABEL: func.func @stage1_backward(
// CHECK:         stg.repeat 1 offset 2 of L carry(
// CHECK-LABEL: func.func @train_step_stage1()
// CHECK:         stg.repeat 1 offset 2 of L {

// THREE:       layers = "0: [0, L/3) of L; 1: [L/3, 2*L/3) of L; 2: [2*L/3, L) of L"
// The middle stage receives from stage 0 and sends to stage 2 going up, and the
// other way round coming down; each boundary has its own tags.
// THREE-LABEL: func.func @stage1_forward()
// THREE-NEXT:    stg.phase forward {
// THREE:           %[[X:[0-9]+]] = stg.recv from @mesh[pp = 0] tag 0 : !stg.tensor<[B, S, H], f32>
// THREE:           %[[Y:[0-9]+]], {{.*}} = stg.repeat L/3 offset L/3 of L carry(%hin = %[[X]] : !stg.tensor<[B, S, H], f32>) {
// THREE:           stg.send %[[Y]] to @mesh[pp = 2] tag 1 : !stg.tensor<[B, S, H], f32>
// THREE-LABEL: func.func @stage1_backward(
// THREE-NEXT:    stg.phase backward {
// THREE:           %[[G:[0-9]+]] = stg.recv from @mesh[pp = 2] tag 2 : !stg.tensor<[B, S, H], f32>
// THREE:           %[[D:[0-9]+]] = stg.repeat L/3 offset L/3 of L carry(%{{[0-9]+}} = %[[G]] : !stg.tensor<[B, S, H], f32>)
// THREE:           stg.send %[[D]] to @mesh[pp = 0] tag 3 : !stg.tensor<[B, S, H], f32>
// The middle stage of three warms up with one forward; with M = 2 that is F0 F1 B0 B1.
// THREE-LABEL: func.func @train_step_stage1()
// THREE:         func.call @stage1_forward()
// THREE-NEXT:    func.call @stage1_forward()
// THREE-NEXT:    func.call @stage1_backward(
// THREE-NEXT:    func.call @stage1_backward(
