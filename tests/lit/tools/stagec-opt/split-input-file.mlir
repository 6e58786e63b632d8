// Each chunk is parsed, run and printed on its own; the outputs are joined by the
// same separator line as the inputs.
// RUN: stagec-opt %s --split-input-file -p dce | filecheck %s

// CHECK:       func.func @first() {
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK:       {{^// -{5}$}}
// CHECK:       func.func @second(%a: i32) -> i32 {
// CHECK-NEXT:    func.return %a : i32
// CHECK-NEXT:  }
// CHECK-NOT:   {{^// -{5}$}}

func.func @first() {
  func.return
}

// -----

func.func @second(%a: i32) -> i32 {
  %unused = builtin.unrealized_conversion_cast %a : i32 to i64
  func.return %a : i32
}
