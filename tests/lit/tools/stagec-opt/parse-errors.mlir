// IR that does not parse: `file:line:col: error: message`, then the line with the
// place marked. --parsing-diagnostics prints each chunk's error and goes on (exit 0),
// so one file pins them all; the line numbers count from the top of the whole file.
// RUN: stagec-opt %s --split-input-file --parsing-diagnostics | filecheck %s --strict-whitespace
// Without it, as mlir-opt does, each chunk's error goes to stderr and the run goes on
// to the next chunk (issue 17, class 8): the same errors, and exit status 2.
// RUN: not stagec-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s --strict-whitespace

// CHECK:      {{^}}{{.*}}parse-errors.mlir:[[# @LINE + 3]]:8: error: unregistered operation 'arith.constant' (known dialects: builtin, func, {{.*}}; --allow-unregistered-dialect accepts other ops in generic form){{$}}
// CHECK-NEXT: {{^}}  %0 = arith.constant 1 : i32{{$}}
// CHECK-NEXT: {{^}}       ^^^^^^^^^^^^^^{{$}}
  %0 = arith.constant 1 : i32

// -----

// CHECK:      {{^}}{{.*}}parse-errors.mlir:[[# @LINE + 3]]:29: error: type expected{{$}}
// CHECK-NEXT: {{^}}func.func @missing_type(%a: ) {{[{]}}{{$}}
// CHECK-NEXT: {{^}}                            ^{{$}}
func.func @missing_type(%a: ) {
  func.return
}

// -----

// One '}' too many (review): named, rather than xDSL's "Could not parse entire input!".
// CHECK:      {{^}}{{.*}}parse-errors.mlir:[[# @LINE + 5]]:2: error: unexpected '}': it closes no region or block (one '}' too many?){{$}}
// CHECK-NEXT: {{^}}{{[}][}]}}{{$}}
// CHECK-NEXT: {{^}} ^{{$}}
func.func @closed_twice() {
  func.return
}}

// -----

// xDSL notices an undefined value at the end of the chunk, and points there.
// CHECK: {{^}}{{.*}}parse-errors.mlir:[[# @LINE + 4]]:1: error: values used but not defined: [%undefined]{{$}}
func.func @undefined(%a: i32) -> i32 {
  func.return %undefined : i32
}
