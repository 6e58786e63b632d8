// The same pipeline, spelled as mlir-opt writes it (with and without the
// builtin.module anchor, spaces between passes allowed) and as xDSL's -p does.
// RUN: stagec-opt %s --pass-pipeline='builtin.module(cse, dce)' | filecheck %s
// RUN: stagec-opt %s --pass-pipeline='cse,dce' | filecheck %s
// RUN: stagec-opt %s -p 'cse,dce' | filecheck %s
// Empty option braces are an empty option list.
// RUN: stagec-opt %s --pass-pipeline='builtin.module(cse{},dce{})' | filecheck %s
// An empty pipeline runs nothing.
// RUN: stagec-opt %s --pass-pipeline='builtin.module()' | filecheck %s --check-prefix=NONE
// Options are written the same way for targets; a bool option of the mlir target:
// RUN: stagec-opt %s -t 'mlir{print-generic-format=true}' | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @duplicated_casts(%a: i32) -> i64 {
// CHECK-NEXT:    %0 = builtin.unrealized_conversion_cast %a : i32 to i64
// CHECK-NEXT:    func.return %0 : i64
// CHECK-NEXT:  }

// NONE-COUNT-3: builtin.unrealized_conversion_cast

// GENERIC: "func.func"() <{sym_name = "duplicated_casts", function_type = (i32) -> i64}>

func.func @duplicated_casts(%a: i32) -> i64 {
  %0 = builtin.unrealized_conversion_cast %a : i32 to i64
  %1 = builtin.unrealized_conversion_cast %a : i32 to i64
  %unused = builtin.unrealized_conversion_cast %a : i32 to i16
  func.return %1 : i64
}
