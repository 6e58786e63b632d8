// RUN: stagec-opt %s -p 'stg-fully-shard,stg-schedule,stg-unshard{memory-limit=30000 profile="%S/Inputs/latency-bound.json"}' | filecheck %s --check-prefix=SMALL
// RUN: stagec-opt %s -p 'stg-fully-shard,stg-schedule,stg-unshard{memory-limit=30000 profile="%S/Inputs/bandwidth-bound.json"}' | filecheck %s --check-prefix=LARGE
// RUN: stagec-opt %s -p 'stg-fully-shard,stg-schedule,stg-unshard{memory-limit=18000 profile="%S/Inputs/latency-bound.json"}' | filecheck %s --check-prefix=NONE

// deepcompile.md §4.3: parameters are kept unsharded in the order T_c(B(o)) / B(o),
// highest first, while the profile's peak P_mem plus the kept bytes stays under M.
//
// Sizes (bf16 = 2 bytes): "a" gathers [64, 32] = B 4096 bytes (2048 per rank of 2),
// "b" gathers [32, 128] = B 8192 bytes (4096 per rank); each is gathered once in the
// forward and once in the backward (stg-fully-shard: one gather per graph).
// Both hand-made profiles (Inputs/) carry the memory analysis's P_mem of this
// program: peak 18944 (the forward's second einsum with "b" gathered). With M = 30000
// the room is 30000 - 18944 = 11056: either parameter alone fits, both
// (4096 + 8192 = 12288) do not.
//
// latency-bound.json: T_c = 10 us at 2048 bytes per rank, 12 us at 4096:
//   a: 10 / 4096 = 2.44e-3 us/B > b: 12 / 8192 = 1.46e-3 us/B -> "a" is kept (SMALL)
// bandwidth-bound.json: T_c = 2 us at 2048, 10 us at 4096:
//   a: 2 / 4096 = 4.9e-4 us/B < b: 10 / 8192 = 1.22e-3 us/B -> "b" is kept (LARGE)
// M = 18000 is under the peak already: nothing is kept (NONE).
//
// A kept parameter is gathered once before the first top-level op that gathered it
// (the forward phase), both of its phase-local gathers and releases go, and one
// release follows the last top-level op that uses it (the backward phase).

stg.mesh @m [fsdp = 2]
func.func @step(%x: !stg.tensor<[8, 64], bf16>, %dy: !stg.tensor<[8, 128], bf16>) {
  %h = stg.phase forward {
    %a = stg.param "a" : !stg.tensor<[64/fsdp, 32], bf16>
    %ga = stg.all_gather %a on @m [fsdp] : !stg.tensor<[64/fsdp, 32], bf16> -> !stg.tensor<[64, 32], bf16>
    %h1 = stg.einsum "bh,hf->bf" %x, %ga : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 32], bf16> -> !stg.tensor<[8, 32], bf16>
    %b = stg.param "b" : !stg.tensor<[32/fsdp, 128], bf16>
    %gb = stg.all_gather %b on @m [fsdp] : !stg.tensor<[32/fsdp, 128], bf16> -> !stg.tensor<[32, 128], bf16>
    %y = stg.einsum "bf,fo->bo" %h1, %gb : !stg.tensor<[8, 32], bf16>, !stg.tensor<[32, 128], bf16> -> !stg.tensor<[8, 128], bf16>
    stg.yield %h1 : !stg.tensor<[8, 32], bf16>
  }
  stg.phase backward {
    %b2 = stg.param "b" : !stg.tensor<[32/fsdp, 128], bf16>
    %gb2 = stg.all_gather %b2 on @m [fsdp] : !stg.tensor<[32/fsdp, 128], bf16> -> !stg.tensor<[32, 128], bf16>
    %dh = stg.einsum "bo,fo->bf" %dy, %gb2 : !stg.tensor<[8, 128], bf16>, !stg.tensor<[32, 128], bf16> -> !stg.tensor<[8, 32], bf16>
    %a2 = stg.param "a" : !stg.tensor<[64/fsdp, 32], bf16>
    %ga2 = stg.all_gather %a2 on @m [fsdp] : !stg.tensor<[64/fsdp, 32], bf16> -> !stg.tensor<[64, 32], bf16>
    %dx = stg.einsum "bf,hf->bh" %dh, %ga2 : !stg.tensor<[8, 32], bf16>, !stg.tensor<[64, 32], bf16> -> !stg.tensor<[8, 64], bf16>
    stg.yield
  }
  func.return
}

