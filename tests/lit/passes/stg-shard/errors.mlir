// Requests stg-shard cannot carry out are one-line errors (exit code 2) that say what
// is wrong and what would be right.
// RUN: not stagec-opt %s --pass-pipeline='builtin.module(stg-shard{tp=3})' 2>&1 | filecheck %s --check-prefix=HEADS
// RUN: not stagec-opt %s --pass-pipeline='builtin.module(stg-shard{ep=3})' 2>&1 | filecheck %s --check-prefix=EXPERTS
// RUN: not stagec-opt %s --pass-pipeline='builtin.module(stg-shard{tp=6})' 2>&1 | filecheck %s --check-prefix=KV
// RUN: not stagec-opt %s --pass-pipeline='builtin.module(stg-shard{tp=2})' 2>&1 | filecheck %s --check-prefix=VOCAB
// RUN: not stagec-opt %s --pass-pipeline='builtin.module(stg-shard{dp=2 sp=true})' 2>&1 | filecheck %s --check-prefix=SP
// RUN: not stagec-opt %s --pass-pipeline='builtin.module(stg-shard{dp=0})' 2>&1 | filecheck %s --check-prefix=ZERO
// RUN: not stagec-opt %s --pass-pipeline='builtin.module(stg-shard{dp=2 override="nope=[B, H]"})' 2>&1 | filecheck %s --check-prefix=NAME
// RUN: not stagec-opt %s --pass-pipeline='builtin.module(stg-shard{dp=2 override="w=[H/dp]"})' 2>&1 | filecheck %s --check-prefix=SHAPE
// RUN: not stagec-opt %s --pass-pipeline='builtin.module(stg-shard{dp=2 override="w=[H, F/cp]"})' 2>&1 | filecheck %s --check-prefix=AXIS

// HEADS:   errors.mlir:[[# @LINE + 9]]:1: error: pass 'stg-shard' failed: tp = 3 does not divide the model's attention heads N = 4
// EXPERTS: ep = 3 does not divide the model's experts E = 4
// KV:      tp = 6 neither divides the model's key/value heads KV = 4 nor is a multiple of them (a multiple holds each key/value head on tp/KV ranks): use a divisor of 4 or a multiple of it
// VOCAB:   tp = 2 does not divide the model's vocabulary V = 9 (pad the vocabulary to a multiple of it, as Megatron does)
// SP:      sp=true splits the sequence over tp; give tp > 1
// ZERO:    dp = 0 must be a positive integer or a symbol
// NAME:    override 'nope' names no parameter, input or result (return.N) of the module
// SHAPE:   override for 'w': [H/dp] does not have its shape [H, F]
// AXIS:    override for 'w' uses axis 'cp', which the mesh lacks
builtin.module attributes {stg.config = {N = 4 : i64, KV = 4 : i64, E = 4 : i64, V = 9 : i64}} {
  func.func @f() -> !stg.tensor<[B, F], f32> {
    %x = stg.input "x" : !stg.tensor<[B, H], f32>
    %w = stg.param "w" : !stg.tensor<[H, F], f32>
    %y = stg.einsum "bh,hf->bf" %x, %w : !stg.tensor<[B, H], f32>, !stg.tensor<[H, F], f32> -> !stg.tensor<[B, F], f32>
    func.return %y : !stg.tensor<[B, F], f32>
  }
}
