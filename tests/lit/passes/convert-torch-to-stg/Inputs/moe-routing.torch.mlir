builtin.module {
  func.func @forward(%w: !torch.vtensor<[4,6,8],f32> {torch.name = "w", torch.kind = "parameter"}, %w2: !torch.vtensor<[4,8,6],f32> {torch.name = "w2", torch.kind = "parameter"}, %gate_weight: !torch.vtensor<[4,8],f32> {torch.name = "gate.weight", torch.kind = "parameter"}, %x: !torch.vtensor<[?,?,8],f32> {torch.name = "x", torch.kind = "input"}) -> !torch.vtensor<[?,8],f32> {
    %0 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "B"}> : () -> !torch.int
    %1 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "S"}> : () -> !torch.int
    "torch.bind_symbolic_shape"(%x, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %2 = "torch.constant.int"() <{value = 0 : i64}> {torch.module = ""} : () -> !torch.int
    %3 = "torch.aten.size.int"(%x, %2) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int) -> !torch.int
    %4 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %5 = "torch.aten.size.int"(%x, %4) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int) -> !torch.int
    %6 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = ""} : () -> !torch.int
    %7 = "torch.constant.int"() <{value = 8 : i64}> {torch.module = ""} : () -> !torch.int
    %8 = "torch.prim.ListConstruct"(%6, %7) {torch.module = ""} : (!torch.int, !torch.int) -> !torch.list<int>
    %9 = "torch.aten.view"(%x, %8) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.list<int>) -> !torch.vtensor<[?,8],f32>
    "torch.bind_symbolic_shape"(%9, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> ((s0 * s1), 8)>}> {torch.module = ""} : (!torch.vtensor<[?,8],f32>, !torch.int, !torch.int) -> ()
    %10 = "torch.constant.none"() {torch.module = "gate"} : () -> !torch.none
    %11 = "torch.aten.linear"(%9, %gate_weight, %10) {torch.module = "gate"} : (!torch.vtensor<[?,8],f32>, !torch.vtensor<[4,8],f32>, !torch.none) -> !torch.vtensor<[?,4],f32>
    "torch.bind_symbolic_shape"(%11, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> ((s0 * s1), 4)>}> {torch.module = "gate"} : (!torch.vtensor<[?,4],f32>, !torch.int, !torch.int) -> ()
    %12 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %13 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %14 = "torch.constant.int"() <{value = 6 : i64}> {torch.module = ""} : () -> !torch.int
    %15 = "torch.constant.device"() <{value = "cpu"}> {torch.module = ""} : () -> !torch.Device
    %16 = "torch.constant.int"() <{value = 0 : i64}> {torch.module = ""} : () -> !torch.int
    "torch.aten._assert_tensor_metadata"(%11, %12, %13, %14, %15, %16) {torch.module = ""} : (!torch.vtensor<[?,4],f32>, !torch.none, !torch.none, !torch.int, !torch.Device, !torch.int) -> ()
    %17 = "torch.constant.int"() <{value = 6 : i64}> {torch.module = ""} : () -> !torch.int
    %18 = "torch.constant.bool"() <{value = false}> {torch.module = ""} : () -> !torch.bool
    %19 = "torch.constant.bool"() <{value = false}> {torch.module = ""} : () -> !torch.bool
    %20 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %21 = "torch.aten.to.dtype"(%11, %17, %18, %19, %20) {torch.module = ""} : (!torch.vtensor<[?,4],f32>, !torch.int, !torch.bool, !torch.bool, !torch.none) -> !torch.vtensor<[?,4],f32>
    "torch.bind_symbolic_shape"(%21, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> ((s0 * s1), 4)>}> {torch.module = ""} : (!torch.vtensor<[?,4],f32>, !torch.int, !torch.int) -> ()
    %22 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = ""} : () -> !torch.int
    %23 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %24 = "torch.aten.softmax.int"(%21, %22, %23) {torch.module = ""} : (!torch.vtensor<[?,4],f32>, !torch.int, !torch.none) -> !torch.vtensor<[?,4],f32>
    "torch.bind_symbolic_shape"(%24, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> ((s0 * s1), 4)>}> {torch.module = ""} : (!torch.vtensor<[?,4],f32>, !torch.int, !torch.int) -> ()
    %25 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = ""} : () -> !torch.int
    %26 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = ""} : () -> !torch.int
    %27 = "torch.constant.bool"() <{value = true}> {torch.module = ""} : () -> !torch.bool
    %28 = "torch.constant.bool"() <{value = true}> {torch.module = ""} : () -> !torch.bool
    %29, %30 = "torch.aten.topk"(%24, %25, %26, %27, %28) {torch.module = ""} : (!torch.vtensor<[?,4],f32>, !torch.int, !torch.int, !torch.bool, !torch.bool) -> (!torch.vtensor<[?,2],f32>, !torch.vtensor<[?,2],si64>)
    "torch.bind_symbolic_shape"(%29, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> ((s0 * s1), 2)>}> {torch.module = ""} : (!torch.vtensor<[?,2],f32>, !torch.int, !torch.int) -> ()
    "torch.bind_symbolic_shape"(%30, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> ((s0 * s1), 2)>}> {torch.module = ""} : (!torch.vtensor<[?,2],si64>, !torch.int, !torch.int) -> ()
    %31 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = ""} : () -> !torch.int
    %32 = "torch.prim.ListConstruct"(%31) {torch.module = ""} : (!torch.int) -> !torch.list<int>
    %33 = "torch.constant.bool"() <{value = true}> {torch.module = ""} : () -> !torch.bool
    %34 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %35 = "torch.aten.sum.dim_IntList"(%29, %32, %33, %34) {torch.module = ""} : (!torch.vtensor<[?,2],f32>, !torch.list<int>, !torch.bool, !torch.none) -> !torch.vtensor<[?,1],f32>
    "torch.bind_symbolic_shape"(%35, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> ((s0 * s1), 1)>}> {torch.module = ""} : (!torch.vtensor<[?,1],f32>, !torch.int, !torch.int) -> ()
    %36 = "torch.aten.div.Tensor"(%29, %35) {torch.module = ""} : (!torch.vtensor<[?,2],f32>, !torch.vtensor<[?,1],f32>) -> !torch.vtensor<[?,2],f32>
    "torch.bind_symbolic_shape"(%36, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> ((s0 * s1), 2)>}> {torch.module = ""} : (!torch.vtensor<[?,2],f32>, !torch.int, !torch.int) -> ()
    %37 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %38 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %39 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %40 = "torch.constant.bool"() <{value = false}> {torch.module = ""} : () -> !torch.bool
    %41 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %42 = "torch.aten.zeros_like"(%24, %37, %38, %39, %40, %41) {torch.module = ""} : (!torch.vtensor<[?,4],f32>, !torch.none, !torch.none, !torch.none, !torch.bool, !torch.none) -> !torch.vtensor<[?,4],f32>
    "torch.bind_symbolic_shape"(%42, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> ((s0 * s1), 4)>}> {torch.module = ""} : (!torch.vtensor<[?,4],f32>, !torch.int, !torch.int) -> ()
    %43 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %44 = "torch.aten.scatter.src"(%42, %43, %30, %36) {torch.module = ""} : (!torch.vtensor<[?,4],f32>, !torch.int, !torch.vtensor<[?,2],si64>, !torch.vtensor<[?,2],f32>) -> !torch.vtensor<[?,4],f32>
    "torch.bind_symbolic_shape"(%44, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> ((s0 * s1), 4)>}> {torch.module = ""} : (!torch.vtensor<[?,4],f32>, !torch.int, !torch.int) -> ()
    %45 = "torch.aten.mul.int"(%5, %3) {torch.module = ""} : (!torch.int, !torch.int) -> !torch.int
    %46 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = ""} : () -> !torch.int
    %47 = "torch.aten.floordiv.int"(%45, %46) {torch.module = ""} : (!torch.int, !torch.int) -> !torch.int
    %48 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = ""} : () -> !torch.int
    %49 = "torch.operator"(%9, %44, %48, %47) <{name = "torch.stagec.moe_dispatch"}> {torch.module = ""} : (!torch.vtensor<[?,8],f32>, !torch.vtensor<[?,4],f32>, !torch.int, !torch.int) -> !torch.vtensor<[4,?,8],f32>
    "torch.bind_symbolic_shape"(%49, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (4, ((s0 * s1) floordiv 2), 8)>}> {torch.module = ""} : (!torch.vtensor<[4,?,8],f32>, !torch.int, !torch.int) -> ()
    %50 = "torch.constant.str"() <{value = "ech,efh->ecf"}> {torch.module = ""} : () -> !torch.str
    %51 = "torch.prim.ListConstruct"(%49, %w) {torch.module = ""} : (!torch.vtensor<[4,?,8],f32>, !torch.vtensor<[4,6,8],f32>) -> !torch.list<vtensor>
    %52 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %53 = "torch.aten.einsum"(%50, %51, %52) {torch.module = ""} : (!torch.str, !torch.list<vtensor>, !torch.none) -> !torch.vtensor<[4,?,6],f32>
    "torch.bind_symbolic_shape"(%53, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (4, ((s0 * s1) floordiv 2), 6)>}> {torch.module = ""} : (!torch.vtensor<[4,?,6],f32>, !torch.int, !torch.int) -> ()
    %54 = "torch.aten.silu"(%53) {torch.module = ""} : (!torch.vtensor<[4,?,6],f32>) -> !torch.vtensor<[4,?,6],f32>
    "torch.bind_symbolic_shape"(%54, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (4, ((s0 * s1) floordiv 2), 6)>}> {torch.module = ""} : (!torch.vtensor<[4,?,6],f32>, !torch.int, !torch.int) -> ()
    %55 = "torch.constant.str"() <{value = "ecf,ehf->ech"}> {torch.module = ""} : () -> !torch.str
    %56 = "torch.prim.ListConstruct"(%54, %w2) {torch.module = ""} : (!torch.vtensor<[4,?,6],f32>, !torch.vtensor<[4,8,6],f32>) -> !torch.list<vtensor>
    %57 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %58 = "torch.aten.einsum"(%55, %56, %57) {torch.module = ""} : (!torch.str, !torch.list<vtensor>, !torch.none) -> !torch.vtensor<[4,?,8],f32>
    "torch.bind_symbolic_shape"(%58, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (4, ((s0 * s1) floordiv 2), 8)>}> {torch.module = ""} : (!torch.vtensor<[4,?,8],f32>, !torch.int, !torch.int) -> ()
    %59 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = ""} : () -> !torch.int
    %60 = "torch.constant.bool"() <{value = false}> {torch.module = ""} : () -> !torch.bool
    %61 = "torch.operator"(%58, %44, %59, %60) <{name = "torch.stagec.moe_combine"}> {torch.module = ""} : (!torch.vtensor<[4,?,8],f32>, !torch.vtensor<[?,4],f32>, !torch.int, !torch.bool) -> !torch.vtensor<[?,8],f32>
    "torch.bind_symbolic_shape"(%61, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> ((s0 * s1), 8)>}> {torch.module = ""} : (!torch.vtensor<[?,8],f32>, !torch.int, !torch.int) -> ()
    func.return %61 : !torch.vtensor<[?,8],f32>
  }
}
