// complete=true: every symbol must get a value; the error lists those left, each
// with the first op that uses it. Without complete=true they stay symbolic.
// RUN: not stagec-opt %s --pass-pipeline='builtin.module(stg-instantiate{B=8 complete=true})' 2>&1 | filecheck %s
// RUN: stagec-opt %s --verify-diagnostics -p 'stg-instantiate{B=8,complete=true}' | filecheck %s
// RUN: stagec-opt %s -p 'stg-instantiate{B=8}' | filecheck %s --check-prefix=PARTIAL

// CHECK: {{^}}{{.*}}complete.mlir: error: pass 'stg-instantiate' failed: complete=true, but symbols are left without a value: H (first used by 'stg.input' op at {{.*}}complete.mlir:[[# @LINE + 7]]:8), dp (first used by 'stg.mesh' op at {{.*}}complete.mlir:[[# @LINE + 5]]:1), k (first used by 'stg.opaque' op at {{.*}}complete.mlir:[[# @LINE + 8]]:3){{$}}

// PARTIAL:      stg.mesh @m [dp]
// PARTIAL:      %x = stg.input "x" : !stg.tensor<[8/dp, H], f32>
// PARTIAL-NEXT: stg.opaque "f"() flops <8*k> bytes <0> : () -> ()
stg.mesh @m [dp]
func.func @f() {
  %x = stg.input "x" : !stg.tensor<[B/dp, H], f32>
  stg.opaque "f"() flops <B*k> bytes <0> : () -> ()
  func.return
}
