// RUN: stagec-opt %s -p 'stg-fully-shard,stg-schedule,stg-prefetch{memory-limit=31000}' | filecheck %s

// deepcompile.md Fig. 6: with M = 31000 the first two all-gathers are issued at the
// start and the third only after the first buffer's release.
//
// Sizes (bytes; bf16 = 2): each w shard [32, 64] = 4096, three of them persistent =
// 12288; each gathered buffer B_ag = [64, 64] = 8192; each activation [8, 64] = 1024.
// P_mem from the memory analysis on S_0 (stg-fully-shard, stg-schedule; positions
// in order, %x is live until its last use):
//   all_gather g1, wait g1 : 12288 + x 1024 + g1 8192            = 21504
//   einsum a              : + a 1024                             = 22528
//   release g1            : 12288 + a 1024 (+ g1 8192 still alive
//                           where a group lands before it)       = 21504
//   and the same for layers 2 and 3 (b, c in place of a).
//
// Algorithm 1, reverse walk: g3 joins U and passes release g2 (21504 + 8192 = 29696),
// einsum b (22528 + 8192 = 30720 < 31000), wait g2 and the all-gather g2's place; at
// g2, U + g2 passing release g1 would need 21504 + 16384 = 37888 >= M: U = {g3} is
// scheduled there (after release g1) and g2 starts a new U, which passes release g1
// (29696), einsum a (30720) and wait g1 to the top, where g1 joins it: U = {g1, g2}
// at the start. Fuse: T_c(V) on h100-sxm for 2 ranks (docs/cost-model.md, NVLink
// 450e9 B/s x 0.8, 2.5 us) is 2.5 + (V/2) / 360e9 s: T_c(8192) = 2.5114 us,
// T_c(16384) = 2.5228 us; 2.5114 + 2.5114 = 5.0228 > 1.5 x 2.5228 = 3.784: fused.

stg.mesh @m [fsdp = 2]
func.func @fig6(%x: !stg.tensor<[8, 64], bf16>) {
  %w1 = stg.param "w1" : !stg.tensor<[64/fsdp, 64], bf16>
  %g1 = stg.all_gather %w1 on @m [fsdp] : !stg.tensor<[64/fsdp, 64], bf16> -> !stg.tensor<[64, 64], bf16>
  %a = stg.einsum "bh,hf->bf" %x, %g1 : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
  %w2 = stg.param "w2" : !stg.tensor<[64/fsdp, 64], bf16>
  %g2 = stg.all_gather %w2 on @m [fsdp] : !stg.tensor<[64/fsdp, 64], bf16> -> !stg.tensor<[64, 64], bf16>
  %b = stg.einsum "bh,hf->bf" %a, %g2 : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
  %w3 = stg.param "w3" : !stg.tensor<[64/fsdp, 64], bf16>
  %g3 = stg.all_gather %w3 on @m [fsdp] : !stg.tensor<[64/fsdp, 64], bf16> -> !stg.tensor<[64, 64], bf16>
  %c = stg.einsum "bh,hf->bf" %b, %g3 : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
  %d = stg.elementwise silu %c : !stg.tensor<[8, 64], bf16> -> !stg.tensor<[8, 64], bf16>
  func.return
}

// CHECK-LABEL: func.func @fig6
// CHECK-NEXT:    %w1 = stg.param "w1"
// CHECK-NEXT:    %w2 = stg.param "w2"
// CHECK-NEXT:    %g1_t, %g2_t = stg.group async stream "fsdp" {
// CHECK-NEXT:      %0 = stg.all_gather %w1 on @m [fsdp] :
// CHECK-NEXT:      %1 = stg.all_gather %w2 on @m [fsdp] :
// CHECK-NEXT:      stg.yield %0, %1
// CHECK-NEXT:    }
// CHECK-NEXT:    %g1 = stg.wait %g1_t
// CHECK-NEXT:    %a = stg.einsum "bh,hf->bf" %x, %g1
// CHECK-NEXT:    stg.release %g1
// CHECK-NEXT:    %w3 = stg.param "w3"
// CHECK-NEXT:    %g3_t = stg.all_gather %w3 on @m [fsdp] async stream "fsdp"
// CHECK-NEXT:    %g2 = stg.wait %g2_t
// CHECK-NEXT:    %b = stg.einsum "bh,hf->bf" %a, %g2
// CHECK-NEXT:    stg.release %g2
// CHECK-NEXT:    %g3 = stg.wait %g3_t
// CHECK-NEXT:    %c = stg.einsum "bh,hf->bf" %b, %g3
// CHECK-NEXT:    stg.release %g3
// CHECK-NEXT:    %d = stg.elementwise silu %c
// CHECK-NEXT:    func.return
