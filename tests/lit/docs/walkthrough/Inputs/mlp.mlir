// The walkthrough's model (docs/walkthrough.md): L layers of stage.md Table III's
// Llama MLP with a residual, y = x + down(silu(gate(x)) * up(x)), and a sum as the loss.
func.func @forward() -> !stg.tensor<[], f32> {
  %x = stg.input "x" : !stg.tensor<[B, H], f32>
  %out = stg.repeat L carry(%h = %x : !stg.tensor<[B, H], f32>) {
    %w_gate = stg.param "mlp.gate_proj" : !stg.tensor<[H, F], f32>
    %w_up = stg.param "mlp.up_proj" : !stg.tensor<[H, F], f32>
    %w_down = stg.param "mlp.down_proj" : !stg.tensor<[F, H], f32>
    %gate = stg.einsum "bh,hf->bf" %h, %w_gate : !stg.tensor<[B, H], f32>, !stg.tensor<[H, F], f32> -> !stg.tensor<[B, F], f32>
    %up = stg.einsum "bh,hf->bf" %h, %w_up : !stg.tensor<[B, H], f32>, !stg.tensor<[H, F], f32> -> !stg.tensor<[B, F], f32>
    %silu = stg.elementwise silu %gate : !stg.tensor<[B, F], f32> -> !stg.tensor<[B, F], f32>
    %act = stg.elementwise mul %silu, %up : !stg.tensor<[B, F], f32>, !stg.tensor<[B, F], f32> -> !stg.tensor<[B, F], f32>
    %y = stg.einsum "bf,fh->bh" %act, %w_down : !stg.tensor<[B, F], f32>, !stg.tensor<[F, H], f32> -> !stg.tensor<[B, H], f32>
    %r = stg.elementwise add %h, %y : !stg.tensor<[B, H], f32>, !stg.tensor<[B, H], f32> -> !stg.tensor<[B, H], f32>
    stg.yield %r : !stg.tensor<[B, H], f32>
  }
  %loss = stg.reduce sum %out dims [0, 1] : !stg.tensor<[B, H], f32> -> !stg.tensor<[], f32>
  func.return %loss : !stg.tensor<[], f32>
}
