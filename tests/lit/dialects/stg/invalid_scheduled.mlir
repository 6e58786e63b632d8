// RUN: stagec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// stg.group: ops issued as one (docs/scheduled-ir.md).

// A compute group's results are what it yields ...
stg.mesh @m [dp = 2]
func.func @f(%x: !stg.tensor<[B, H], bf16>, %w: !stg.tensor<[H, F], bf16>) {
  %a = stg.group {
    %0 = stg.einsum "bh,hf->bf" %x, %w : !stg.tensor<[B, H], bf16>, !stg.tensor<[H, F], bf16> -> !stg.tensor<[B, F], bf16>
    stg.yield %0 : !stg.tensor<[B, F], bf16>
  } : !stg.tensor<[B, H], bf16>
  func.return
}

// CHECK: 'stg.group': results must be the yielded values

// -----

// ... and, async, tokens carrying them.
stg.mesh @m [dp = 2]
func.func @f(%s: !stg.tensor<[H/dp, F], bf16>) {
  %a = stg.group async stream "dp" {
    %0 = stg.all_gather %s on @m [dp] : !stg.tensor<[H/dp, F], bf16> -> !stg.tensor<[H, F], bf16>
    stg.yield %0 : !stg.tensor<[H, F], bf16>
  } : !stg.tensor<[H, F], bf16>
  func.return
}

// CHECK: 'stg.group': results must be tokens carrying the yielded values

// -----

// One call is one collective kind over one group.
stg.mesh @m [dp = 2, tp = 2]
func.func @f(%s: !stg.tensor<[H/dp, F], bf16>, %t: !stg.tensor<[H/tp, F], bf16>) {
  %a, %b = stg.group {
    %0 = stg.all_gather %s on @m [dp] : !stg.tensor<[H/dp, F], bf16> -> !stg.tensor<[H, F], bf16>
    %1 = stg.all_gather %t on @m [tp] : !stg.tensor<[H/tp, F], bf16> -> !stg.tensor<[H, F], bf16>
    stg.yield %0, %1 : !stg.tensor<[H, F], bf16>, !stg.tensor<[H, F], bf16>
  } : !stg.tensor<[H, F], bf16>, !stg.tensor<[H, F], bf16>
  func.return
}

// CHECK: 'stg.group': stg.all_gather on [tp] cannot join a group of stg.all_gather on [dp]: one call is one collective kind over one group

// -----

// A collective cannot join a kernel.
stg.mesh @m [dp = 2]
func.func @f(%x: !stg.tensor<[B, H], bf16>, %w: !stg.tensor<[H, F], bf16>, %s: !stg.tensor<[H/dp, F], bf16>) {
  %a, %b = stg.group {
    %0 = stg.einsum "bh,hf->bf" %x, %w : !stg.tensor<[B, H], bf16>, !stg.tensor<[H, F], bf16> -> !stg.tensor<[B, F], bf16>
    %1 = stg.all_gather %s on @m [dp] : !stg.tensor<[H/dp, F], bf16> -> !stg.tensor<[H, F], bf16>
    stg.yield %0, %1 : !stg.tensor<[B, F], bf16>, !stg.tensor<[H, F], bf16>
  } : !stg.tensor<[B, F], bf16>, !stg.tensor<[H, F], bf16>
  func.return
}

// CHECK: 'stg.group': stg.all_gather cannot join a compute group: its members are compute ops (one kernel) or collectives of one kind over one group (one call)

// -----

// Members are synchronous: the group is what is issued asynchronously, on its stream.
stg.mesh @m [dp = 2]
func.func @f(%s: !stg.tensor<[H/dp, F], bf16>) {
  %a = stg.group {
    %0 = stg.all_gather %s on @m [dp] async stream "dp" : !stg.tensor<[H/dp, F], bf16> -> !stg.token<!stg.tensor<[H, F], bf16>>
    stg.yield %0 : !stg.token<!stg.tensor<[H, F], bf16>>
  } : !stg.token<!stg.tensor<[H, F], bf16>>
  func.return
}

// CHECK: 'stg.group': its members are synchronous and name no stream: the group does

// -----

// A kernel runs on the compute stream.
stg.mesh @m [dp = 2]
func.func @f(%x: !stg.tensor<[B, H], bf16>, %w: !stg.tensor<[H, F], bf16>) {
  %a = stg.group async {
    %0 = stg.einsum "bh,hf->bf" %x, %w : !stg.tensor<[B, H], bf16>, !stg.tensor<[H, F], bf16> -> !stg.tensor<[B, F], bf16>
    stg.yield %0 : !stg.tensor<[B, F], bf16>
  } : !stg.token<!stg.tensor<[B, F], bf16>>
  func.return
}

// CHECK: 'stg.group': a compute group runs on the compute stream, in program order

// -----

// An empty group.
func.func @f() {
  stg.group {
    stg.yield
  }
  func.return
}

// CHECK: 'stg.group': the body groups no op
