// stagec-opt as mlir-opt behaves (issue 17, class 8):
// - --split-input-file reports a bad chunk and goes on: the good chunks are printed,
//   joined by one separator each (none dangling), and the exit status is 2;
// - an empty file, or an empty last chunk, is an empty module;
// - a file missing its closing brace says so, where the unclosed region opens;
// - input nested too deeply for the parser is one message, not an internal error.
// RUN: rm -rf %t && mkdir -p %t
// RUN: printf 'func.func @a() {\n  func.return\n}\n// -----\nfunc.func @b( {\n}\n// -----\nfunc.func @c() {\n  func.return\n}\n' > %t/mixed.mlir
// RUN: not stagec-opt %t/mixed.mlir --split-input-file > %t/out.mlir 2> %t/err.txt
// RUN: filecheck %s --check-prefix=GOOD < %t/out.mlir
// RUN: filecheck %s --check-prefix=BAD < %t/err.txt
// RUN: printf '' > %t/empty.mlir
// RUN: stagec-opt %t/empty.mlir | filecheck %s --check-prefix=EMPTY
// RUN: printf 'func.func @a() {\n  func.return\n}\n// -----\n// only a comment\n' > %t/last.mlir
// RUN: stagec-opt %t/last.mlir --split-input-file | filecheck %s --check-prefix=LAST
// RUN: printf 'func.func @f() {\n  func.return\n' > %t/brace.mlir
// RUN: not stagec-opt %t/brace.mlir 2>&1 | filecheck %s --check-prefix=BRACE
// RUN: %python -c "print('builtin.module {' * 3000 + '}' * 3000)" > %t/deep.mlir
// RUN: not stagec-opt %t/deep.mlir 2>&1 | filecheck %s --check-prefix=DEEP

// GOOD:      func.func @a()
// GOOD:      {{^// -----$}}
// GOOD-NEXT: builtin.module {
// GOOD-NEXT:   func.func @c()
// GOOD-NOT:  {{^// -----$}}
// BAD:       mixed.mlir:5:15: error: Expected argument or type
// BAD-NOT:   Traceback
// EMPTY:      builtin.module {
// EMPTY-NEXT: }
// LAST:      func.func @a()
// LAST:      {{^// -----$}}
// LAST-NEXT: builtin.module {
// LAST-NEXT: }
// BRACE: brace.mlir:1:16: error: expected '}' before the end of the input: the region or block opened here is not closed
// DEEP: deep.mlir: error: the input nests regions more deeply than stagec-opt's parser can follow (Python's recursion limit); flatten it or split it into functions
// DEEP-NOT: internal error
