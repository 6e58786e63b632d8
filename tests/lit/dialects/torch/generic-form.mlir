// torch-mlir output in generic form parses, and prints back as it was written: every
// `torch.*` op through its catch-all op class, every torch type in torch-mlir's
// spelling (nested torch types without their `!torch.` prefix).
// RUN: stagec-opt %s | filecheck %s
// RUN: stagec-opt %s | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | stagec-opt | filecheck %s
// torch-mlir itself reads what stagec-opt prints, and stagec-opt reads torch-mlir's:
// RUN: stagec-opt %s --print-op-generic | torch-mlir-opt --mlir-print-op-generic \
// RUN:   | stagec-opt | filecheck %s --check-prefix=TORCH-MLIR

// TORCH-MLIR: "torch.aten.mm"(%{{.*}}, %{{.*}}) : (!torch.vtensor<[2,3],f32>, !torch.vtensor<[3,4],f32>) -> !torch.vtensor<[2,4],f32>
// TORCH-MLIR: func.func @types(%{{.*}}: !torch.vtensor<[?,?,4],bf16>, %{{.*}}: !torch.vtensor<[],si64>, %{{.*}}: !torch.vtensor<*,f32>, %{{.*}}: !torch.vtensor<[2],unk>, %{{.*}}: !torch.vtensor, %{{.*}}: !torch.int, %{{.*}}: !torch.float, %{{.*}}: !torch.bool, %{{.*}}: !torch.none, %{{.*}}: !torch.str, %{{.*}}: !torch.Device, %{{.*}}: !torch.list<int>, %{{.*}}: !torch.optional<list<int>>, %{{.*}}: !torch.list<vtensor<[2,?],f32>>, %{{.*}}: !torch.optional<vtensor>)
// TORCH-MLIR: "torch.aten.zeros"({{.*}}) : (!torch.list<int>, !torch.none, !torch.none, !torch.Device, !torch.none) -> !torch.vtensor{{$}}

// CHECK-LABEL: func.func @mm(%a: !torch.vtensor<[2,3],f32>, %b: !torch.vtensor<[3,4],f32>) -> !torch.vtensor<[2,4],f32> {
// CHECK-NEXT:    %0 = "torch.aten.mm"(%a, %b) : (!torch.vtensor<[2,3],f32>, !torch.vtensor<[3,4],f32>) -> !torch.vtensor<[2,4],f32>
// CHECK-NEXT:    func.return %0 : !torch.vtensor<[2,4],f32>
// CHECK-NEXT:  }
func.func @mm(%a: !torch.vtensor<[2,3],f32>, %b: !torch.vtensor<[3,4],f32>) -> !torch.vtensor<[2,4],f32> {
  %0 = "torch.aten.mm"(%a, %b) : (!torch.vtensor<[2,3],f32>, !torch.vtensor<[3,4],f32>) -> !torch.vtensor<[2,4],f32>
  func.return %0 : !torch.vtensor<[2,4],f32>
}

// Dynamic sizes, an unknown rank or dtype, and the scalar and container types.
// CHECK-LABEL: func.func @types(
// CHECK-SAME:    %dynamic: !torch.vtensor<[?,?,4],bf16>,
// CHECK-SAME:    %scalar: !torch.vtensor<[],si64>,
// CHECK-SAME:    %unranked: !torch.vtensor<*,f32>,
// CHECK-SAME:    %no_dtype: !torch.vtensor<[2],unk>,
// CHECK-SAME:    %unknown: !torch.vtensor,
// CHECK-SAME:    %i: !torch.int, %f: !torch.float, %p: !torch.bool, %n: !torch.none,
// CHECK-SAME:    %s: !torch.str, %d: !torch.Device,
// CHECK-SAME:    %ints: !torch.list<int>,
// CHECK-SAME:    %maybe_ints: !torch.optional<list<int>>,
// CHECK-SAME:    %tensors: !torch.list<vtensor<[2,?],f32>>,
// CHECK-SAME:    %maybe_tensor: !torch.optional<vtensor>)
func.func @types(%dynamic: !torch.vtensor<[?,?,4],bf16>, %scalar: !torch.vtensor<[],si64>,
                 %unranked: !torch.vtensor<*,f32>, %no_dtype: !torch.vtensor<[2],unk>,
                 %unknown: !torch.vtensor,
                 %i: !torch.int, %f: !torch.float, %p: !torch.bool, %n: !torch.none,
                 %s: !torch.str, %d: !torch.Device,
                 %ints: !torch.list<int>, %maybe_ints: !torch.optional<list<int>>,
                 %tensors: !torch.list<vtensor<[2,?],f32>>,
                 %maybe_tensor: !torch.optional<vtensor>) {
  func.return
}

// torch-mlir's constants and list construction, with properties. The spelling
// `!torch.vtensor<*,unk>` is the type `!torch.vtensor` and prints as it.
// CHECK-LABEL: func.func @constants() -> !torch.list<int> {
// CHECK-NEXT:    %int1 = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
// CHECK-NEXT:    %none = "torch.constant.none"() : () -> !torch.none
// CHECK-NEXT:    %cpu = "torch.constant.device"() <{value = "cpu"}> : () -> !torch.Device
// CHECK-NEXT:    %shape = "torch.prim.ListConstruct"(%int1, %int1) : (!torch.int, !torch.int) -> !torch.list<int>
// CHECK-NEXT:    %zeros = "torch.aten.zeros"(%shape, %none, %none, %cpu, %none) : (!torch.list<int>, !torch.none, !torch.none, !torch.Device, !torch.none) -> !torch.vtensor
// CHECK-NEXT:    func.return %shape : !torch.list<int>
func.func @constants() -> !torch.list<int> {
  %int1 = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
  %none = "torch.constant.none"() : () -> !torch.none
  %cpu = "torch.constant.device"() <{value = "cpu"}> : () -> !torch.Device
  %shape = "torch.prim.ListConstruct"(%int1, %int1) : (!torch.int, !torch.int) -> !torch.list<int>
  %zeros = "torch.aten.zeros"(%shape, %none, %none, %cpu, %none) : (!torch.list<int>, !torch.none, !torch.none, !torch.Device, !torch.none) -> !torch.vtensor<*,unk>
  func.return %shape : !torch.list<int>
}
