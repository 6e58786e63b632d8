// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-autodiff{optimizer=sgd micro_batches=4},cse,stg-pipeline{pp=2 schedule=1f1b})' | filecheck %s
// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-autodiff{optimizer=sgd micro_batches=4},cse,stg-pipeline{pp=2 schedule=gpipe})' | filecheck %s --check-prefix=GPIPE
// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-autodiff{optimizer=sgd micro_batches=4},cse,stg-pipeline{pp=2})' | stagec-opt | filecheck %s

// Two stages of a small model whose head reuses the embedding table (a tied weight),
// four micro-batches. Stage 0 holds the embedding and layers [0, L/2), stage 1 layers
// [L/2, L), the head and the loss; the activation goes up with tag 0, its cotangent
// comes down with tag 1.

func.func @forward() -> !stg.tensor<[], f32> {
  %ids = stg.input "input_ids" : !stg.tensor<[B, S], i64>
  %labels = stg.input "labels" : !stg.tensor<[B, S], i64>
  %emb = stg.param "embed.weight" : !stg.tensor<[V, H], f32>
  %x = stg.embedding %emb, %ids : !stg.tensor<[V, H], f32>, !stg.tensor<[B, S], i64> -> !stg.tensor<[B, S, H], f32>
  %h = stg.repeat L carry(%hin = %x : !stg.tensor<[B, S, H], f32>) {
    %w = stg.param "layers.up.weight" : !stg.tensor<[F, H], f32>
    %w2 = stg.param "layers.down.weight" : !stg.tensor<[H, F], f32>
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

// CHECK:      builtin.module attributes {stg.pipeline = {pp = 2 : i64, schedule = "1f1b", micro_batches = 4 : i64, layers = "0: [0, L/2) of L; 1: [L/2, L) of L"}} {
// CHECK-NEXT:   stg.mesh @mesh [pp = 2]

// Stage 0's forward: the embedding and its half of the layers; the layer stack's
// output goes to stage 1, the saved activations and the micro-batch's ids back to the
// schedule.
// CHECK-LABEL: func.func @stage0_forward(%ids: !stg.tensor<[B, S], i64>) -> (!stg.tensor<[(L/2), B, S, H], f32>, !stg.tensor<[(L/2), B, S, F], f32>, !stg.tensor<[(L/2), B, S, F], f32>, !stg.tensor<[B, S], i64>) {
// CHECK-NEXT:    stg.phase forward {
// CHECK-NEXT:      %emb = stg.param "embed.weight"
// CHECK-NEXT:      %x = stg.embedding %emb, %ids
// CHECK:           %[[H0:[0-9]+]], %[[S0:[0-9]+]], %[[S1:[0-9]+]], %[[S2:[0-9]+]] = stg.repeat L/2 offset 0 of L carry(%hin = %x : !stg.tensor<[B, S, H], f32>) {
// CHECK:           }
// CHECK-NEXT:      stg.send %[[H0]] to @mesh[pp = 1] tag 0 : !stg.tensor<[B, S, H], f32>
// CHECK-NEXT:      stg.yield %[[S0]], %[[S1]], %[[S2]], %ids :

// Stage 0's backward: the cotangent from stage 1, the layers in reverse over the
// saved activations, the embedding's gradient into stage 0's copy of grad(embed).
// CHECK-LABEL: func.func @stage0_backward(%0: !stg.tensor<[(L/2), B, S, H], f32>, %1: !stg.tensor<[(L/2), B, S, F], f32>, %2: !stg.tensor<[(L/2), B, S, F], f32>, %ids: !stg.tensor<[B, S], i64>) {
// CHECK-NEXT:    stg.phase backward {
// CHECK:           %[[G1:[0-9]+]] = stg.recv from @mesh[pp = 1] tag 1 : !stg.tensor<[B, S, H], f32>
// CHECK:           %[[G0:[0-9]+]] = stg.repeat L/2 offset 0 of L carry(%{{[0-9]+}} = %[[G1]] : !stg.tensor<[B, S, H], f32>) scan(%hin = %0 : !stg.tensor<[(L/2), B, S, H], f32>, %u = %1 : !stg.tensor<[(L/2), B, S, F], f32>, %a = %2 : !stg.tensor<[(L/2), B, S, F], f32>) reverse {
// CHECK:           stg.vjp(%emb, %ids) wrt [0] cotangents(%[[G0]] : !stg.tensor<[B, S, H], f32>)
// CHECK:           stg.assign %{{[0-9]+}} to "grad" of "embed.weight"

// Stage 0's 1F1B schedule (pp = 2, M = 4): one warm-up forward, then F B pairs, then
// the last backward: F0 F1 B0 F2 B1 F3 B2 B3; each backward gets its forward's results.
// CHECK-LABEL: func.func @train_step_stage0() attributes {stg.stage = {pp = 0 : i64}} {
// CHECK:         %[[IDS:[0-9]+]] = stg.input "input_ids" : !stg.tensor<[4, B, S], i64>
// CHECK-NEXT:    %{{.*}} = stg.split %[[IDS]] dim 0 : !stg.tensor<[4, B, S], i64> -> !stg.tensor<[1, B, S], i64>, !stg.tensor<[1, B, S], i64>, !stg.tensor<[1, B, S], i64>, !stg.tensor<[1, B, S], i64>
// CHECK-NEXT:    %ids = stg.reshape
// CHECK-NEXT:    %ids_1 = stg.reshape
// CHECK-NEXT:    %ids_2 = stg.reshape
// CHECK-NEXT:    %ids_3 = stg.reshape
// CHECK-NEXT:    %5, %6, %7, %8 = func.call @stage0_forward(%ids) :
// CHECK-NEXT:    %9, %10, %11, %12 = func.call @stage0_forward(%ids_1) :
// CHECK-NEXT:    func.call @stage0_backward(%5, %6, %7, %8) :
// CHECK-NEXT:    %13, %14, %15, %16 = func.call @stage0_forward(%ids_2) :
// CHECK-NEXT:    func.call @stage0_backward(%9, %10, %11, %12) :
// CHECK-NEXT:    %17, %18, %19, %20 = func.call @stage0_forward(%ids_3) :
// CHECK-NEXT:    func.call @stage0_backward(%13, %14, %15, %16) :
// CHECK-NEXT:    func.call @stage0_backward(%17, %18, %19, %20) :
// After the last backward, the two copies of the tied gradient are summed; then the
// optimizer updates the embedding and layers [0, L/2).
// CHECK:         %[[G:[0-9]+]] = stg.optimizer_state "grad" of "embed.weight" : !stg.tensor<[V, H], f32>
// CHECK:         %[[SUM:[0-9]+]] = stg.all_reduce_stages %[[G]] on @mesh [pp] among [0, 1] : !stg.tensor<[V, H], f32> -> !stg.tensor<[V, H], f32>
// CHECK-NEXT:    stg.assign %[[SUM]] to "grad" of "embed.weight" : !stg.tensor<[V, H], f32>
// CHECK-NEXT:    stg.phase optimizer {
// CHECK-NEXT:      stg.param "embed.weight"
// CHECK:           stg.repeat L/2 offset 0 of L {
// CHECK-NEXT:        stg.param "layers.up.weight"
// CHECK:         func.return
// CHECK-NEXT:  }

// Stage 1's forward: the activation from stage 0, layers [L/2, L), the tied head, the
// loss; what its backward needs goes back to the schedule, the loss last.
// CHECK-LABEL: func.func @stage1_forward(%labels: !stg.tensor<[B, S], i64>)
// CHECK-NEXT:    stg.phase forward {
// CHECK:           %[[X1:[0-9]+]] = stg.recv from @mesh[pp = 0] tag 0 : !stg.tensor<[B, S, H], f32>
// CHECK-NEXT:      %{{.*}} = stg.repeat L/2 offset L/2 of L carry(%hin = %[[X1]] : !stg.tensor<[B, S, H], f32>) {
// CHECK:           %emb = stg.param "embed.weight"
// CHECK-NEXT:      %logits = stg.einsum "bsh,vh->bsv"
// CHECK-NEXT:      %loss = stg.cross_entropy %logits, %labels
// CHECK-NEXT:      stg.yield {{.*}}, %loss :

// Stage 1's backward sends the cotangent of its first layer's input down with tag 1,
// then adds the head's term to its own copy of grad(embed).
// CHECK-LABEL: func.func @stage1_backward(
// CHECK:           %[[BACK:[0-9]+]] = stg.repeat L/2 offset L/2 of L carry({{.*}}) reverse {
// CHECK:           stg.send %[[BACK]] to @mesh[pp = 0] tag 1 : !stg.tensor<[B, S, H], f32>
// CHECK-NEXT:      stg.optimizer_state "grad" of "embed.weight"
// CHECK-NEXT:      stg.elementwise add
// CHECK-NEXT:      stg.assign %{{[0-9]+}} to "grad" of "embed.weight"

// Stage 1's schedule: its copy of the tied gradient starts at zero; no warm-up on the
// last stage (F0 B0 F1 B1 ...), each forward followed by the loss accumulation; the
// step's loss is returned by this stage.
// CHECK-LABEL: func.func @train_step_stage1() -> !stg.tensor<[], f32> attributes {stg.stage = {pp = 1 : i64}} {
// CHECK:         %[[Z:[0-9]+]] = stg.fill 0.000000e+00 : !stg.tensor<[V, H], f32>
// CHECK-NEXT:    stg.assign %[[Z]] to "grad" of "embed.weight"
// CHECK-NEXT:    %6 = stg.fill 0.000000e+00 : !stg.tensor<[], f32>
// CHECK-NEXT:    %7, %8, %9, %10, %11, %12, %13 = func.call @stage1_forward(%labels) :
// CHECK-NEXT:    %14 = stg.elementwise scale %13 by 2.500000e-01
// CHECK-NEXT:    %15 = stg.elementwise add %6, %14
// CHECK-NEXT:    func.call @stage1_backward(%7, %8, %9, %10, %11, %12) :
// CHECK-NEXT:    %16, %17, %18, %19, %20, %21, %22 = func.call @stage1_forward(%labels_1) :
// CHECK-NEXT:    %23 = stg.elementwise scale %22 by 2.500000e-01
// CHECK-NEXT:    %24 = stg.elementwise add %15, %23
// CHECK-NEXT:    func.call @stage1_backward(%16, %17, %18, %19, %20, %21) :
// CHECK-NEXT:    %25, %26, %27, %28, %29, %30, %31 = func.call @stage1_forward(%labels_2) :
// CHECK-NEXT:    %32 = stg.elementwise scale %31 by 2.500000e-01
// CHECK-NEXT:    %33 = stg.elementwise add %24, %32
// CHECK-NEXT:    func.call @stage1_backward(%25, %26, %27, %28, %29, %30) :
// CHECK-NEXT:    %34, %35, %36, %37, %38, %39, %40 = func.call @stage1_forward(%labels_3) :
// CHECK-NEXT:    %41 = stg.elementwise scale %40 by 2.500000e-01
// CHECK-NEXT:    %42 = stg.elementwise add %33, %41
// CHECK-NEXT:    func.call @stage1_backward(%34, %35, %36, %37, %38, %39) :
// CHECK-NEXT:    stg.optimizer_state "grad" of "embed.weight"
// CHECK-NEXT:    stg.all_reduce_stages %{{[0-9]+}} on @mesh [pp] among [0, 1]
// CHECK-NEXT:    stg.assign
// CHECK-NEXT:    stg.phase optimizer {
// CHECK:           stg.repeat L/2 offset L/2 of L {
// CHECK:         func.return %42 : !stg.tensor<[], f32>

// GPipe: every forward, then every backward from the last micro-batch down, on both
// stages.
// GPIPE-LABEL: func.func @train_step_stage0()
// GPIPE:         %5, %6, %7, %8 = func.call @stage0_forward(%ids) :
// GPIPE-NEXT:    %9, %10, %11, %12 = func.call @stage0_forward(%ids_1) :
// GPIPE-NEXT:    %13, %14, %15, %16 = func.call @stage0_forward(%ids_2) :
// GPIPE-NEXT:    %17, %18, %19, %20 = func.call @stage0_forward(%ids_3) :
// GPIPE-NEXT:    func.call @stage0_backward(%17, %18, %19, %20) :
// GPIPE-NEXT:    func.call @stage0_backward(%13, %14, %15, %16) :
// GPIPE-NEXT:    func.call @stage0_backward(%9, %10, %11, %12) :
// GPIPE-NEXT:    func.call @stage0_backward(%5, %6, %7, %8) :
// GPIPE-NEXT:    stg.optimizer_state "grad" of "embed.weight"
// GPIPE-NEXT:    stg.all_reduce_stages
// GPIPE-LABEL: func.func @train_step_stage1()
// GPIPE:         %7, %8, %9, %10, %11, %12, %13 = func.call @stage1_forward(%labels) :
// GPIPE:         %16, %17, %18, %19, %20, %21, %22 = func.call @stage1_forward(%labels_1) :
// GPIPE:         %25, %26, %27, %28, %29, %30, %31 = func.call @stage1_forward(%labels_2) :
// GPIPE:         %34, %35, %36, %37, %38, %39, %40 = func.call @stage1_forward(%labels_3) :
// GPIPE-NEXT:    stg.elementwise scale %40
// GPIPE-NEXT:    stg.elementwise add %33,
// GPIPE-NEXT:    func.call @stage1_backward(%34, %35, %36, %37, %38, %39) :
// GPIPE-NEXT:    func.call @stage1_backward(%25, %26, %27, %28, %29, %30) :
// GPIPE-NEXT:    func.call @stage1_backward(%16, %17, %18, %19, %20, %21) :
// GPIPE-NEXT:    func.call @stage1_backward(%7, %8, %9, %10, %11, %12) :
