// The main job on the built-in default: the Llama MLP under Megatron TP, annotated
// with per-rank costs; and the same IR unannotated, which stagec-opt reads back.
// RUN: stagec ir | filecheck %s
// RUN: stagec ir --pass-pipeline 'builtin.module()' | stagec-opt | filecheck %s --check-prefix=PLAIN
// RUN: not stagec ir --pass-pipeline 'builtin.module(stg-anotate-costs)' 2>&1 | filecheck %s --check-prefix=ERR
// RUN: not stagec ir --model llama3.2-1b --pass-pipeline 'builtin.module(stg-autodiff{micro_batches=0})' 2>&1 | filecheck %s --check-prefix=PASSERR

// Three GEMMs of 2*B*S*H*F/tp, silu (4) and mul (1) on [B, S, F/tp].
// CHECK:      stg.mesh @m [tp]
// CHECK:      func.func @llama_mlp() attributes {stg.total_flops = #stg.expr<(6*B*F*H*S + 5*B*F*S)/tp>
// CHECK:      stg.einsum "bsf,fh->bsh" {{.*}} -> !stg.tensor<[B, S, H] @tp, bf16>
// CHECK-NEXT: stg.all_reduce {{.*}} on @m [tp] {stg.flops = #stg.expr<0>, stg.bytes = #stg.expr<2*B*H*S>}

// PLAIN:      func.func @llama_mlp() {
// PLAIN-NOT:  stg.flops
// PLAIN:      stg.all_reduce

// ERR: stagec: error: unknown pass 'stg-anotate-costs'; did you mean 'stg-annotate-costs'

// A pass refusing its input is one line and exit code 2, not a traceback.
// PASSERR:     stagec: error: micro_batches=0 must be at least 1
// PASSERR-NOT: Traceback
