// RUN: stagec-opt %s -p 'stg-fully-shard,stg-schedule,stg-zero3' | filecheck %s --check-prefix=DEFAULT
// RUN: stagec-opt %s -p 'stg-fully-shard,stg-schedule,stg-zero3{prefetch-bucket-size=5000}' | filecheck %s --check-prefix=BUCKET
// RUN: stagec-opt %s -p 'stg-fully-shard,stg-schedule,stg-zero3{max-live-parameters=8192}' | filecheck %s --check-prefix=LIVE
// RUN: stagec-opt %s -p 'stg-fully-shard,stg-schedule,stg-zero3{prefetch-bucket-size=0}' | filecheck %s --check-prefix=NONE

// DeepSpeed ZeRO-3's fetch (partitioned_param_coordinator.py fetch_sub_module): at a
// module's fetch - its parameter's wait - the next parameters in use order that are
// not yet gathered are issued as one coalesced all-gather while the bucket holds fewer
// than min(max-live-parameters - live, prefetch-bucket-size) elements. Each w is
// [64, 64] = 4096 elements gathered.
//
// DEFAULT (5e7 elements): at w1's wait, w2, w3, w4 (12288 < 5e7) go as one group.
// BUCKET = 5000: at w1's wait, w2 (0 < 5000) and w3 (4096 < 5000), then 8192 >= 5000
//   stops; at w2's wait w3 is in flight, w4 goes alone.
// LIVE = 8192: at w1's wait live = 4096 (g1), the budget 8192 - 4096 = 4096 takes w2
//   alone (0 < 4096, then 4096); g1's release brings live to 4096 again, so each
//   fetch prefetches the next one: w3 at w2's wait, w4 at w3's.
// A bucket of 0 prefetches nothing: every gather stands before its wait.

stg.mesh @m [fsdp = 2]
func.func @four(%x: !stg.tensor<[8, 64], bf16>) {
  %w1 = stg.param "w1" : !stg.tensor<[64/fsdp, 64], bf16>
  %g1 = stg.all_gather %w1 on @m [fsdp] : !stg.tensor<[64/fsdp, 64], bf16> -> !stg.tensor<[64, 64], bf16>
  %a = stg.einsum "bh,hf->bf" %x, %g1 : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
  %w2 = stg.param "w2" : !stg.tensor<[64/fsdp, 64], bf16>
  %g2 = stg.all_gather %w2 on @m [fsdp] : !stg.tensor<[64/fsdp, 64], bf16> -> !stg.tensor<[64, 64], bf16>
  %b = stg.einsum "bh,hf->bf" %a, %g2 : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
  %w3 = stg.param "w3" : !stg.tensor<[64/fsdp, 64], bf16>
  %g3 = stg.all_gather %w3 on @m [fsdp] : !stg.tensor<[64/fsdp, 64], bf16> -> !stg.tensor<[64, 64], bf16>
  %c = stg.einsum "bh,hf->bf" %b, %g3 : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
  %w4 = stg.param "w4" : !stg.tensor<[64/fsdp, 64], bf16>
  %g4 = stg.all_gather %w4 on @m [fsdp] : !stg.tensor<[64/fsdp, 64], bf16> -> !stg.tensor<[64, 64], bf16>
  %d = stg.einsum "bh,hf->bf" %c, %g4 : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
  func.return
}

// DEFAULT-LABEL: func.func @four
// DEFAULT-NEXT:    %w1 = stg.param "w1"
// DEFAULT-NEXT:    %g1_t = stg.all_gather %w1 on @m [fsdp] async stream "fsdp"
// DEFAULT-NEXT:    %g1 = stg.wait %g1_t
// DEFAULT-NEXT:    %w2 = stg.param "w2"
// DEFAULT-NEXT:    %w3 = stg.param "w3"
// DEFAULT-NEXT:    %w4 = stg.param "w4"
// DEFAULT-NEXT:    %g2_t, %g3_t, %g4_t = stg.group async stream "fsdp" {
// DEFAULT-NEXT:      stg.all_gather %w2 on @m [fsdp] :
// DEFAULT-NEXT:      stg.all_gather %w3 on @m [fsdp] :
// DEFAULT-NEXT:      stg.all_gather %w4 on @m [fsdp] :
// DEFAULT-NEXT:      stg.yield
// DEFAULT-NEXT:    }
// DEFAULT-NEXT:    %a = stg.einsum "bh,hf->bf" %x, %g1
// DEFAULT-NEXT:    stg.release %g1
// DEFAULT-NEXT:    %g2 = stg.wait %g2_t
// DEFAULT-NEXT:    %b = stg.einsum "bh,hf->bf" %a, %g2
// DEFAULT-NEXT:    stg.release %g2
// DEFAULT-NEXT:    %g3 = stg.wait %g3_t
// DEFAULT-NEXT:    %c = stg.einsum "bh,hf->bf" %b, %g3
// DEFAULT-NEXT:    stg.release %g3
// DEFAULT-NEXT:    %g4 = stg.wait %g4_t
// DEFAULT-NEXT:    %d = stg.einsum "bh,hf->bf" %c, %g4
// DEFAULT-NEXT:    stg.release %g4
// DEFAULT-NEXT:    func.return

