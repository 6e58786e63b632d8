// Malformed torch types are parse errors at the offending token.
// RUN: stagec-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:30: error: unknown torch type 'integer'
func.func @f(%a: !torch.list<integer>) {
  func.return
}

// -----

// CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:34: error: Expected integer literal
func.func @f(%a: !torch.vtensor<[-1],f32>) {
  func.return
}

// -----

// CHECK: {{.*}}invalid.mlir:[[# @LINE + 1]]:36: error: Expected ','
func.func @f(%a: !torch.vtensor<[2]>) {
  func.return
}
