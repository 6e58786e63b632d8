// IR that parses but does not verify: the error is located at the op that fails, as
// `file:line:col: error: 'op.name' op message`. --verify-diagnostics prints each
// chunk's error on stdout and goes on (exit 0), so that one file pins them all.
// RUN: stagec-opt %s --split-input-file --verify-diagnostics | filecheck %s
// Without it, as mlir-opt does, each chunk's error goes to stderr and the run goes on
// to the next chunk (issue 17, class 8): the same errors, and exit status 2.
// RUN: not stagec-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s

// CHECK: {{^}}{{.*}}verify-errors.mlir:[[# @LINE + 2]]:3: error: 'func.return' op Expected arguments to have the same types as the function output types: expected [i32], got []{{$}}
func.func @too_few_results(%a: i32) -> i32 {
  func.return
}

// -----

// The location is the op's name, after its results.
// CHECK: {{^}}{{.*}}verify-errors.mlir:[[# @LINE + 2]]:8: error: 'func.call' op result type mismatch: expected result type i32, but provided i64 for result number 0{{$}}
func.func @call_result_type() -> i32 {
  %0 = "func.call"() <{callee = @call_result_type}> : () -> i64
  %1 = func.call @call_result_type() : () -> i32
  func.return %1 : i32
}

// -----

// CHECK: {{^}}{{.*}}verify-errors.mlir:[[# @LINE + 2]]:3: error: 'func.return' op Expected arguments to have the same types as the function output types: expected [], got [!torch.int]{{$}}
func.func @returns_torch_int(%a: !torch.int) {
  func.return %a : !torch.int
}

// -----

// An attribute that the parser builds but that does not verify is a verification
// error too, located at its op.
// CHECK:      {{^}}{{.*}}verify-errors.mlir:[[# @LINE + 3]]:3: error: Integer value 300 is out of range for type i8 which supports values in the range [-128, 256){{$}}
// CHECK-NEXT: {{^}}  "func.return"() {too_big = 300 : i8} : () -> (){{$}}
func.func @bad_attribute() {
  "func.return"() {too_big = 300 : i8} : () -> ()
}
