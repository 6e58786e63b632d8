// RUN: stagec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// An async collective or recv returns a token that carries its result; a bare
// !stg.token (which only an async send returns) is a diagnostic, not a crash of the
// verifier nor an accepted recv of nothing.

stg.mesh @m [dp]
func.func @f(%x: !stg.tensor<[B/dp], f32>) {
  %t = stg.all_gather %x on @m [dp] async : !stg.tensor<[B/dp], f32> -> !stg.token
  func.return
}

// CHECK: error: 'stg.all_gather' op

// -----

stg.mesh @m [tp]
func.func @f(%x: !stg.tensor<[B] @tp, f32>) {
  %t = stg.all_reduce %x on @m [tp] async : !stg.tensor<[B] @tp, f32> -> !stg.token
  func.return
}

// CHECK: error: 'stg.all_reduce' op

// -----

stg.mesh @m [pp = 2]
%t = stg.recv from @m[pp = 0] tag 0 async : !stg.token

// CHECK: error: 'stg.recv' op