// SMALL-LABEL: func.func @step
// SMALL-NEXT:    %a = stg.param "a"
// SMALL-NEXT:    %ga_t = stg.all_gather %a on @m [fsdp] async stream "fsdp"
// SMALL-NEXT:    %ga = stg.wait %ga_t
// SMALL-NEXT:    %h = stg.phase forward {
// SMALL-NEXT:      %h1 = stg.einsum "bh,hf->bf" %x, %ga
// SMALL-NEXT:      %b = stg.param "b"
// SMALL-NEXT:      %gb_t = stg.all_gather %b
// SMALL-NEXT:      %gb = stg.wait %gb_t
// SMALL-NEXT:      %y = stg.einsum "bf,fo->bo" %h1, %gb
// SMALL-NEXT:      stg.release %gb
// SMALL-NEXT:      stg.yield %h1
// SMALL-NEXT:    }
// SMALL-NEXT:    stg.phase backward {
// SMALL-NEXT:      %b2 = stg.param "b"
// SMALL-NEXT:      %gb2_t = stg.all_gather %b2
// SMALL-NEXT:      %gb2 = stg.wait %gb2_t
// SMALL-NEXT:      %dh = stg.einsum "bo,fo->bf" %dy, %gb2
// SMALL-NEXT:      stg.release %gb2
// SMALL-NEXT:      %dx = stg.einsum "bf,hf->bh" %dh, %ga
// SMALL-NEXT:      stg.yield
// SMALL-NEXT:    }
// SMALL-NEXT:    stg.release %ga
// SMALL-NEXT:    func.return

// LARGE-LABEL: func.func @step
// LARGE-NEXT:    %b = stg.param "b"
// LARGE-NEXT:    %gb_t = stg.all_gather %b on @m [fsdp] async stream "fsdp"
// LARGE-NEXT:    %gb = stg.wait %gb_t
// LARGE-NEXT:    %h = stg.phase forward {
// LARGE-NEXT:      %a = stg.param "a"
// LARGE-NEXT:      %ga_t = stg.all_gather %a
// LARGE-NEXT:      %ga = stg.wait %ga_t
// LARGE-NEXT:      %h1 = stg.einsum "bh,hf->bf" %x, %ga
// LARGE-NEXT:      stg.release %ga
// LARGE-NEXT:      %y = stg.einsum "bf,fo->bo" %h1, %gb
// LARGE-NEXT:      stg.yield %h1
// LARGE-NEXT:    }
// LARGE-NEXT:    stg.phase backward {
// LARGE-NEXT:      %dh = stg.einsum "bo,fo->bf" %dy, %gb
// LARGE-NEXT:      %a2 = stg.param "a"
// LARGE-NEXT:      %ga2_t = stg.all_gather %a2
// LARGE-NEXT:      %ga2 = stg.wait %ga2_t
// LARGE-NEXT:      %dx = stg.einsum "bf,hf->bh" %dh, %ga2
// LARGE-NEXT:      stg.release %ga2
// LARGE-NEXT:      stg.yield
// LARGE-NEXT:    }
// LARGE-NEXT:    stg.release %gb
// LARGE-NEXT:    func.return

// NONE-LABEL: func.func @step
// NONE-NEXT:    %h = stg.phase forward {
// NONE-COUNT-4: stg.all_gather
