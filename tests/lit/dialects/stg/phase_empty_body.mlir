// RUN: stagec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// A phase with an empty body `{}` (a region without a block) is a diagnostic, not a
// crash of the parser.

stg.phase forward {
}

// CHECK: error: 'stg.phase' op

// -----

stg.mesh @m [dp]
func.func @f() {
  stg.phase optimizer {}
  func.return
}

// CHECK: error: 'stg.phase' op
