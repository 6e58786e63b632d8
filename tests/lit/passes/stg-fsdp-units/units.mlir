// RUN: stagec-opt %s -p stg-fsdp-units | filecheck %s

// One FSDP unit: a layer's parameter all-gathers over one axis set are one all-gather
// of its flat parameter, issued where the first one stood; the all-gather of an
// activation stays apart.

stg.mesh @m [fsdp = 2]
func.func @layer(%x: !stg.tensor<[B/fsdp, H], bf16>) {
  %w1 = stg.param "w1" : !stg.tensor<[H/fsdp, F], bf16>
  %g1 = stg.all_gather %w1 on @m [fsdp] : !stg.tensor<[H/fsdp, F], bf16> -> !stg.tensor<[H, F], bf16>
  %h = stg.einsum "bh,hf->bf" %x, %g1 : !stg.tensor<[B/fsdp, H], bf16>, !stg.tensor<[H, F], bf16> -> !stg.tensor<[B/fsdp, F], bf16>
  %w2 = stg.param "w2" : !stg.tensor<[F/fsdp, H], bf16>
  %g2 = stg.all_gather %w2 on @m [fsdp] : !stg.tensor<[F/fsdp, H], bf16> -> !stg.tensor<[F, H], bf16>
  %y = stg.einsum "bf,fh->bh" %h, %g2 : !stg.tensor<[B/fsdp, F], bf16>, !stg.tensor<[F, H], bf16> -> !stg.tensor<[B/fsdp, H], bf16>
  %a = stg.all_gather %y on @m [fsdp] : !stg.tensor<[B/fsdp, H], bf16> -> !stg.tensor<[B, H], bf16>
  func.return
}

// CHECK-LABEL: func.func @layer
// CHECK-NEXT:    %w1 = stg.param "w1"
// CHECK-NEXT:    %w2 = stg.param "w2"
// CHECK-NEXT:    %g1, %g2 = stg.group {
// CHECK-NEXT:      %{{.*}} = stg.all_gather %w1 on @m [fsdp]
// CHECK-NEXT:      %{{.*}} = stg.all_gather %w2 on @m [fsdp]
// CHECK-NEXT:      stg.yield
// CHECK-NEXT:    } : !stg.tensor<[H, F], bf16>, !stg.tensor<[F, H], bf16>
// CHECK-NEXT:    %h = stg.einsum "bh,hf->bf" %x, %g1
// CHECK-NEXT:    %y = stg.einsum "bf,fh->bh" %h, %g2
// CHECK-NEXT:    %a = stg.all_gather %y on @m [fsdp]
