// RUN: stagec-opt %s --split-input-file --parsing-diagnostics --verify-diagnostics | filecheck %s

// Parse errors of the stg syntax: symbolic sizes, dims, partial-sum axes and the
// custom op forms.

// A symbol must be [A-Za-z_][A-Za-z0-9_]*; xDSL's bare identifiers also allow '.'.
func.func private @f() attributes {e = #stg.expr<a.b + 1>}

// CHECK: invalid symbol 'a.b': invalid symbol name 'a.b': expected [A-Za-z_][A-Za-z0-9_]*

// -----

func.func private @f(!stg.tensor<[x$y], f32>)

// CHECK: invalid symbol 'x$y': invalid symbol name 'x$y': expected [A-Za-z_][A-Za-z0-9_]*

// -----

// Division by zero.
func.func private @f() attributes {e = #stg.expr<B/0>}

// CHECK: division by zero: B/0

// -----

// A size may not be a quotient by a sum (not a polynomial over a monomial).
func.func private @f(!stg.tensor<[(B/(H + 1))], f32>)

// CHECK: cannot divide by a sum: B/(H + 1) is not a polynomial over a monomial

// -----

// A missing size.
func.func private @f(!stg.tensor<[B, ], f32>)

// CHECK: expected a size: an integer, a symbol or '(' expression ')'

// -----

func.func private @f() attributes {e = #stg.expr<>}

// CHECK: expected a size: an integer, a symbol or '(' expression ')'

// -----

// An unclosed parenthesis.
func.func private @f() attributes {e = #stg.dim<(H + 1/tp>}

// CHECK: Expected ')' to close a parenthesised size

// -----

// In a dim, a top-level '/' names a split axis; a quotient goes in parentheses.
func.func private @f(!stg.tensor<[B/2], f32>)

// CHECK: expected a mesh axis name after '/' in a dim; a quotient that is part of the size goes in parentheses, e.g. [(H/heads)/tp]

// -----

func.func private @f() attributes {d = #stg.dim<H/(tp)>}

// CHECK: expected a mesh axis name after '/' in a dim; a quotient that is part of the size goes in parentheses, e.g. [(H/heads)/tp]

// -----

// Partial-sum axes are identifiers joined by '*'.
func.func private @f(!stg.tensor<[B] @dp*, f32>)

// CHECK: identifier expected (a mesh axis of the partial sum)

// -----

// stg.wait takes a token.
stg.mesh @m [dp]
%x = stg.input "x" : !stg.tensor<[B/dp], f32>
%y = stg.wait %x : !stg.tensor<[B/dp], f32>

// CHECK: stg.wait takes a !stg.token, not !stg.tensor<[B/dp], f32>

// -----

// A mesh axis is an identifier.
stg.mesh @m [dp, 4]

// CHECK: identifier expected (a mesh axis name)

// -----

// A collective names its mesh with `on`.
stg.mesh @m [dp]
%x = stg.input "x" : !stg.tensor<[B/dp], f32>
%y = stg.all_gather %x @m [dp] : !stg.tensor<[B/dp], f32> -> !stg.tensor<[B], f32>

// CHECK: Expected 'on'

// -----

// A collective's axes are identifiers.
stg.mesh @m [dp]
%x = stg.input "x" : !stg.tensor<[B/dp], f32>
%y = stg.all_gather %x on @m [0] : !stg.tensor<[B/dp], f32> -> !stg.tensor<[B], f32>

// CHECK: identifier expected (a mesh axis)

// -----

// broadcast needs its root.
stg.mesh @m [dp]
%x = stg.input "x" : !stg.tensor<[B/dp], f32>
%y = stg.broadcast %x on @m [dp] : !stg.tensor<[B/dp], f32> -> !stg.tensor<[B/dp], f32>

// CHECK: Expected 'root'

// -----

// send and recv name the peer as `@mesh[axis = coordinate]` and a tag.
stg.mesh @m [pp = 2]
%x = stg.recv from @m[0] tag 1 : !stg.tensor<[B], f32>

// CHECK: identifier expected (the mesh axis to the peer)

// -----

stg.mesh @m [pp = 2]
%x = stg.input "x" : !stg.tensor<[B], f32>
stg.send %x to @m[pp = 1] : !stg.tensor<[B], f32>

// CHECK: Expected 'tag'

// -----

// attention names heads and kv_heads.
stg.mesh @m [dp]
%q = stg.input "q" : !stg.tensor<[B, S, N, D], bf16>
%o = stg.attention %q, %q, %q heads N : !stg.tensor<[B, S, N, D], bf16>, !stg.tensor<[B, S, N, D], bf16>, !stg.tensor<[B, S, N, D], bf16> -> !stg.tensor<[B, S, N, D], bf16>

// CHECK: Expected 'kv_heads'

// -----

// A phase kind is one of forward, backward, recompute, optimizer.
stg.phase sideways {
  stg.yield
}

// CHECK: Expected `forward`, `backward`, `recompute`, or `optimizer`.

// -----

// A repeat binds carried values as `%arg = %value : type`.
stg.mesh @m [dp]
%x = stg.input "x" : !stg.tensor<[B], f32>
%y = stg.repeat 2 carry(%a : !stg.tensor<[B], f32>) {
  stg.yield %a : !stg.tensor<[B], f32>
}

// CHECK: Expected '='

// -----

// Partial-sum axes are a set: an axis may be named once.
func.func private @f(!stg.tensor<[B] @tp*tp, f32>)

// CHECK: partial-sum axis 'tp' is listed twice
