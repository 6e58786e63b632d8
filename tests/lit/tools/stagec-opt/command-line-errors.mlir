// Each mistake on the command line is one message on stderr and a failing exit code
// (2: tests/unit/test_stagec_opt.py checks the code itself).

// RUN: not stagec-opt %s -p cs 2>&1 | filecheck %s --check-prefix=UNKNOWN-PASS
// UNKNOWN-PASS: {{^}}stagec-opt: error: unknown pass 'cs'; did you mean 'cse'?{{$}}

// RUN: not stagec-opt %s --pass-pipeline='builtin.module(xyzzy)' 2>&1 | filecheck %s --check-prefix=NO-CLOSE-PASS
// NO-CLOSE-PASS: {{^}}stagec-opt: error: unknown pass 'xyzzy'; known: {{.*}}canonicalize, convert-torch-to-stg, cse, dce{{.*$}}

// RUN: not stagec-opt %s --pass-pipeline='builtin.module(cse{max-iterations=3})' 2>&1 | filecheck %s --check-prefix=UNKNOWN-OPTION
// UNKNOWN-OPTION: {{^}}stagec-opt: error: unknown option 'max-iterations' for pass 'cse' (its options: none){{$}}

// RUN: not stagec-opt %s -t 'mlir{print-generic-format=3}' 2>&1 | filecheck %s --check-prefix=OPTION-TYPE
// OPTION-TYPE: {{^}}stagec-opt: error: option 'print-generic-format' of target 'mlir' expects bool, got '3'{{$}}

// RUN: not stagec-opt %s --pass-pipeline='builtin.module(cse,,dce)' 2>&1 | filecheck %s --check-prefix=MALFORMED --strict-whitespace
// MALFORMED:      {{^}}stagec-opt: error: malformed pass pipeline at column 5: Expected pass name here{{$}}
// MALFORMED-NEXT: {{^}}  cse,,dce{{$}}
// MALFORMED-NEXT: {{^}}      ^{{$}}

// RUN: not stagec-opt %s --pass-pipeline='builtin.module(func.func(cse))' 2>&1 | filecheck %s --check-prefix=NESTED
// NESTED: {{^}}stagec-opt: error: nested pass pipelines such as 'func.func(...)' are not supported by stagec-opt: its passes run on the whole module; list them directly inside 'builtin.module(...)'{{$}}

// RUN: not stagec-opt %s -p cse --pass-pipeline='builtin.module(cse)' 2>&1 | filecheck %s --check-prefix=BOTH
// BOTH: {{^}}stagec-opt: error: give the pass pipeline with -p/--passes or with --pass-pipeline, not both{{$}}

// RUN: not stagec-opt %s -t mlr 2>&1 | filecheck %s --check-prefix=UNKNOWN-TARGET
// UNKNOWN-TARGET: {{^}}stagec-opt: error: unknown target 'mlr'; did you mean 'mlir'?{{$}}

// RUN: not stagec-opt %t.no-such-file.mlir 2>&1 | filecheck %s --check-prefix=MISSING-INPUT
// MISSING-INPUT: {{^}}stagec-opt: error: cannot open input file '{{.*}}.no-such-file.mlir': No such file or directory{{$}}

// RUN: not stagec-opt %s -o %t.no-such-dir/out.mlir 2>&1 | filecheck %s --check-prefix=BAD-OUTPUT
// BAD-OUTPUT: {{^}}stagec-opt: error: cannot write output file '{{.*}}.no-such-dir/out.mlir': No such file or directory{{$}}

// RUN: not stagec-opt %s --frobnicate 2>&1 | filecheck %s --check-prefix=UNKNOWN-FLAG
// UNKNOWN-FLAG: {{^}}stagec-opt: error: unrecognized arguments: --frobnicate (see 'stagec-opt --help'){{$}}

func.func @f() {
  func.return
}
