// stage.md Table III (tensor-level distribution of a linear layer), row by row, on the
// Llama MLP: y = down(silu(gate(x)) * up(x)), hidden H -> intermediate F.
// The gate/up projections carry each row's distribution of x, w and y. Where a row's
// layout cannot be computed locally, the collective that makes it so is written out
// (what stg-match-collectives inserts), and the verifier accepts exactly that program.
// COST pins each row's per-rank FLOPs, derived by hand beside it.
// RUN: stagec-opt %s --split-input-file | filecheck %s
// RUN: stagec-opt %s --split-input-file --pass-pipeline='builtin.module(stg-annotate-costs)' | filecheck %s --check-prefix=COST

// Row 1, no parallelism: x[B, H] w[H, 4H] y[B, 4H].
// FLOPs: three GEMMs of 2*B*H*F, silu 4 and mul 1 per element of [B, F].
// COST: func.func @no_parallel() attributes {stg.total_flops = #stg.expr<6*B*F*H + 5*B*F>
// CHECK-LABEL: func.func @no_parallel
// CHECK:      stg.einsum "bh,hf->bf" %x, %w_gate : !stg.tensor<[B, H], bf16>, !stg.tensor<[H, F], bf16> -> !stg.tensor<[B, F], bf16>
// CHECK:      stg.einsum "bf,fh->bh" %act, %w_down : !stg.tensor<[B, F], bf16>, !stg.tensor<[F, H], bf16> -> !stg.tensor<[B, H], bf16>
func.func @no_parallel() {
  %x = stg.input "x" : !stg.tensor<[B, H], bf16>
  %w_gate = stg.param "mlp.gate_proj" : !stg.tensor<[H, F], bf16>
  %w_up = stg.param "mlp.up_proj" : !stg.tensor<[H, F], bf16>
  %w_down = stg.param "mlp.down_proj" : !stg.tensor<[F, H], bf16>
  %gate = stg.einsum "bh,hf->bf" %x, %w_gate : !stg.tensor<[B, H], bf16>, !stg.tensor<[H, F], bf16> -> !stg.tensor<[B, F], bf16>
  %up = stg.einsum "bh,hf->bf" %x, %w_up : !stg.tensor<[B, H], bf16>, !stg.tensor<[H, F], bf16> -> !stg.tensor<[B, F], bf16>
  %silu = stg.elementwise silu %gate : !stg.tensor<[B, F], bf16> -> !stg.tensor<[B, F], bf16>
  %act = stg.elementwise mul %silu, %up : !stg.tensor<[B, F], bf16>, !stg.tensor<[B, F], bf16> -> !stg.tensor<[B, F], bf16>
  %y = stg.einsum "bf,fh->bh" %act, %w_down : !stg.tensor<[B, F], bf16>, !stg.tensor<[F, H], bf16> -> !stg.tensor<[B, H], bf16>
  func.return
}

// -----

// Row 2, data parallel: x[B/dp, H] w[H, 4H] y[B/dp, 4H]. No communication in the
// forward pass; every rank does 1/dp of row 1's work.
// COST: func.func @data_parallel() attributes {stg.total_flops = #stg.expr<(6*B*F*H + 5*B*F)/dp>
// CHECK-LABEL: func.func @data_parallel
// CHECK:      stg.einsum "bh,hf->bf" %x, %w_up : !stg.tensor<[B/dp, H], bf16>, !stg.tensor<[H, F], bf16> -> !stg.tensor<[B/dp, F], bf16>
// CHECK-NOT:  stg.all_
// CHECK:      stg.einsum "bf,fh->bh" %act, %w_down : !stg.tensor<[B/dp, F], bf16>, !stg.tensor<[F, H], bf16> -> !stg.tensor<[B/dp, H], bf16>
stg.mesh @m [dp]
func.func @data_parallel() {
  %x = stg.input "x" : !stg.tensor<[B/dp, H], bf16>
  %w_gate = stg.param "mlp.gate_proj" : !stg.tensor<[H, F], bf16>
  %w_up = stg.param "mlp.up_proj" : !stg.tensor<[H, F], bf16>
  %w_down = stg.param "mlp.down_proj" : !stg.tensor<[F, H], bf16>
  %gate = stg.einsum "bh,hf->bf" %x, %w_gate : !stg.tensor<[B/dp, H], bf16>, !stg.tensor<[H, F], bf16> -> !stg.tensor<[B/dp, F], bf16>
  %up = stg.einsum "bh,hf->bf" %x, %w_up : !stg.tensor<[B/dp, H], bf16>, !stg.tensor<[H, F], bf16> -> !stg.tensor<[B/dp, F], bf16>
  %silu = stg.elementwise silu %gate : !stg.tensor<[B/dp, F], bf16> -> !stg.tensor<[B/dp, F], bf16>
  %act = stg.elementwise mul %silu, %up : !stg.tensor<[B/dp, F], bf16>, !stg.tensor<[B/dp, F], bf16> -> !stg.tensor<[B/dp, F], bf16>
  %y = stg.einsum "bf,fh->bh" %act, %w_down : !stg.tensor<[B/dp, F], bf16>, !stg.tensor<[F, H], bf16> -> !stg.tensor<[B/dp, H], bf16>
  func.return
}

