// RUN: stagec-opt %s --print-op-generic | filecheck %s
// The generic form parses back to the same IR.
// RUN: stagec-opt %s --print-op-generic | stagec-opt | filecheck %s --check-prefix=CUSTOM

// CHECK:       "builtin.module"() ({
// CHECK-NEXT:    "func.func"() <{sym_name = "id", function_type = (i32) -> i32}> ({
// CHECK-NEXT:    ^bb0(%a: i32):
// CHECK-NEXT:      "func.return"(%a) : (i32) -> ()
// CHECK-NEXT:    }) : () -> ()
// CHECK-NEXT:  }) : () -> ()

// CUSTOM:      func.func @id(%a: i32) -> i32 {
// CUSTOM-NEXT:   func.return %a : i32
// CUSTOM-NEXT: }

func.func @id(%a: i32) -> i32 {
  func.return %a : i32
}
