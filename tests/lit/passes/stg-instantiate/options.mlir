// Bindings are written as MLIR writes pass options (space-separated) or
// comma-separated, with --pass-pipeline or xDSL's -p, beside other passes and the
// pass's own option complete=true (nothing is left unbound here).
// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-instantiate{B=8 S=4096 dp=2})' | filecheck %s
// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-instantiate{B=8,S=4096,dp=2})' | filecheck %s
// RUN: stagec-opt %s --pass-pipeline='builtin.module(cse, stg-instantiate{B=8, S=4096 dp=2 complete=true}, dce)' | filecheck %s
// RUN: stagec-opt %s -p 'stg-instantiate{B=8,S=4096,dp=2,complete=true}' | filecheck %s
// RUN: stagec-opt %s -p 'stg-instantiate{complete=false B=8 S=4096 dp=2}' | filecheck %s

// CHECK:      stg.mesh @m [dp = 2]
// CHECK-NEXT: func.func @f(%x: !stg.tensor<[8/dp, 4096], f32>) {
stg.mesh @m [dp]
func.func @f(%x: !stg.tensor<[B/dp, S], f32>) {
  func.return
}
