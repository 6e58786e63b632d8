// The module's stg.config binds the model's symbols; the pass options add B, S and
// the mesh sizes, and win over stg.config, whose entry then records the option's value.
// RUN: stagec-opt %s --split-input-file --pass-pipeline='builtin.module(stg-instantiate{B=8 S=2048 dp=2})' | filecheck %s
// RUN: stagec-opt %s --split-input-file --pass-pipeline='builtin.module(stg-instantiate{B=8 S=2048 dp=2 H=2048})' | filecheck %s --check-prefix=OVERRIDE
// Partial instantiation: what is not bound stays symbolic.
// RUN: stagec-opt %s --split-input-file --pass-pipeline='builtin.module(stg-instantiate{dp=2})' | filecheck %s --check-prefix=PARTIAL

// CHECK:      builtin.module attributes {stg.model = "tiny", stg.config = {H = 1024 : i64, L = 4 : i64, N = 8 : i64, dtype = "bf16"}} {
// CHECK-NEXT:   stg.mesh @m [dp = 2]
// CHECK:        %x = stg.input "x" : !stg.tensor<[8/dp, 2048, 1024], bf16>
// CHECK-NEXT:   %w = stg.param "w" : !stg.tensor<[1024, 1024], bf16>
// CHECK-NEXT:   %r = stg.repeat 4 carry(%h = %x : !stg.tensor<[8/dp, 2048, 1024], bf16>) {

// OVERRIDE:      builtin.module attributes {stg.model = "tiny", stg.config = {H = 2048 : i64, L = 4 : i64, N = 8 : i64, dtype = "bf16"}} {
// OVERRIDE:        %x = stg.input "x" : !stg.tensor<[8/dp, 2048, 2048], bf16>
// OVERRIDE-NEXT:   %w = stg.param "w" : !stg.tensor<[2048, 2048], bf16>

// The model's symbols come from stg.config even with B and S left symbolic.
// PARTIAL:      builtin.module attributes {stg.model = "tiny", stg.config = {H = 1024 : i64, L = 4 : i64, N = 8 : i64, dtype = "bf16"}} {
// PARTIAL-NEXT:   stg.mesh @m [dp = 2]
// PARTIAL:        %x = stg.input "x" : !stg.tensor<[B/dp, S, 1024], bf16>
// PARTIAL-NEXT:   %w = stg.param "w" : !stg.tensor<[1024, 1024], bf16>
// PARTIAL-NEXT:   %r = stg.repeat 4 carry(%h = %x : !stg.tensor<[B/dp, S, 1024], bf16>) {
builtin.module attributes {stg.model = "tiny", stg.config = {H = 1024 : i64, L = 4 : i64, N = 8 : i64, dtype = "bf16"}} {
  stg.mesh @m [dp]
  func.func @forward() {
    %x = stg.input "x" : !stg.tensor<[B/dp, S, H], bf16>
    %w = stg.param "w" : !stg.tensor<[H, H], bf16>
    %r = stg.repeat L carry(%h = %x : !stg.tensor<[B/dp, S, H], bf16>) {
      %y = stg.einsum "bsh,hk->bsk" %h, %w : !stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[H, H], bf16> -> !stg.tensor<[B/dp, S, H], bf16>
      stg.yield %y : !stg.tensor<[B/dp, S, H], bf16>
    }
    func.return
  }
}

// -----

// Partial instantiation of a single expression: B*S*H/dp with only H and dp bound
// (H from stg.config, dp from the mesh) keeps B and S: 1024*B*S/2 = 512*B*S.
// CHECK-LABEL:   func.func @partial_expr
// CHECK:         flops <8388608> bytes <0>
// PARTIAL-LABEL: func.func @partial_expr
// PARTIAL:       flops <512*B*S> bytes <0>
builtin.module attributes {stg.config = {H = 1024 : i64}} {
  stg.mesh @m [dp = 2]
  func.func @partial_expr() {
    stg.opaque "k"() flops <B*S*H/dp> bytes <0> : () -> ()
    func.return
  }
}
