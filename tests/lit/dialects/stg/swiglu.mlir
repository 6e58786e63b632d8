// RUN: stagec-opt %s | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// swiglu(gate, up) = silu(gate) * up, Llama's MLP activation; with tp on the ffn
// dim both halves and the result are split alike (Megatron's column-parallel MLP).

stg.mesh @m [dp, tp]

func.func @swiglu(%g: !stg.tensor<[B/dp, S, F/tp], bf16>, %u: !stg.tensor<[B/dp, S, F/tp], bf16>) {
  %a = stg.elementwise swiglu %g, %u : !stg.tensor<[B/dp, S, F/tp], bf16>, !stg.tensor<[B/dp, S, F/tp], bf16> -> !stg.tensor<[B/dp, S, F/tp], bf16>
  func.return
}

// CHECK-LABEL: func.func @swiglu
// CHECK: stg.elementwise swiglu %{{.*}}, %{{.*}} : !stg.tensor<[B/dp, S, F/tp], bf16>, !stg.tensor<[B/dp, S, F/tp], bf16> -> !stg.tensor<[B/dp, S, F/tp], bf16>
// GENERIC: "stg.elementwise"(%{{.*}}, %{{.*}}) <{kind = #stg<elementwise_kind swiglu>}>
