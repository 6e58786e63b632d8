// -o writes the result to a file, through a temporary file beside it that replaces it
// only when the run succeeds.
// RUN: rm -rf %t.dir && mkdir %t.dir
// RUN: stagec-opt %s -o %t.dir/out.mlir
// RUN: filecheck %s < %t.dir/out.mlir

// CHECK: func.func @kept() {

// A run that fails after the output was opened (a parse error) leaves the earlier
// output as it was, and no temporary file behind.
// RUN: echo 'func.func @broken() {' | not stagec-opt -o %t.dir/out.mlir
// RUN: filecheck %s < %t.dir/out.mlir
// RUN: ls -A %t.dir | filecheck %s --check-prefix=DIR
// DIR-NOT: tmp
// DIR:     out.mlir
// DIR-NOT: tmp

// A failed run with no earlier output leaves no file at all.
// RUN: echo 'func.func @broken() {' | not stagec-opt -o %t.dir/new.mlir
// RUN: ls -A %t.dir | filecheck %s --check-prefix=DIR

func.func @kept() {
  func.return
}
