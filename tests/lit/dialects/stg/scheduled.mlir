// RUN: stagec-opt %s | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | stagec-opt | filecheck %s

// The scheduled form (docs/scheduled-ir.md): streams, groups issued as one, tokens.

stg.mesh @m [dp = 2, pp = 2, tp = 2]

// CHECK-LABEL: func.func @streams
// CHECK: %{{.*}} = stg.all_reduce %y on @m [tp] async stream "tp" : !stg.tensor<[B, H] @tp, bf16> -> !stg.token<!stg.tensor<[B, H], bf16>>
// CHECK: %{{.*}} = stg.wait %{{.*}} : !stg.token<!stg.tensor<[B, H], bf16>>
// CHECK: %{{.*}} = stg.send %z to @m[pp = 1] tag 0 async stream "send:pp=1" : !stg.tensor<[B, H], bf16>
// CHECK: %{{.*}} = stg.recv from @m[pp = 1] tag 1 async stream "recv:pp=1" : !stg.token<!stg.tensor<[B, H], bf16>>
// CHECK: %{{.*}} = stg.offload %z async stream "copy" : !stg.tensor<[B, H], bf16> -> !stg.token<!stg.host<[B, H], bf16>>
func.func @streams(%y: !stg.tensor<[B, H] @tp, bf16>) attributes {stg.scheduled} {
  %t = stg.all_reduce %y on @m [tp] async stream "tp" : !stg.tensor<[B, H] @tp, bf16> -> !stg.token<!stg.tensor<[B, H], bf16>>
  %z = stg.wait %t : !stg.token<!stg.tensor<[B, H], bf16>>
  %s = stg.send %z to @m[pp = 1] tag 0 async stream "send:pp=1" : !stg.tensor<[B, H], bf16>
  %r = stg.recv from @m[pp = 1] tag 1 async stream "recv:pp=1" : !stg.token<!stg.tensor<[B, H], bf16>>
  %h = stg.offload %z async stream "copy" : !stg.tensor<[B, H], bf16> -> !stg.token<!stg.host<[B, H], bf16>>
  stg.wait %s : !stg.token
  func.return
}

// CHECK-LABEL: func.func @groups
// CHECK:      %{{.*}}, %{{.*}} = stg.group {
// CHECK-NEXT:   %{{.*}} = stg.einsum "bh,hf->bf" %x, %w1
// CHECK-NEXT:   %{{.*}} = stg.einsum "bh,hf->bf" %x, %w2
// CHECK-NEXT:   stg.yield
// CHECK-NEXT: } : !stg.tensor<[B, F], bf16>, !stg.tensor<[B, F], bf16>
// CHECK:      %{{.*}}, %{{.*}} = stg.group async stream "dp" {
// CHECK-NEXT:   %{{.*}} = stg.all_gather %s1 on @m [dp]
// CHECK-NEXT:   %{{.*}} = stg.all_gather %s2 on @m [dp]
// CHECK-NEXT:   stg.yield
// CHECK-NEXT: } : !stg.token<!stg.tensor<[H, F], bf16>>, !stg.token<!stg.tensor<[H, F], bf16>>
func.func @groups(%x: !stg.tensor<[B, H], bf16>, %w1: !stg.tensor<[H, F], bf16>, %w2: !stg.tensor<[H, F], bf16>, %s1: !stg.tensor<[H/dp, F], bf16>, %s2: !stg.tensor<[H/dp, F], bf16>) {
  %a, %b = stg.group {
    %0 = stg.einsum "bh,hf->bf" %x, %w1 : !stg.tensor<[B, H], bf16>, !stg.tensor<[H, F], bf16> -> !stg.tensor<[B, F], bf16>
    %1 = stg.einsum "bh,hf->bf" %x, %w2 : !stg.tensor<[B, H], bf16>, !stg.tensor<[H, F], bf16> -> !stg.tensor<[B, F], bf16>
    stg.yield %0, %1 : !stg.tensor<[B, F], bf16>, !stg.tensor<[B, F], bf16>
  } : !stg.tensor<[B, F], bf16>, !stg.tensor<[B, F], bf16>
  %g1, %g2 = stg.group async stream "dp" {
    %0 = stg.all_gather %s1 on @m [dp] : !stg.tensor<[H/dp, F], bf16> -> !stg.tensor<[H, F], bf16>
    %1 = stg.all_gather %s2 on @m [dp] : !stg.tensor<[H/dp, F], bf16> -> !stg.tensor<[H, F], bf16>
    stg.yield %0, %1 : !stg.tensor<[H, F], bf16>, !stg.tensor<[H, F], bf16>
  } : !stg.token<!stg.tensor<[H, F], bf16>>, !stg.token<!stg.tensor<[H, F], bf16>>
  func.return
}
