// A file that starts with a UTF-8 byte order mark (as some editors save it) parses as
// the same file without it; the mark is no MLIR token, and an error about it would
// point at an invisible character (review of issue 17).
// RUN: printf '\357\273\277func.func @marked() {\n  func.return\n}\n' > %t.mlir
// RUN: stagec-opt %t.mlir | filecheck %s
// CHECK: func.func @marked() {
