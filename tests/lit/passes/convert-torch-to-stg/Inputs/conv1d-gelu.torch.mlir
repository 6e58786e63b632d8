builtin.module {
  func.func @forward(%weight: !torch.vtensor<[8,12],f32> {torch.name = "weight", torch.kind = "parameter"}, %bias: !torch.vtensor<[12],f32> {torch.name = "bias", torch.kind = "parameter"}, %x: !torch.vtensor<[?,?,8],f32> {torch.name = "x", torch.kind = "input"}) -> !torch.vtensor<[?,?,12],f32> {
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
    %10 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %11 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %12 = "torch.aten.addmm"(%bias, %9, %weight, %10, %11) {torch.module = ""} : (!torch.vtensor<[12],f32>, !torch.vtensor<[?,8],f32>, !torch.vtensor<[8,12],f32>, !torch.int, !torch.int) -> !torch.vtensor<[?,12],f32>
    "torch.bind_symbolic_shape"(%12, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> ((s0 * s1), 12)>}> {torch.module = ""} : (!torch.vtensor<[?,12],f32>, !torch.int, !torch.int) -> ()
    %13 = "torch.constant.int"() <{value = 12 : i64}> {torch.module = ""} : () -> !torch.int
    %14 = "torch.prim.ListConstruct"(%3, %5, %13) {torch.module = ""} : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %15 = "torch.aten.view"(%12, %14) {torch.module = ""} : (!torch.vtensor<[?,12],f32>, !torch.list<int>) -> !torch.vtensor<[?,?,12],f32>
    "torch.bind_symbolic_shape"(%15, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 12)>}> {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>, !torch.int, !torch.int) -> ()
    %16 = "torch.constant.float"() <{value = 5.000000e-01 : f64}> {torch.module = ""} : () -> !torch.float
    %17 = "torch.aten.mul.Scalar"(%15, %16) {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>, !torch.float) -> !torch.vtensor<[?,?,12],f32>
    "torch.bind_symbolic_shape"(%17, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 12)>}> {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>, !torch.int, !torch.int) -> ()
    %18 = "torch.constant.float"() <{value = 3.000000e+00 : f64}> {torch.module = ""} : () -> !torch.float
    %19 = "torch.aten.pow.Tensor_Scalar"(%15, %18) {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>, !torch.float) -> !torch.vtensor<[?,?,12],f32>
    "torch.bind_symbolic_shape"(%19, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 12)>}> {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>, !torch.int, !torch.int) -> ()
    %20 = "torch.constant.float"() <{value = 4.471500e-02 : f64}> {torch.module = ""} : () -> !torch.float
    %21 = "torch.aten.mul.Scalar"(%19, %20) {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>, !torch.float) -> !torch.vtensor<[?,?,12],f32>
    "torch.bind_symbolic_shape"(%21, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 12)>}> {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>, !torch.int, !torch.int) -> ()
    %22 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %23 = "torch.aten.add.Tensor"(%15, %21, %22) {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>, !torch.vtensor<[?,?,12],f32>, !torch.int) -> !torch.vtensor<[?,?,12],f32>
    "torch.bind_symbolic_shape"(%23, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 12)>}> {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>, !torch.int, !torch.int) -> ()
    %24 = "torch.constant.float"() <{value = 0.79788456080286541 : f64}> {torch.module = ""} : () -> !torch.float
    %25 = "torch.aten.mul.Scalar"(%23, %24) {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>, !torch.float) -> !torch.vtensor<[?,?,12],f32>
    "torch.bind_symbolic_shape"(%25, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 12)>}> {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>, !torch.int, !torch.int) -> ()
    %26 = "torch.aten.tanh"(%25) {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>) -> !torch.vtensor<[?,?,12],f32>
    "torch.bind_symbolic_shape"(%26, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 12)>}> {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>, !torch.int, !torch.int) -> ()
    %27 = "torch.constant.float"() <{value = 1.000000e+00 : f64}> {torch.module = ""} : () -> !torch.float
    %28 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %29 = "torch.aten.add.Scalar"(%26, %27, %28) {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>, !torch.float, !torch.int) -> !torch.vtensor<[?,?,12],f32>
    "torch.bind_symbolic_shape"(%29, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 12)>}> {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>, !torch.int, !torch.int) -> ()
    %30 = "torch.aten.mul.Tensor"(%17, %29) {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>, !torch.vtensor<[?,?,12],f32>) -> !torch.vtensor<[?,?,12],f32>
    "torch.bind_symbolic_shape"(%30, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 12)>}> {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>, !torch.int, !torch.int) -> ()
    func.return %30 : !torch.vtensor<[?,?,12],f32>
  }
}
