// RUN: stagec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// stg.mesh, the MeshAxesDeclared trait and mesh symbol lookup.

// An axis declared twice (in the generic form; see mesh_duplicate_axis.mlir for the
// custom form).
"stg.mesh"() <{sym_name = "m", axes = ["tp", "tp"], sizes = [#stg.expr<2>, #stg.expr<4>]}> : () -> ()

// CHECK: mesh @m declares an axis twice: ['tp', 'tp']

// -----

// One size per axis.
"stg.mesh"() <{sym_name = "m", axes = ["dp", "tp"], sizes = [#stg.expr<dp>]}> : () -> ()

// CHECK: mesh: one size per axis is required

// -----

// Axis sizes are positive integers ...
stg.mesh @m [dp, tp = 0]

// CHECK: mesh axis 'tp' must have a positive integer size, not 0

// -----

stg.mesh @m [pp = -2]

// CHECK: mesh axis 'pp' must have a positive integer size, not -2

// -----

// ... not fractions.
stg.mesh @m [tp = 3/2]

// CHECK: mesh axis 'tp' must have a positive integer size, not 3/2

// -----

// Every axis a tensor mentions is declared by a mesh of the module.
stg.mesh @m [dp]
%x = stg.input "x" : !stg.tensor<[B/dp, H/tp], bf16>

// CHECK: mesh axis 'tp' is not declared by any stg.mesh (declared axes: dp)

// -----

// Partial-sum axes too, and axes of several meshes count.
stg.mesh @a [dp]
stg.mesh @b [pp = 2, tp]
func.func @f(%x: !stg.tensor<[B/dp, H/tp] @sp, f32>) {
  %y = stg.elementwise neg %x : !stg.tensor<[B/dp, H/tp] @sp, f32> -> !stg.tensor<[B/dp, H/tp] @sp, f32>
  func.return
}

// CHECK: mesh axis 'sp' is not declared by any stg.mesh (declared axes: dp, pp, tp)

// -----

// A module without a mesh cannot use any axis.
%w = stg.param "w" : !stg.tensor<[H, F/tp], bf16>

// CHECK: mesh axis 'tp' is not declared by any stg.mesh (the module declares no stg.mesh)

// -----

// Tokens' payloads count (here an async recv).
stg.mesh @m [pp = 2]
%t = stg.recv from @m[pp = 0] tag 0 async : !stg.token<!stg.tensor<[B/dp], f32>>

// CHECK: mesh axis 'dp' is not declared by any stg.mesh (declared axes: pp)

// -----

// So do memory ops' operands.
stg.mesh @m [dp]
func.func @f(%h: !stg.host<[B/ep], f32>) {
  %d = stg.reload %h : !stg.host<[B/ep], f32> -> !stg.tensor<[B/ep], f32>
  func.return
}

// CHECK: mesh axis 'ep' is not declared by any stg.mesh (declared axes: dp)

// -----

// A collective names a mesh that exists ...
stg.mesh @m [dp]
%x = stg.input "x" : !stg.tensor<[B/dp], f32>
%y = stg.all_gather %x on @world [dp] : !stg.tensor<[B/dp], f32> -> !stg.tensor<[B], f32>

// CHECK: 'stg.all_gather' refers to @world, which is not a stg.mesh in scope

// -----

// ... and is a stg.mesh.
stg.mesh @m [dp]
func.func private @world()
%x = stg.input "x" : !stg.tensor<[B/dp], f32>
%y = stg.reshard %x on @world : !stg.tensor<[B/dp], f32> -> !stg.tensor<[B], f32>

// CHECK: 'stg.reshard' refers to @world, which is not a stg.mesh in scope

// -----

// Collective axes belong to the collective's own mesh, not just to some mesh.
stg.mesh @a [dp]
stg.mesh @b [tp]
%x = stg.input "x" : !stg.tensor<[B/dp], f32>
%y = stg.all_gather %x on @b [dp] : !stg.tensor<[B/dp], f32> -> !stg.tensor<[B], f32>

// CHECK: 'stg.all_gather': axis 'dp' is not an axis of mesh @b (tp)

// -----

// The same for a reshard's layouts ...
stg.mesh @a [dp]
stg.mesh @b [tp]
%x = stg.input "x" : !stg.tensor<[B/dp], f32>
%y = stg.reshard %x on @b : !stg.tensor<[B/dp], f32> -> !stg.tensor<[B/tp], f32>

// CHECK: 'stg.reshard': axis 'dp' is not an axis of mesh @b (tp)

// -----

// ... and a point-to-point op's axis.
stg.mesh @a [dp]
stg.mesh @b [pp = 2]
%x = stg.recv from @b[dp = 0] tag 0 : !stg.tensor<[B], f32>

// CHECK: 'stg.recv': axis 'dp' is not an axis of mesh @b (pp)
