// fsdp and ZeRO shard a parameter's storage along a dim their size divides. Where none
// does, FSDP and Megatron's distributed optimizer pad the tensor; stagec shards evenly,
// so rather than keep it whole on every rank (and report memory and traffic no real run
// has) it stops with what to give instead.
// RUN: not stagec-opt %s --pass-pipeline='builtin.module(stg-shard{fsdp=4})' 2>&1 | filecheck %s --check-prefix=FSDP
// RUN: not stagec-opt %s --pass-pipeline='builtin.module(stg-shard{tp=2 fsdp=4})' 2>&1 | filecheck %s --check-prefix=LOCAL
// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-shard{fsdp=2})' | filecheck %s --check-prefix=EVEN
// RUN: not stagec ir --model %S/Inputs/tiny-llama.json --pass-pipeline 'builtin.module(stg-autodiff{optimizer=adamw},stg-shard{dp=3 zero=1})' 2>&1 | filecheck %s --check-prefix=ZERO

// FSDP:  indivisible-storage.mlir:[[# @LINE + 8]]:10: error: pass 'stg-shard' failed: fsdp = 4 divides no dim of 'w' [H, F]; stagec shards storage evenly, where FSDP and Megatron's distributed optimizer pad it - give fsdp a size dividing one of its dims (10, e.g. 2 or 5)
// LOCAL: error: pass 'stg-shard' failed: fsdp = 4 divides no dim of 'w' [H, F/tp] (held as [6, 5] per rank); {{.*}} dividing one of its dims (6, e.g. 3 or 6)
// EVEN:  %w = stg.param "w" : !stg.tensor<[H/fsdp, F], f32>
// ZERO:  stagec: error: {{.*}}dp = 3 divides no dim of 'model.embed_tokens.weight' [V, H]; {{.*}} - give dp a size dividing one of its dims (32, e.g. 2 or 4)
// ZERO-NOT: Traceback
builtin.module attributes {stg.config = {H = 6 : i64, F = 10 : i64}} {
  func.func @f() -> !stg.tensor<[B, F], f32> {
    %x = stg.input "x" : !stg.tensor<[B, H], f32>
    %w = stg.param "w" : !stg.tensor<[H, F], f32>
    %y = stg.einsum "bh,hf->bf" %x, %w : !stg.tensor<[B, H], f32>, !stg.tensor<[H, F], f32> -> !stg.tensor<[B, F], f32>
    func.return %y : !stg.tensor<[B, F], f32>
  }
}
