// A binding of a symbol the program does not have is refused where it is made - `s=64`
// for `S` used to pass and surface later as "unbound symbol S" (issue 17, class 7) -
// unless allow-unused=true (one pipeline for several programs).
// RUN: not stagec-opt %s --pass-pipeline='builtin.module(stg-instantiate{B=8 s=64})' 2>&1 | filecheck %s
// RUN: stagec-opt %s --pass-pipeline='builtin.module(stg-instantiate{B=8 s=64 dp=2 allow-unused=true})' | filecheck %s --check-prefix=ALLOWED

// CHECK: error: pass 'stg-instantiate' failed: stg-instantiate binds 's' (did you mean 'S'?), which the program does not have; its symbols are B, S, dp (allow-unused=true accepts the others)
// CHECK-NOT: Traceback
// ALLOWED: %x = stg.input "x" : !stg.tensor<[8/dp, S], bf16>

stg.mesh @m [dp]
func.func @f() {
  %x = stg.input "x" : !stg.tensor<[B/dp, S], bf16>
  func.return
}
