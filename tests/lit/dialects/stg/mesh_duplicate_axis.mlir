// RUN: stagec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// An axis declared twice in the custom form is reported like in the generic form
// (invalid_mesh.mlir), not silently merged into one axis.

stg.mesh @m [tp = 2, tp = 4]

// CHECK: mesh @m declares an axis twice: ['tp', 'tp']

// -----

stg.mesh @m [dp, pp = 2, dp]

// CHECK: mesh @m declares an axis twice: ['dp', 'pp', 'dp']
