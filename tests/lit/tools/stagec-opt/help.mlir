// --help teaches the tool: what it is, an example, and what it can load and run.
// RUN: stagec-opt --help | filecheck %s
// RUN: stagec-opt --version | filecheck %s --check-prefix=VERSION

// CHECK:      usage: stagec-opt
// CHECK:      stagec-opt parses an MLIR file
// CHECK:      --pass-pipeline PIPELINE
// CHECK:      examples:
// CHECK-NEXT:   stagec-opt examples/mlp.mlir --pass-pipeline='builtin.module(stg-annotate-costs,cse)' -o out.mlir
// CHECK:      dialects:
// CHECK-DAG:    builtin {{.+}}
// CHECK-DAG:    func {{.+}}
// CHECK-DAG:    stg {{.+}}
// CHECK-DAG:    torch {{.+}}
// CHECK:      passes:
// CHECK-DAG:    canonicalize {{.+}}
// CHECK-DAG:    cse {{.+}}
// CHECK-DAG:    dce {{.+}}
// CHECK-DAG:    stg-annotate-costs {{.+}}
// CHECK:      targets (-t):
// CHECK-NEXT:   mlir {{.+}}

// VERSION: {{^}}stagec-opt: stagec {{[0-9]+\.[0-9]+.*}}, xDSL {{[0-9]+\.[0-9]+.*$}}
