// RUN: stagec-opt %s -p 'stg-fully-shard,stg-schedule,stg-prefetch{memory-limit=25000}' | filecheck %s

// The memory limit crossed at once: with M = 25000 no all-gather moves.
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
// g3 passing release g2 would need 21504 + 8192 = 29696 >= 25000, and so would g2
// passing release g1: each stays where stg-schedule issued it (g1 is first already).

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
// CHECK-NEXT:    %g1_t = stg.all_gather %w1 {{.*}} async stream "fsdp"
// CHECK-NEXT:    %g1 = stg.wait %g1_t
// CHECK-NEXT:    %a = stg.einsum
// CHECK-NEXT:    stg.release %g1
// CHECK-NEXT:    %w2 = stg.param "w2"
// CHECK-NEXT:    %g2_t = stg.all_gather %w2 {{.*}} async stream "fsdp"
// CHECK-NEXT:    %g2 = stg.wait %g2_t
// CHECK-NEXT:    %b = stg.einsum
// CHECK-NEXT:    stg.release %g2
// CHECK-NEXT:    %w3 = stg.param "w3"
// CHECK-NEXT:    %g3_t = stg.all_gather %w3 {{.*}} async stream "fsdp"
// CHECK-NEXT:    %g3 = stg.wait %g3_t
// CHECK-NOT:     stg.group
