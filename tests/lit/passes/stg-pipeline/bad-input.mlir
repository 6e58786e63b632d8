// A pipeline needs a training step with micro-batches, and valid options.
// RUN: not stagec-opt %s --pass-pipeline='builtin.module(stg-pipeline{pp=2})' 2>&1 | filecheck %s --check-prefix=NO-STEP
// RUN: not stagec-opt %s --pass-pipeline='builtin.module(stg-autodiff,stg-pipeline{pp=2})' 2>&1 | filecheck %s --check-prefix=NO-LOOP
// RUN: not stagec-opt %s --pass-pipeline='builtin.module(stg-autodiff{micro_batches=2},stg-pipeline{pp=0})' 2>&1 | filecheck %s --check-prefix=ZERO
// RUN: not stagec-opt %s --pass-pipeline='builtin.module(stg-autodiff{micro_batches=2},stg-pipeline{pp=2 schedule=zigzag})' 2>&1 | filecheck %s --check-prefix=SCHEDULE
// RUN: not stagec-opt %s --pass-pipeline='builtin.module(stg-autodiff{micro_batches=2},stg-pipeline{pp=2 balance=memory})' 2>&1 | filecheck %s --check-prefix=BALANCE
// RUN: not stagec-opt %s --pass-pipeline='builtin.module(stg-autodiff{micro_batches=2},stg-pipeline{pp=2 balance=cost})' 2>&1 | filecheck %s --check-prefix=COST
// pp=1 is the identity.
// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-pipeline{pp=1})' | filecheck %s --check-prefix=ONE

// NO-STEP:  error: pass 'stg-pipeline' failed: the module has no func.func @train_step to pipeline; run stg-autodiff{micro_batches=N} (N > 1) first
// NO-LOOP:  error: pass 'stg-pipeline' failed: @train_step has no stg.microbatch loop: a pipeline schedules micro-batches; run stg-autodiff{micro_batches=N} (N > 1) first
// ZERO:     error: pass 'stg-pipeline' failed: pp=0: the number of pipeline stages must be at least 1
// SCHEDULE: error: pass 'stg-pipeline' failed: schedule=zigzag is not one of 1f1b, gpipe
// BALANCE:  error: pass 'stg-pipeline' failed: balance=memory is not one of layers, cost
// COST:     error: pass 'stg-pipeline' failed: balance=cost needs the number of layers: bind L in the module's stg.config
// ONE:      func.func @forward()
// ONE-NOT:  stg.mesh

func.func @forward() -> !stg.tensor<[], f32> {
  %x = stg.input "x" : !stg.tensor<[B, H], f32>
  %h = stg.repeat L carry(%hin = %x : !stg.tensor<[B, H], f32>) {
    %w = stg.param "layers.w" : !stg.tensor<[H, H], f32>
    %u = stg.einsum "bh,gh->bg" %hin, %w : !stg.tensor<[B, H], f32>, !stg.tensor<[H, H], f32> -> !stg.tensor<[B, H], f32>
    stg.yield %u : !stg.tensor<[B, H], f32>
  }
  %l = stg.reduce sum %h dims [0, 1] : !stg.tensor<[B, H], f32> -> !stg.tensor<[], f32>
  func.return %l : !stg.tensor<[], f32>
}