// -----

// Row 3, tensor parallel (row): x[B, H/tp] w[H/tp, 4H] y[B, 4H @ 1/tp]. The projection
// contracts the split H, so its output is a partial sum; silu is not linear, so both
// projections are all-reduced before it. The down projection is unsplit.
// FLOPs: 2 * 2*B*(H/tp)*F + 5*B*F + 2*B*F*H.
// COST: func.func @tensor_parallel_row() attributes {stg.total_flops = #stg.expr<(2*B*F*H*tp + 4*B*F*H + 5*B*F*tp)/tp>
// CHECK-LABEL: func.func @tensor_parallel_row
// CHECK:      %gate = stg.einsum "bh,hf->bf" %x, %w_gate : !stg.tensor<[B, H/tp], bf16>, !stg.tensor<[H/tp, F], bf16> -> !stg.tensor<[B, F] @tp, bf16>
// CHECK:      stg.all_reduce %gate on @m [tp] : !stg.tensor<[B, F] @tp, bf16> -> !stg.tensor<[B, F], bf16>
// CHECK:      stg.all_reduce %up on @m [tp] : !stg.tensor<[B, F] @tp, bf16> -> !stg.tensor<[B, F], bf16>
stg.mesh @m [tp]
func.func @tensor_parallel_row() {
  %x = stg.input "x" : !stg.tensor<[B, H/tp], bf16>
  %w_gate = stg.param "mlp.gate_proj" : !stg.tensor<[H/tp, F], bf16>
  %w_up = stg.param "mlp.up_proj" : !stg.tensor<[H/tp, F], bf16>
  %w_down = stg.param "mlp.down_proj" : !stg.tensor<[F, H], bf16>
  %gate = stg.einsum "bh,hf->bf" %x, %w_gate : !stg.tensor<[B, H/tp], bf16>, !stg.tensor<[H/tp, F], bf16> -> !stg.tensor<[B, F] @tp, bf16>
  %up = stg.einsum "bh,hf->bf" %x, %w_up : !stg.tensor<[B, H/tp], bf16>, !stg.tensor<[H/tp, F], bf16> -> !stg.tensor<[B, F] @tp, bf16>
  %gate_sum = stg.all_reduce %gate on @m [tp] : !stg.tensor<[B, F] @tp, bf16> -> !stg.tensor<[B, F], bf16>
  %up_sum = stg.all_reduce %up on @m [tp] : !stg.tensor<[B, F] @tp, bf16> -> !stg.tensor<[B, F], bf16>
  %silu = stg.elementwise silu %gate_sum : !stg.tensor<[B, F], bf16> -> !stg.tensor<[B, F], bf16>
  %act = stg.elementwise mul %silu, %up_sum : !stg.tensor<[B, F], bf16>, !stg.tensor<[B, F], bf16> -> !stg.tensor<[B, F], bf16>
  %y = stg.einsum "bf,fh->bh" %act, %w_down : !stg.tensor<[B, F], bf16>, !stg.tensor<[F, H], bf16> -> !stg.tensor<[B, H], bf16>
  func.return
}

// -----

