// RUN: stagec-opt %s -p 'stg-fully-shard,stg-schedule,stg-unshard' | filecheck %s

// Across gradient accumulation (deepcompile.md §4.3): parameters do not change
// between the optimizer steps, so a kept parameter is gathered once per step, not in
// every micro-batch's forward and backward. "layers.w" is a layer stack (2 layers):
// a prologue stg.repeat gathers each layer's buffer before the micro-batch loop and
// stacks them ([2, 64, 64]); the forward layer loop and the reversed backward one
// scan the stack instead of gathering (the reversed loop's iteration for layer i
// takes slice i); one release after the micro-batch loop, before an optimizer would
// write the parameter. No memory limit binds (the default M is the 80 GB HBM).

stg.mesh @m [fsdp = 2]
func.func @step(%x: !stg.tensor<[2, 8, 64], bf16>) {
  stg.microbatch 2 scan(%xb = %x : !stg.tensor<[2, 8, 64], bf16>) {
    %h = stg.phase forward {
      %r = stg.repeat 2 carry(%c = %xb : !stg.tensor<[8, 64], bf16>) {
        %w = stg.param "layers.w" : !stg.tensor<[64/fsdp, 64], bf16>
        %gw = stg.all_gather %w on @m [fsdp] : !stg.tensor<[64/fsdp, 64], bf16> -> !stg.tensor<[64, 64], bf16>
        %e = stg.einsum "bh,hf->bf" %c, %gw : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
        stg.yield %e : !stg.tensor<[8, 64], bf16>
      }
      stg.yield %r : !stg.tensor<[8, 64], bf16>
    }
    stg.phase backward {
      %r2 = stg.repeat 2 carry(%d = %h : !stg.tensor<[8, 64], bf16>) reverse {
        %w2 = stg.param "layers.w" : !stg.tensor<[64/fsdp, 64], bf16>
        %gw2 = stg.all_gather %w2 on @m [fsdp] : !stg.tensor<[64/fsdp, 64], bf16> -> !stg.tensor<[64, 64], bf16>
        %e2 = stg.einsum "bf,hf->bh" %d, %gw2 : !stg.tensor<[8, 64], bf16>, !stg.tensor<[64, 64], bf16> -> !stg.tensor<[8, 64], bf16>
        stg.yield %e2 : !stg.tensor<[8, 64], bf16>
      }
      stg.yield
    }
    stg.yield
  }
  func.return
}

// CHECK-LABEL: func.func @step
// CHECK-NEXT:    %gw_layers = stg.repeat 2 {
// CHECK-NEXT:      %w = stg.param "layers.w" : !stg.tensor<[64/fsdp, 64], bf16>
// CHECK-NEXT:      %gw_t = stg.all_gather %w on @m [fsdp] async stream "fsdp"
// CHECK-NEXT:      %gw = stg.wait %gw_t
// CHECK-NEXT:      stg.yield %gw : !stg.tensor<[64, 64], bf16>
// CHECK-NEXT:    }
// CHECK-NEXT:    stg.microbatch 2 scan(%xb = %x : !stg.tensor<[2, 8, 64], bf16>) {
// CHECK-NEXT:      %h = stg.phase forward {
// CHECK-NEXT:        %r = stg.repeat 2 carry(%c = %xb : !stg.tensor<[8, 64], bf16>) scan(%[[F:.*]] = %gw_layers : !stg.tensor<[2, 64, 64], bf16>) {
// CHECK-NEXT:          %e = stg.einsum "bh,hf->bf" %c, %[[F]]
// CHECK-NEXT:          stg.yield %e
// CHECK-NEXT:        }
// CHECK-NEXT:        stg.yield %r
// CHECK-NEXT:      }
// CHECK-NEXT:      stg.phase backward {
// CHECK-NEXT:        %r2 = stg.repeat 2 carry(%d = %h : !stg.tensor<[8, 64], bf16>) scan(%[[B:.*]] = %gw_layers : !stg.tensor<[2, 64, 64], bf16>) reverse {
// CHECK-NEXT:          %e2 = stg.einsum "bf,hf->bh" %d, %[[B]]
// CHECK-NEXT:          stg.yield %e2
// CHECK-NEXT:        }
// CHECK-NEXT:        stg.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      stg.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    stg.release %gw_layers : !stg.tensor<[2, 64, 64], bf16>
// CHECK-NEXT:    func.return
// CHECK-NOT:     stg.all_gather
