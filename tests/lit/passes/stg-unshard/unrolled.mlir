// RUN: stagec-opt %s -p 'stg-fully-shard,stg-schedule,stg-unshard{memory-limit=33380 profile="%S/Inputs/unrolled-latency-bound.json"}' | filecheck %s --check-prefix=SMALL
// RUN: stagec-opt %s -p 'stg-fully-shard,stg-schedule,stg-unshard{memory-limit=33380 profile="%S/Inputs/unrolled-bandwidth-bound.json"}' | filecheck %s --check-prefix=LARGE

// The unrolled step (stg-unroll-layers: every layer's parameter read names its layer,
// `layer K of 2`): each (parameter, layer) slice is its own candidate of §4.3, ranked
// by T_c(B(o)) / B(o) with the global parameters.
//
// Sizes (bf16): each "w" slice gathers [64, 64] = B 8192 bytes (4096 per rank of 2);
// the global "o" gathers [64, 32] = B 4096 bytes (2048 per rank). Each is gathered
// once in the forward and once in the backward. Both profiles (Inputs/) carry the
// memory analysis's P_mem of this program after stg-fully-shard and stg-schedule:
// peak 16896 (a layer's einsum in the forward, its slice gathered). M = 33380 leaves
// room 33380 - 16896 = 16484: two "w" slices (16384) fit, a slice and "o" (12288)
// fit, all three (20480) do not.
//
// unrolled-latency-bound.json: T_c = 10 us at 2048 bytes per rank, 12 us at 4096:
//   o: 10 / 4096 = 2.44e-3 us/B > w layer 0, w layer 1: 12 / 8192 = 1.46e-3 us/B
//   (equal: by layer) -> o (4096), w layer 0 (12288); w layer 1 (20480) does not fit.
// unrolled-bandwidth-bound.json: T_c = 2 us at 2048, 10 us at 4096:
//   w layer 0, w layer 1: 10 / 8192 = 1.22e-3 us/B > o: 2 / 4096 = 4.9e-4 us/B
//   -> w layer 0 (8192), w layer 1 (16384); o (20480) does not fit.
//
// A kept slice keeps its first all-gather where it stands in the forward (so the
// forward still overlaps it), the forward phase yields the buffer, its forward
// release goes, the backward's gather of the same slice goes and its use takes the
// yielded buffer, and one release follows that last use. A kept global is gathered
// before the forward phase and released after the backward (the structured path).

stg.mesh @m [fsdp = 2]
func.func @step(%x: !stg.tensor<[8, 64], bf16>, %dy: !stg.tensor<[8, 32], bf16>) {
  %h = stg.phase forward {
    %w0 = stg.param "w" layer 0 of 2 : !stg.tensor<[64/fsdp, 64], bf16>
    %gw0 = stg.all_gather %w0 on @m [fsdp] : !stg.tensor<[64/fsdp, 64], bf16> -> !stg.tensor<[64, 64], bf16>
    %h0 = stg.einsum "bh,hf->bf" %x, %gw0 : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
    %w1 = stg.param "w" layer 1 of 2 : !stg.tensor<[64/fsdp, 64], bf16>
    %gw1 = stg.all_gather %w1 on @m [fsdp] : !stg.tensor<[64/fsdp, 64], bf16> -> !stg.tensor<[64, 64], bf16>
    %h1 = stg.einsum "bh,hf->bf" %h0, %gw1 : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
    %o = stg.param "o" : !stg.tensor<[64/fsdp, 32], bf16>
    %go = stg.all_gather %o on @m [fsdp] : !stg.tensor<[64/fsdp, 32], bf16> -> !stg.tensor<[64, 32], bf16>
    %y = stg.einsum "bh,ho->bo" %h1, %go : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 32], bf16> -> !stg.tensor<[8, 32], bf16>
    stg.yield %h1 : !stg.tensor<[8, 64], bf16>
  }
  stg.phase backward {
    %o2 = stg.param "o" : !stg.tensor<[64/fsdp, 32], bf16>
    %go2 = stg.all_gather %o2 on @m [fsdp] : !stg.tensor<[64/fsdp, 32], bf16> -> !stg.tensor<[64, 32], bf16>
    %d1 = stg.einsum "bo,ho->bh" %dy, %go2 : !stg.tensor<[8, 32], bf16>, !stg.tensor<[64, 32], bf16> -> !stg.tensor<[8, 64], bf16>
    %v1 = stg.param "w" layer 1 of 2 : !stg.tensor<[64/fsdp, 64], bf16>
    %gv1 = stg.all_gather %v1 on @m [fsdp] : !stg.tensor<[64/fsdp, 64], bf16> -> !stg.tensor<[64, 64], bf16>
    %d0 = stg.einsum "bf,hf->bh" %d1, %gv1 : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
    %v0 = stg.param "w" layer 0 of 2 : !stg.tensor<[64/fsdp, 64], bf16>
    %gv0 = stg.all_gather %v0 on @m [fsdp] : !stg.tensor<[64/fsdp, 64], bf16> -> !stg.tensor<[64, 64], bf16>
    %dx = stg.einsum "bf,hf->bh" %d0, %gv0 : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
    stg.yield
  }
  func.return
}