// Row 4, tensor parallel (column): x[B, H] w[H, 4H/tp] y[B, 4H/tp]. Megatron's MLP:
// column-split gate/up, local silu*mul, row-split down (a partial sum), one all-reduce.
// COST: func.func @tensor_parallel_column() attributes {stg.total_flops = #stg.expr<(6*B*F*H + 5*B*F)/tp>
// CHECK-LABEL: func.func @tensor_parallel_column
// CHECK:      stg.einsum "bh,hf->bf" %x, %w_gate : !stg.tensor<[B, H], bf16>, !stg.tensor<[H, F/tp], bf16> -> !stg.tensor<[B, F/tp], bf16>
// CHECK:      %y = stg.einsum "bf,fh->bh" %act, %w_down : !stg.tensor<[B, F/tp], bf16>, !stg.tensor<[F/tp, H], bf16> -> !stg.tensor<[B, H] @tp, bf16>
// CHECK-NEXT: stg.all_reduce %y on @m [tp] : !stg.tensor<[B, H] @tp, bf16> -> !stg.tensor<[B, H], bf16>
stg.mesh @m [tp]
func.func @tensor_parallel_column() {
  %x = stg.input "x" : !stg.tensor<[B, H], bf16>
  %w_gate = stg.param "mlp.gate_proj" : !stg.tensor<[H, F/tp], bf16>
  %w_up = stg.param "mlp.up_proj" : !stg.tensor<[H, F/tp], bf16>
  %w_down = stg.param "mlp.down_proj" : !stg.tensor<[F/tp, H], bf16>
  %gate = stg.einsum "bh,hf->bf" %x, %w_gate : !stg.tensor<[B, H], bf16>, !stg.tensor<[H, F/tp], bf16> -> !stg.tensor<[B, F/tp], bf16>
  %up = stg.einsum "bh,hf->bf" %x, %w_up : !stg.tensor<[B, H], bf16>, !stg.tensor<[H, F/tp], bf16> -> !stg.tensor<[B, F/tp], bf16>
  %silu = stg.elementwise silu %gate : !stg.tensor<[B, F/tp], bf16> -> !stg.tensor<[B, F/tp], bf16>
  %act = stg.elementwise mul %silu, %up : !stg.tensor<[B, F/tp], bf16>, !stg.tensor<[B, F/tp], bf16> -> !stg.tensor<[B, F/tp], bf16>
  %y = stg.einsum "bf,fh->bh" %act, %w_down : !stg.tensor<[B, F/tp], bf16>, !stg.tensor<[F/tp, H], bf16> -> !stg.tensor<[B, H] @tp, bf16>
  %y_sum = stg.all_reduce %y on @m [tp] : !stg.tensor<[B, H] @tp, bf16> -> !stg.tensor<[B, H], bf16>
  func.return
}

// -----

// Row 5, fully sharded data parallel: x[B/fsdp, H] w[H/fsdp, 4H] y[B/fsdp, 4H].
// One axis cannot split both the batch and the weight, so each weight is all-gathered
// before use (ZeRO-3); compute is data-parallel.
// COST: func.func @fully_sharded() attributes {stg.total_flops = #stg.expr<(6*B*F*H + 5*B*F)/fsdp>
// CHECK-LABEL: func.func @fully_sharded
// CHECK:      %w_up_full = stg.all_gather %w_up on @m [fsdp] : !stg.tensor<[H/fsdp, F], bf16> -> !stg.tensor<[H, F], bf16>
// CHECK:      stg.einsum "bh,hf->bf" %x, %w_up_full : !stg.tensor<[B/fsdp, H], bf16>, !stg.tensor<[H, F], bf16> -> !stg.tensor<[B/fsdp, F], bf16>
// CHECK:      %w_down_full = stg.all_gather %w_down on @m [fsdp] : !stg.tensor<[F/fsdp, H], bf16> -> !stg.tensor<[F, H], bf16>
stg.mesh @m [fsdp]
func.func @fully_sharded() {
  %x = stg.input "x" : !stg.tensor<[B/fsdp, H], bf16>
  %w_gate = stg.param "mlp.gate_proj" : !stg.tensor<[H/fsdp, F], bf16>
  %w_up = stg.param "mlp.up_proj" : !stg.tensor<[H/fsdp, F], bf16>
  %w_down = stg.param "mlp.down_proj" : !stg.tensor<[F/fsdp, H], bf16>
  %w_gate_full = stg.all_gather %w_gate on @m [fsdp] : !stg.tensor<[H/fsdp, F], bf16> -> !stg.tensor<[H, F], bf16>
  %gate = stg.einsum "bh,hf->bf" %x, %w_gate_full : !stg.tensor<[B/fsdp, H], bf16>, !stg.tensor<[H, F], bf16> -> !stg.tensor<[B/fsdp, F], bf16>
  %w_up_full = stg.all_gather %w_up on @m [fsdp] : !stg.tensor<[H/fsdp, F], bf16> -> !stg.tensor<[H, F], bf16>
  %up = stg.einsum "bh,hf->bf" %x, %w_up_full : !stg.tensor<[B/fsdp, H], bf16>, !stg.tensor<[H, F], bf16> -> !stg.tensor<[B/fsdp, F], bf16>
  %silu = stg.elementwise silu %gate : !stg.tensor<[B/fsdp, F], bf16> -> !stg.tensor<[B/fsdp, F], bf16>
  %act = stg.elementwise mul %silu, %up : !stg.tensor<[B/fsdp, F], bf16>, !stg.tensor<[B/fsdp, F], bf16> -> !stg.tensor<[B/fsdp, F], bf16>
  %w_down_full = stg.all_gather %w_down on @m [fsdp] : !stg.tensor<[F/fsdp, H], bf16> -> !stg.tensor<[F, H], bf16>
  %y = stg.einsum "bf,fh->bh" %act, %w_down_full : !stg.tensor<[B/fsdp, F], bf16>, !stg.tensor<[F, H], bf16> -> !stg.tensor<[B/fsdp, H], bf16>
  func.return
}

