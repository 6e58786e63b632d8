// RUN: stagec-opt %s -p 'stg-fully-shard,stg-schedule,stg-prefetch{prefetch-limit=16384}' | filecheck %s

// The group limit M_prefetch = 16384 bytes, memory unlimited (80 GB): a prefetch group
// holds one 8192-byte buffer (two would be 16384, not < 16384).
//
// Reverse walk: g3 joins U and is carried up to g2's place; U + g2 = 16384 is not
// < M_prefetch, so U = {g3} is scheduled there (after release g1) and g2 starts a new
// U, carried to the top; there U + g1 = 16384 again: U = {g2} is scheduled after g1,
// which is first already. Separate groups are never fused.

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
// CHECK-NEXT:    %w2 = stg.param "w2"
// CHECK-NEXT:    %g2_t = stg.all_gather %w2 {{.*}} async stream "fsdp"
// CHECK-NEXT:    %g1 = stg.wait %g1_t
// CHECK-NEXT:    %a = stg.einsum
// CHECK-NEXT:    stg.release %g1
// CHECK-NEXT:    %w3 = stg.param "w3"
// CHECK-NEXT:    %g3_t = stg.all_gather %w3 {{.*}} async stream "fsdp"
// CHECK-NEXT:    %g2 = stg.wait %g2_t
// CHECK-NOT:     stg.group
