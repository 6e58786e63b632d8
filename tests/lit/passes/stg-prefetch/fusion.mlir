// RUN: stagec-opt %s -p 'stg-fully-shard,stg-schedule,stg-prefetch' | filecheck %s --check-prefix=FUSED
// RUN: stagec-opt %s -p 'stg-fully-shard,stg-schedule,stg-prefetch{alpha=1.98}' | filecheck %s --check-prefix=FUSED
// RUN: stagec-opt %s -p 'stg-fully-shard,stg-schedule,stg-prefetch{alpha=2.0}' | filecheck %s --check-prefix=APART

// Fuse(U) on both sides of alpha. No limit binds (80 GB, no M_prefetch): all three
// all-gathers go to the start as one U. T_c(V) on h100-sxm for 2 ranks is
// 2.5 us + (V/2) / (450e9 x 0.8) s (docs/cost-model.md): T_c(8192) = 2.511378 us,
// T_c(16384) = 2.522756 us, T_c(24576) = 2.534133 us.
//   g1 + g2: 2.511378 + 2.511378 = 5.022756 > alpha x 2.522756 while alpha < 1.99098
//   (g1 g2) + g3: 2.522756 + 2.511378 = 5.034133 > alpha x 2.534133 while alpha < 1.98653
// alpha = 1.5 (the paper's) and 1.98: one group of three; alpha = 2.0: three
// all-gathers, each issued at the start on its own.

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

// FUSED-LABEL: func.func @fig6
// FUSED-NEXT:    %w1 = stg.param "w1"
// FUSED-NEXT:    %w2 = stg.param "w2"
// FUSED-NEXT:    %w3 = stg.param "w3"
// FUSED-NEXT:    %g1_t, %g2_t, %g3_t = stg.group async stream "fsdp" {
// FUSED-NEXT:      stg.all_gather %w1
// FUSED-NEXT:      stg.all_gather %w2
// FUSED-NEXT:      stg.all_gather %w3
// FUSED-NEXT:      stg.yield
// FUSED-NEXT:    }
// FUSED-NEXT:    %g1 = stg.wait %g1_t

// APART-LABEL: func.func @fig6
// APART-NEXT:    %w1 = stg.param "w1"
// APART-NEXT:    %g1_t = stg.all_gather %w1 {{.*}} async stream "fsdp"
// APART-NEXT:    %w2 = stg.param "w2"
// APART-NEXT:    %g2_t = stg.all_gather %w2 {{.*}} async stream "fsdp"
// APART-NEXT:    %w3 = stg.param "w3"
// APART-NEXT:    %g3_t = stg.all_gather %w3 {{.*}} async stream "fsdp"
// APART-NEXT:    %g1 = stg.wait %g1_t
// APART-NOT:     stg.group
