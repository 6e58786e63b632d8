// RUN: not stagec-opt %s -p stg-bucket-gradients 2>&1 | filecheck %s
// RUN: not stagec-opt %s -p 'stg-bucket-gradients{bucket_mb=-1}' 2>&1 | filecheck %s --check-prefix=OPTION

// Bucketing weighs bytes: the mesh sizes must be numbers.

stg.mesh @m [dp]
func.func @train_step() {
  stg.phase optimizer {
    %g = stg.optimizer_state "grad" of "w" : !stg.tensor<[H] @dp, f32>
    %r = stg.all_reduce %g on @m [dp] : !stg.tensor<[H] @dp, f32> -> !stg.tensor<[H], f32>
    stg.yield
  }
  func.return
}

// CHECK: error: pass 'stg-bucket-gradients' failed: stg-bucket-gradients needs numeric sizes: mesh axis 'dp' is dp
// OPTION: bucket_mb must be >= 0 and zero_bucket_elements >= 1, not -1 and 40000000
