// Malformed bindings are command-line errors naming the pass and the option (exit 2).
// RUN: not stagec-opt %s -p 'stg-instantiate{B=x}' 2>&1 | filecheck %s --check-prefix=VALUE
// RUN: not stagec-opt %s --pass-pipeline='builtin.module(stg-instantiate{B=8,S=4.5})' 2>&1 | filecheck %s --check-prefix=FLOAT
// RUN: not stagec-opt %s -p 'stg-instantiate{B=8,S}' 2>&1 | filecheck %s --check-prefix=PAIR
// RUN: not stagec-opt %s -p 'stg-instantiate{B=8=9}' 2>&1 | filecheck %s --check-prefix=EQUALS
// RUN: not stagec-opt %s -p 'stg-instantiate{B=8 B=9}' 2>&1 | filecheck %s --check-prefix=TWICE
// RUN: not stagec-opt %s -p 'stg-instantiate{batch-size=8}' 2>&1 | filecheck %s --check-prefix=NAME
// RUN: not stagec-opt %s -p 'stg-instantiate{complete=yes}' 2>&1 | filecheck %s --check-prefix=COMPLETE
// Other passes keep their own options: a pair is no option of cse.
// RUN: not stagec-opt %s -p 'cse{B=8}' 2>&1 | filecheck %s --check-prefix=OTHER

// VALUE:    {{^}}stagec-opt: error: option 'B' of pass 'stg-instantiate' binds symbol B and expects an integer, got 'x'{{$}}
// FLOAT:    {{^}}stagec-opt: error: option 'S' of pass 'stg-instantiate' binds symbol S and expects an integer, got '4.5'{{$}}
// PAIR:     {{^}}stagec-opt: error: malformed option 'S' of pass 'stg-instantiate': expected symbol=integer pairs, as in 'stg-instantiate{B=8 S=4096}' or 'stg-instantiate{B=8,S=4096}'{{$}}
// EQUALS:   {{^}}stagec-opt: error: malformed option 'B=8=9' of pass 'stg-instantiate': expected symbol=integer pairs
// TWICE:    {{^}}stagec-opt: error: option 'B' of pass 'stg-instantiate' is given twice{{$}}
// NAME:     {{^}}stagec-opt: error: option 'batch-size' of pass 'stg-instantiate' is neither a symbol name nor one of its options (complete, allow-unused){{$}}
// COMPLETE: {{^}}stagec-opt: error: option 'complete' of pass 'stg-instantiate' expects bool, got 'yes'{{$}}
// OTHER:    {{^}}stagec-opt: error: unknown option 'B' for pass 'cse'

func.func @f() {
  func.return
}