// SMALL-LABEL: func.func @step
// SMALL-NEXT:    %o = stg.param "o"
// SMALL-NEXT:    %go_t = stg.all_gather %o on @m [fsdp] async stream "fsdp"
// SMALL-NEXT:    %go = stg.wait %go_t
// SMALL-NEXT:    %h, %gw0 = stg.phase forward {
// SMALL-NEXT:      %w0 = stg.param "w" layer 0 of 2
// SMALL-NEXT:      %gw0_t = stg.all_gather %w0 on @m [fsdp] async stream "fsdp"
// SMALL-NEXT:      %[[W0:.*]] = stg.wait %gw0_t
// SMALL-NEXT:      %h0 = stg.einsum "bh,hf->bf" %x, %[[W0]]
// SMALL-NEXT:      %w1 = stg.param "w" layer 1 of 2
// SMALL-NEXT:      %gw1_t = stg.all_gather %w1 on @m [fsdp] async stream "fsdp"
// SMALL-NEXT:      %gw1 = stg.wait %gw1_t
// SMALL-NEXT:      %h1 = stg.einsum "bh,hf->bf" %h0, %gw1
// SMALL-NEXT:      stg.release %gw1
// SMALL-NEXT:      %y = stg.einsum "bh,ho->bo" %h1, %go
// SMALL-NEXT:      stg.yield %h1, %[[W0]]
// SMALL-NEXT:    }
// SMALL-NEXT:    stg.phase backward {
// SMALL-NEXT:      %d1 = stg.einsum "bo,ho->bh" %dy, %go
// SMALL-NEXT:      %v1 = stg.param "w" layer 1 of 2
// SMALL-NEXT:      %gv1_t = stg.all_gather %v1 on @m [fsdp] async stream "fsdp"
// SMALL-NEXT:      %gv1 = stg.wait %gv1_t
// SMALL-NEXT:      %d0 = stg.einsum "bf,hf->bh" %d1, %gv1
// SMALL-NEXT:      stg.release %gv1
// SMALL-NEXT:      %dx = stg.einsum "bf,hf->bh" %d0, %gw0
// SMALL-NEXT:      stg.release %gw0
// SMALL-NEXT:      stg.yield
// SMALL-NEXT:    }
// SMALL-NEXT:    stg.release %go
// SMALL-NEXT:    func.return

// LARGE-LABEL: func.func @step
// LARGE-NEXT:    %h, %gw0, %gw1 = stg.phase forward {
// LARGE-NEXT:      %w0 = stg.param "w" layer 0 of 2
// LARGE-NEXT:      %gw0_t = stg.all_gather %w0 on @m [fsdp] async stream "fsdp"
// LARGE-NEXT:      %[[W0:.*]] = stg.wait %gw0_t
// LARGE-NEXT:      %h0 = stg.einsum "bh,hf->bf" %x, %[[W0]]
// LARGE-NEXT:      %w1 = stg.param "w" layer 1 of 2
// LARGE-NEXT:      %gw1_t = stg.all_gather %w1 on @m [fsdp] async stream "fsdp"
// LARGE-NEXT:      %[[W1:.*]] = stg.wait %gw1_t
// LARGE-NEXT:      %h1 = stg.einsum "bh,hf->bf" %h0, %[[W1]]
// LARGE-NEXT:      %o = stg.param "o"
// LARGE-NEXT:      %go_t = stg.all_gather %o on @m [fsdp] async stream "fsdp"
// LARGE-NEXT:      %go = stg.wait %go_t
// LARGE-NEXT:      %y = stg.einsum "bh,ho->bo" %h1, %go
// LARGE-NEXT:      stg.release %go
// LARGE-NEXT:      stg.yield %h1, %[[W0]], %[[W1]]
// LARGE-NEXT:    }
// LARGE-NEXT:    stg.phase backward {
// LARGE-NEXT:      %o2 = stg.param "o"
// LARGE-NEXT:      %go2_t = stg.all_gather %o2 on @m [fsdp] async stream "fsdp"
// LARGE-NEXT:      %go2 = stg.wait %go2_t
// LARGE-NEXT:      %d1 = stg.einsum "bo,ho->bh" %dy, %go2
// LARGE-NEXT:      stg.release %go2
// LARGE-NEXT:      %d0 = stg.einsum "bf,hf->bh" %d1, %gw1
// LARGE-NEXT:      stg.release %gw1
// LARGE-NEXT:      %dx = stg.einsum "bf,hf->bh" %d0, %gw0
// LARGE-NEXT:      stg.release %gw0
// LARGE-NEXT:      stg.yield
// LARGE-NEXT:    }
// LARGE-NEXT:    func.return
