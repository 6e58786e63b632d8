// Bindings that make the IR impossible are errors naming the op (with its place in
// this file), the place in it and the values. Each chunk's stg.config binds its
// model; the options bind dp = 4. --verify-diagnostics prints each chunk's error and
// goes on, so that one file pins them all.
// RUN: stagec-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(stg-instantiate{dp=4 allow-unused=true})' | filecheck %s
// Without it, as mlir-opt does, each chunk's error goes to stderr and the run goes on
// (exit code 2): the same errors.
// RUN: not stagec-opt %s --split-input-file --pass-pipeline='builtin.module(stg-instantiate{dp=4 allow-unused=true})' 2>&1 >/dev/null | filecheck %s

// A split dim must divide evenly over its axes.
// CHECK:     {{^}}{{.*}}errors.mlir: error: pass 'stg-instantiate' failed: 'stg.input' op at {{.*}}errors.mlir:[[# @LINE + 3]]:8: dim 0 of %x ([B/dp, S]): B = 10 is not divisible by dp = 4{{$}}
builtin.module attributes {stg.config = {B = 10 : i64}} {
  stg.mesh @m [dp]
  %x = stg.input "x" : !stg.tensor<[B/dp, S], f32>
}

// -----

// Over several axes, by their product (tp major, then dp).
// CHECK: {{^}}{{.*}}: error: pass 'stg-instantiate' failed: 'stg.input' op at {{.*}}errors.mlir:[[# @LINE + 3]]:8: dim 1 of %x ([S, 4*H/tp/dp]): 4*H = 20 is not divisible by tp*dp = 8 (dp = 4, tp = 2){{$}}
builtin.module attributes {stg.config = {H = 5 : i64}} {
  stg.mesh @m [dp, tp = 2]
  %x = stg.input "x" : !stg.tensor<[S, 4*H/tp/dp], f32>
}

// -----

// A size with a quotient of its own must come out integral: head_dim H/N.
// CHECK: {{^}}{{.*}}: error: pass 'stg-instantiate' failed: 'func.func' op at {{.*}}errors.mlir:[[# @LINE + 2]]:3: dim 3 of %q ([B, S, N, (H/N)]): H/N = 10/4 is not an integer (H = 10, N = 4){{$}}
builtin.module attributes {stg.config = {H = 10 : i64, N = 4 : i64}} {
  func.func @head_dim(%q: !stg.tensor<[B, S, N, (H/N)], bf16>) {
    func.return
  }
}

// -----

// A count must come out positive: a stack of L - 1 layers with L = 1.
// CHECK: {{^}}{{.*}}: error: pass 'stg-instantiate' failed: 'stg.repeat' op at {{.*}}errors.mlir:[[# @LINE + 4]]:10: count: L - 1 = 0 is not a positive integer (L = 1){{$}}
builtin.module attributes {stg.config = {L = 1 : i64}} {
  func.func @layers() {
    %x = stg.input "x" : !stg.tensor<[B, H], f32>
    %y = stg.repeat L - 1 carry(%h = %x : !stg.tensor<[B, H], f32>) {
      stg.yield %h : !stg.tensor<[B, H], f32>
    }
    func.return
  }
}

// -----

// A mesh axis has one size: the pass options bind dp = 4.
// CHECK: {{^}}{{.*}}: error: pass 'stg-instantiate' failed: 'stg.mesh' op at {{.*}}errors.mlir:[[# @LINE + 1]]:1: mesh axis 'dp' of @m has size 2, but the pass options bind dp = 4{{$}}
stg.mesh @m [dp = 2]

// -----

// ... which stg.config must agree with too ...
// CHECK: {{^}}{{.*}}: error: pass 'stg-instantiate' failed: 'stg.mesh' op at {{.*}}errors.mlir:[[# @LINE + 2]]:3: mesh axis 'tp' of @m has size 2*K = 4, but stg.config binds tp = 8{{$}}
builtin.module attributes {stg.config = {tp = 8 : i64, K = 2 : i64}} {
  stg.mesh @m [tp = 2*K]
}

// -----

// ... and so must every mesh declaring the axis.
// CHECK: {{^}}{{.*}}: error: pass 'stg-instantiate' failed: 'stg.mesh' op at {{.*}}errors.mlir:[[# @LINE + 2]]:1: mesh axis 'tp' of @b has size 8, but @a gives it size 2{{$}}
stg.mesh @a [tp = 2]
stg.mesh @b [tp = 8]

// -----

// Bindings can make IR that no longer verifies: 12 query heads do not group over 5
// key/value heads (GQA), which only the numbers show.
// CHECK: {{^}}{{.*}}: error: pass 'stg-instantiate' failed: the instantiated IR does not verify: 'stg.attention' op at {{.*}}errors.mlir:[[# @LINE + 5]]:10: attention: 12 heads cannot be grouped over 5 kv heads{{$}}
builtin.module attributes {stg.config = {N = 12 : i64, KV = 5 : i64}} {
  func.func @gqa() {
    %q = stg.input "q" : !stg.tensor<[B, S, N, D], bf16>
    %k = stg.input "k" : !stg.tensor<[B, S, KV, D], bf16>
    %o = stg.attention %q, %k, %k heads N kv_heads KV causal : !stg.tensor<[B, S, N, D], bf16>, !stg.tensor<[B, S, KV, D], bf16>, !stg.tensor<[B, S, KV, D], bf16> -> !stg.tensor<[B, S, N, D], bf16>
    func.return
  }
}
