// A Megatron tensor-parallel MLP (stage.md Table III), as the README shows it: the
// hidden layer split by columns over tp, the output a partial sum over tp reduced by
// an all-reduce. Try: stagec-opt examples/mlp.mlir -p stg-annotate-costs
stg.mesh @m [dp, tp = 8]
func.func @mlp() {
  %x = stg.input "x" : !stg.tensor<[B/dp, H], bf16>
  %w1 = stg.param "w1" : !stg.tensor<[H, 4*H/tp], bf16>
  %w2 = stg.param "w2" : !stg.tensor<[4*H/tp, H], bf16>
  %h = stg.einsum "bh,hf->bf" %x, %w1 : !stg.tensor<[B/dp, H], bf16>, !stg.tensor<[H, 4*H/tp], bf16> -> !stg.tensor<[B/dp, 4*H/tp], bf16>
  %a = stg.elementwise gelu %h : !stg.tensor<[B/dp, 4*H/tp], bf16> -> !stg.tensor<[B/dp, 4*H/tp], bf16>
  %y = stg.einsum "bf,fh->bh" %a, %w2 : !stg.tensor<[B/dp, 4*H/tp], bf16>, !stg.tensor<[4*H/tp, H], bf16> -> !stg.tensor<[B/dp, H] @tp, bf16>
  %z = stg.all_reduce %y on @m [tp] : !stg.tensor<[B/dp, H] @tp, bf16> -> !stg.tensor<[B/dp, H], bf16>
  func.return
}
