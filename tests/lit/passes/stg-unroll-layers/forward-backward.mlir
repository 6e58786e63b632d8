// RUN: stagec-opt %s -p stg-unroll-layers | filecheck %s

// A two-layer stack: the forward repeat carries h and stacks each layer's input; the
// backward repeat walks the layers in reverse, scanning that stack, with the layer's
// recompute phase inside. Unrolled, every per-layer state op names its layer, the
// forward phase yields each layer's saved input in place of the stack, the backward
// copies run layer 1 first and take their layer's input, and the recompute phase is
// dissolved into the backward.

builtin.module attributes {stg.config = {L = 2 : i64}} {
  func.func @step(%x: !stg.tensor<[8, 64], bf16>) {
    %h, %saved = stg.phase forward {
      %out, %stack = stg.repeat L carry(%c = %x : !stg.tensor<[8, 64], bf16>) {
        %w = stg.param "w" : !stg.tensor<[64, 64], bf16>
        %y = stg.einsum "bh,hf->bf" %c, %w : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
        stg.yield %y, %c : !stg.tensor<[8, 64], bf16>, !stg.tensor<[8, 64], bf16>
      }
      stg.yield %out, %stack : !stg.tensor<[8, 64], bf16>, !stg.tensor<[L, 8, 64], bf16>
    }
    stg.phase backward {
      %dx = stg.repeat L carry(%g = %h : !stg.tensor<[8, 64], bf16>) scan(%in = %saved : !stg.tensor<[L, 8, 64], bf16>) reverse {
        %w2, %y2 = stg.phase recompute {
          %w1 = stg.param "w" : !stg.tensor<[64, 64], bf16>
          %y1 = stg.einsum "bh,hf->bf" %in, %w1 : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
          stg.yield %w1, %y1 : !stg.tensor<[64, 64], bf16>, !stg.tensor<[8, 64], bf16>
        }
        %gx = stg.einsum "bf,hf->bh" %g, %w2 : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
        %gw = stg.einsum "bh,bf->hf" %in, %g : !stg.tensor<[8, 64], bf16>, !stg.tensor<[8, 64], bf16> -> !stg.tensor<[64, 64], bf16>
        stg.assign %gw to "grad" of "w" : !stg.tensor<[64, 64], bf16>
        stg.yield %gx : !stg.tensor<[8, 64], bf16>
      }
      stg.yield
    }
    func.return
  }
}

// CHECK-LABEL: func.func @step
// CHECK-NEXT:    %h, %saved, %saved_1 = stg.phase forward {
// CHECK-NEXT:      %w = stg.param "w" layer 0 of 2
// CHECK-NEXT:      %y = stg.einsum "bh,hf->bf" %x, %w
// CHECK-NEXT:      %w_1 = stg.param "w" layer 1 of 2
// CHECK-NEXT:      %y_1 = stg.einsum "bh,hf->bf" %y, %w_1
// CHECK-NEXT:      stg.yield %y_1, %x, %y
// CHECK-NEXT:    }
// CHECK-NEXT:    stg.phase backward {
// CHECK-NEXT:      %w1 = stg.param "w" layer 1 of 2
// CHECK-NEXT:      %y1 = stg.einsum "bh,hf->bf" %saved_1, %w1
// CHECK-NEXT:      %gx = stg.einsum "bf,hf->bh" %h, %w1
// CHECK-NEXT:      %gw = stg.einsum "bh,bf->hf" %saved_1, %h
// CHECK-NEXT:      stg.assign %gw to "grad" of "w" layer 1 of 2
// CHECK-NEXT:      %w1_1 = stg.param "w" layer 0 of 2
// CHECK-NEXT:      %y1_1 = stg.einsum "bh,hf->bf" %saved, %w1_1
// CHECK-NEXT:      %gx_1 = stg.einsum "bf,hf->bh" %gx, %w1_1
// CHECK-NEXT:      %gw_1 = stg.einsum "bh,bf->hf" %saved, %gx
// CHECK-NEXT:      stg.assign %gw_1 to "grad" of "w" layer 0 of 2
// CHECK-NEXT:      stg.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