// -----

// Row 6, hybrid (column TP with the activation sharded): x[B/hp, H] w[H, 4H/hp]
// y[B, 4H/hp]. hp splits x's batch and w's columns: x is all-gathered (hp leaves the
// batch, which y keeps whole), the down projection's partial sum is reduce-scattered
// back onto the batch, so the output is sharded like the input.
// COST: func.func @hybrid_parallel() attributes {stg.total_flops = #stg.expr<(6*B*F*H + 5*B*F)/hp>
// CHECK-LABEL: func.func @hybrid_parallel
// CHECK:      %x_full = stg.all_gather %x on @m [hp] : !stg.tensor<[B/hp, H], bf16> -> !stg.tensor<[B, H], bf16>
// CHECK:      stg.einsum "bh,hf->bf" %x_full, %w_up : !stg.tensor<[B, H], bf16>, !stg.tensor<[H, F/hp], bf16> -> !stg.tensor<[B, F/hp], bf16>
// CHECK:      stg.reduce_scatter %y on @m [hp] : !stg.tensor<[B, H] @hp, bf16> -> !stg.tensor<[B/hp, H], bf16>
stg.mesh @m [hp]
func.func @hybrid_parallel() {
  %x = stg.input "x" : !stg.tensor<[B/hp, H], bf16>
  %w_gate = stg.param "mlp.gate_proj" : !stg.tensor<[H, F/hp], bf16>
  %w_up = stg.param "mlp.up_proj" : !stg.tensor<[H, F/hp], bf16>
  %w_down = stg.param "mlp.down_proj" : !stg.tensor<[F/hp, H], bf16>
  %x_full = stg.all_gather %x on @m [hp] : !stg.tensor<[B/hp, H], bf16> -> !stg.tensor<[B, H], bf16>
  %gate = stg.einsum "bh,hf->bf" %x_full, %w_gate : !stg.tensor<[B, H], bf16>, !stg.tensor<[H, F/hp], bf16> -> !stg.tensor<[B, F/hp], bf16>
  %up = stg.einsum "bh,hf->bf" %x_full, %w_up : !stg.tensor<[B, H], bf16>, !stg.tensor<[H, F/hp], bf16> -> !stg.tensor<[B, F/hp], bf16>
  %silu = stg.elementwise silu %gate : !stg.tensor<[B, F/hp], bf16> -> !stg.tensor<[B, F/hp], bf16>
  %act = stg.elementwise mul %silu, %up : !stg.tensor<[B, F/hp], bf16>, !stg.tensor<[B, F/hp], bf16> -> !stg.tensor<[B, F/hp], bf16>
  %y = stg.einsum "bf,fh->bh" %act, %w_down : !stg.tensor<[B, F/hp], bf16>, !stg.tensor<[F/hp, H], bf16> -> !stg.tensor<[B, H] @hp, bf16>
  %y_shard = stg.reduce_scatter %y on @m [hp] : !stg.tensor<[B, H] @hp, bf16> -> !stg.tensor<[B/hp, H], bf16>
  func.return
}
