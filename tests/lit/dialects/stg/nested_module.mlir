// RUN: stagec-opt %s | stagec-opt | filecheck %s

// The mesh axes an op may use are those of the meshes of the module that holds it,
// which for a nested module is the inner module (as the collective's symbol lookup
// of @m already does), not the outermost one.

builtin.module {
  builtin.module @rank_class {
    stg.mesh @m [tp]
    func.func @f(%x: !stg.tensor<[B/tp], f32>) {
      %y = stg.all_gather %x on @m [tp] : !stg.tensor<[B/tp], f32> -> !stg.tensor<[B], f32>
      func.return
    }
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   builtin.module @rank_class {
// CHECK-NEXT:     stg.mesh @m [tp]
// CHECK-NEXT:     func.func @f(%x: !stg.tensor<[B/tp], f32>) {
// CHECK-NEXT:       %y = stg.all_gather %x on @m [tp] : !stg.tensor<[B/tp], f32> -> !stg.tensor<[B], f32>
// CHECK-NEXT:       func.return
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT: }
