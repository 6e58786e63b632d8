// fsdp and ZeRO shard a parameter's storage along a dim their size divides. Where none
// does, they pad it as FSDP and Megatron's distributed optimizer do (docs/sharding.md,
// "Uneven shards"): the whole dim that pads least holds ceil(size/d) per rank, written
// `F/fsdp:3`. A degree larger than the tensor's elements stays an error: some rank
// would hold nothing but padding.
// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-shard{fsdp=4})' | filecheck %s --check-prefix=FSDP
// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-shard{tp=2 fsdp=4})' | filecheck %s --check-prefix=LOCAL
// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-shard{fsdp=2})' | filecheck %s --check-prefix=EVEN
// RUN: not stagec-opt %s --pass-pipeline='builtin.module(stg-shard{fsdp=64})' 2>&1 | filecheck %s --check-prefix=TOO-MANY
// RUN: stagec ir --model %S/Inputs/tiny-llama.json --pass-pipeline 'builtin.module(stg-autodiff{optimizer=adamw},stg-shard{dp=3 zero=1})' | filecheck %s --check-prefix=ZERO
// RUN: not stagec ir --model %S/Inputs/tiny-llama.json --pass-pipeline 'builtin.module(stg-autodiff{optimizer=adamw},stg-shard{fsdp=32})' 2>&1 | filecheck %s --check-prefix=TINY

// [H, F] = [6, 10] over 4: padding H holds ceil(6/4) * 10 = 20 per rank, padding F
// 6 * ceil(10/4) = 18, so F is padded (40 with padding, 60 real elements over 4 ranks)
// FSDP:  %w = stg.param "w" : !stg.tensor<[H, F/fsdp:3], f32>
// FSDP:  stg.reshard %w on @mesh : !stg.tensor<[H, F/fsdp:3], f32> -> !stg.tensor<[H, F], f32>
// with tp = 2 each rank holds [6, 5]: only the whole H can be padded, ceil(6/4) = 2
// LOCAL: %w = stg.param "w" : !stg.tensor<[H/fsdp:2, F/tp], f32>
// EVEN:  %w = stg.param "w" : !stg.tensor<[H/fsdp, F], f32>
// TOO-MANY: indivisible-storage.mlir:[[# @LINE + 9]]:10: error: pass 'stg-shard' failed: fsdp = 64 exceeds the 60 elements of 'w' [H, F]: some rank would hold padding only - give fsdp at most 60
// ZeRO-1 over dp = 3 of the embedding [V, H] = [32, 16]: ceil(32/3) * 16 = 176 per
// rank beats 32 * ceil(16/3) = 192
// ZERO:  stg.optimizer_state "master" of "model.embed_tokens.weight" : !stg.tensor<[V/dp:11, H], f32>
// TINY:  stagec: error: fsdp = 32 exceeds the 16 elements of 'model.layers.input_layernorm.weight' [H]: some rank would hold padding only - give fsdp at most 16
// TINY-NOT: Traceback
builtin.module attributes {stg.config = {H = 6 : i64, F = 10 : i64}} {
  func.func @f() -> !stg.tensor<[B, F], f32> {
    %x = stg.input "x" : !stg.tensor<[B, H], f32>
    %w = stg.param "w" : !stg.tensor<[H, F], f32>
    %y = stg.einsum "bh,hf->bf" %x, %w : !stg.tensor<[B, H], f32>, !stg.tensor<[H, F], f32> -> !stg.tensor<[B, F], f32>
    func.return %y : !stg.tensor<[B, F], f32>
  }
}