// BUCKET-LABEL: func.func @four
// BUCKET-NEXT:    %w1 = stg.param "w1"
// BUCKET-NEXT:    %g1_t = stg.all_gather %w1 on @m [fsdp] async stream "fsdp"
// BUCKET-NEXT:    %g1 = stg.wait %g1_t
// BUCKET-NEXT:    %w2 = stg.param "w2"
// BUCKET-NEXT:    %w3 = stg.param "w3"
// BUCKET-NEXT:    %g2_t, %g3_t = stg.group async stream "fsdp" {
// BUCKET-NEXT:      stg.all_gather %w2 on @m [fsdp] :
// BUCKET-NEXT:      stg.all_gather %w3 on @m [fsdp] :
// BUCKET-NEXT:      stg.yield
// BUCKET-NEXT:    }
// BUCKET-NEXT:    %a = stg.einsum "bh,hf->bf" %x, %g1
// BUCKET-NEXT:    stg.release %g1
// BUCKET-NEXT:    %g2 = stg.wait %g2_t
// BUCKET-NEXT:    %w4 = stg.param "w4"
// BUCKET-NEXT:    %g4_t = stg.all_gather %w4 on @m [fsdp] async stream "fsdp"
// BUCKET-NEXT:    %b = stg.einsum "bh,hf->bf" %a, %g2
// BUCKET-NEXT:    stg.release %g2
// BUCKET-NEXT:    %g3 = stg.wait %g3_t
// BUCKET-NEXT:    %c = stg.einsum "bh,hf->bf" %b, %g3
// BUCKET-NEXT:    stg.release %g3
// BUCKET-NEXT:    %g4 = stg.wait %g4_t

// LIVE-LABEL: func.func @four
// LIVE-NEXT:    %w1 = stg.param "w1"
// LIVE-NEXT:    %g1_t = stg.all_gather %w1 on @m [fsdp] async stream "fsdp"
// LIVE-NEXT:    %g1 = stg.wait %g1_t
// LIVE-NEXT:    %w2 = stg.param "w2"
// LIVE-NEXT:    %g2_t = stg.all_gather %w2 on @m [fsdp] async stream "fsdp"
// LIVE-NEXT:    %a = stg.einsum "bh,hf->bf" %x, %g1
// LIVE-NEXT:    stg.release %g1
// LIVE-NEXT:    %g2 = stg.wait %g2_t
// LIVE-NEXT:    %w3 = stg.param "w3"
// LIVE-NEXT:    %g3_t = stg.all_gather %w3 on @m [fsdp] async stream "fsdp"
// LIVE-NEXT:    %b = stg.einsum "bh,hf->bf" %a, %g2
// LIVE-NEXT:    stg.release %g2
// LIVE-NEXT:    %g3 = stg.wait %g3_t
// LIVE-NEXT:    %w4 = stg.param "w4"
// LIVE-NEXT:    %g4_t = stg.all_gather %w4 on @m [fsdp] async stream "fsdp"
// LIVE-NEXT:    %c = stg.einsum "bh,hf->bf" %b, %g3

// NONE-LABEL: func.func @four
// NONE-NEXT:    %w1 = stg.param "w1"
// NONE-NEXT:    %g1_t = stg.all_gather %w1 on @m [fsdp] async stream "fsdp"
// NONE-NEXT:    %g1 = stg.wait %g1_t
// NONE-NEXT:    %a = stg.einsum "bh,hf->bf" %x, %g1
// NONE-NEXT:    stg.release %g1
// NONE-NEXT:    %w2 = stg.param "w2"
// NONE-NEXT:    %g2_t = stg.all_gather %w2 on @m [fsdp] async stream "fsdp"
// NONE-NEXT:    %g2 = stg.wait %g2_t
