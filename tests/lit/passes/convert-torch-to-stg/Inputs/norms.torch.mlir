builtin.module {
  func.func @forward(%weight: !torch.vtensor<[8],f32> {torch.name = "weight", torch.kind = "parameter"}, %ln_weight: !torch.vtensor<[8],f32> {torch.name = "ln.weight", torch.kind = "parameter"}, %ln_bias: !torch.vtensor<[8],f32> {torch.name = "ln.bias", torch.kind = "parameter"}, %rms_weight: !torch.vtensor<[8],f32> {torch.name = "rms.weight", torch.kind = "parameter"}, %x: !torch.vtensor<[?,?,8],f32> {torch.name = "x", torch.kind = "input"}) -> !torch.vtensor<[?,?,8],f32> {
    %0 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "B"}> : () -> !torch.int
    %1 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "S"}> : () -> !torch.int
    "torch.bind_symbolic_shape"(%x, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %2 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = ""} : () -> !torch.int
    %3 = "torch.aten.pow.Tensor_Scalar"(%x, %2) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%3, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %4 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = ""} : () -> !torch.int
    %5 = "torch.prim.ListConstruct"(%4) {torch.module = ""} : (!torch.int) -> !torch.list<int>
    %6 = "torch.constant.bool"() <{value = true}> {torch.module = ""} : () -> !torch.bool
    %7 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %8 = "torch.aten.mean.dim"(%3, %5, %6, %7) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.list<int>, !torch.bool, !torch.none) -> !torch.vtensor<[?,?,1],f32>
    "torch.bind_symbolic_shape"(%8, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 1)>}> {torch.module = ""} : (!torch.vtensor<[?,?,1],f32>, !torch.int, !torch.int) -> ()
    %9 = "torch.constant.float"() <{value = 1.000000e-05 : f64}> {torch.module = ""} : () -> !torch.float
    %10 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %11 = "torch.aten.add.Scalar"(%8, %9, %10) {torch.module = ""} : (!torch.vtensor<[?,?,1],f32>, !torch.float, !torch.int) -> !torch.vtensor<[?,?,1],f32>
    "torch.bind_symbolic_shape"(%11, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 1)>}> {torch.module = ""} : (!torch.vtensor<[?,?,1],f32>, !torch.int, !torch.int) -> ()
    %12 = "torch.aten.rsqrt"(%11) {torch.module = ""} : (!torch.vtensor<[?,?,1],f32>) -> !torch.vtensor<[?,?,1],f32>
    "torch.bind_symbolic_shape"(%12, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 1)>}> {torch.module = ""} : (!torch.vtensor<[?,?,1],f32>, !torch.int, !torch.int) -> ()
    %13 = "torch.aten.mul.Tensor"(%x, %12) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.vtensor<[?,?,1],f32>) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%13, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %14 = "torch.aten.mul.Tensor"(%weight, %13) {torch.module = ""} : (!torch.vtensor<[8],f32>, !torch.vtensor<[?,?,8],f32>) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%14, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %15 = "torch.constant.int"() <{value = 8 : i64}> {torch.module = "ln"} : () -> !torch.int
    %16 = "torch.prim.ListConstruct"(%15) {torch.module = "ln"} : (!torch.int) -> !torch.list<int>
    %17 = "torch.constant.float"() <{value = 1.000000e-05 : f64}> {torch.module = "ln"} : () -> !torch.float
    %18 = "torch.constant.bool"() <{value = false}> {torch.module = "ln"} : () -> !torch.bool
    %19 = "torch.aten.layer_norm"(%x, %16, %ln_weight, %ln_bias, %17, %18) {torch.module = "ln"} : (!torch.vtensor<[?,?,8],f32>, !torch.list<int>, !torch.vtensor<[8],f32>, !torch.vtensor<[8],f32>, !torch.float, !torch.bool) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%19, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 8)>}> {torch.module = "ln"} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %20 = "torch.constant.int"() <{value = 8 : i64}> {torch.module = "rms"} : () -> !torch.int
    %21 = "torch.prim.ListConstruct"(%20) {torch.module = "rms"} : (!torch.int) -> !torch.list<int>
    %22 = "torch.constant.float"() <{value = 1.000000e-06 : f64}> {torch.module = "rms"} : () -> !torch.float
    %23 = "torch.aten.rms_norm"(%x, %21, %rms_weight, %22) {torch.module = "rms"} : (!torch.vtensor<[?,?,8],f32>, !torch.list<int>, !torch.vtensor<[8],f32>, !torch.float) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%23, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 8)>}> {torch.module = "rms"} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %24 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %25 = "torch.aten.add.Tensor"(%19, %23, %24) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.vtensor<[?,?,8],f32>, !torch.int) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%25, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %26 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %27 = "torch.aten.add.Tensor"(%25, %14, %26) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.vtensor<[?,?,8],f32>, !torch.int) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%27, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    func.return %27 : !torch.vtensor<[?,?,8],f32>
  }
}
