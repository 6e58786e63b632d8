builtin.module {
  func.func @forward(%x: !torch.vtensor<[?,?,8],f32> {torch.name = "x", torch.kind = "input"}, %y: !torch.vtensor<[?,?,8],f32> {torch.name = "y", torch.kind = "input"}) -> !torch.vtensor<[?,?,8],f32> {
    %0 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "B"}> : () -> !torch.int
    %1 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "S"}> : () -> !torch.int
    "torch.bind_symbolic_shape"(%x, %0, %1) <{shape_expressions = affine_map<()[s0, s1] -> (s0, s1, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    "torch.bind_symbolic_shape"(%y, %0, %1) <{shape_expressions = affine_map<()[s0, s1] -> (s0, s1, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %2 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %3 = "torch.aten.add.Tensor"(%x, %y, %2) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.vtensor<[?,?,8],f32>, !torch.int) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%3, %0, %1) <{shape_expressions = affine_map<()[s0, s1] -> (s0, s1, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %4 = "torch.aten.mul.Tensor"(%3, %x) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.vtensor<[?,?,8],f32>) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%4, %0, %1) <{shape_expressions = affine_map<()[s0, s1] -> (s0, s1, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %5 = "torch.constant.float"() <{value = 2.000000e+00 : f64}> {torch.module = ""} : () -> !torch.float
    %6 = "torch.aten.div.Scalar"(%y, %5) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.float) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%6, %0, %1) <{shape_expressions = affine_map<()[s0, s1] -> (s0, s1, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %7 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %8 = "torch.aten.sub.Tensor"(%4, %6, %7) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.vtensor<[?,?,8],f32>, !torch.int) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%8, %0, %1) <{shape_expressions = affine_map<()[s0, s1] -> (s0, s1, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %9 = "torch.aten.silu"(%8) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%9, %0, %1) <{shape_expressions = affine_map<()[s0, s1] -> (s0, s1, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %10 = "torch.constant.str"() <{value = "tanh"}> {torch.module = ""} : () -> !torch.str
    %11 = "torch.aten.gelu"(%x, %10) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.str) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%11, %0, %1) <{shape_expressions = affine_map<()[s0, s1] -> (s0, s1, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %12 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %13 = "torch.aten.add.Tensor"(%9, %11, %12) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.vtensor<[?,?,8],f32>, !torch.int) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%13, %0, %1) <{shape_expressions = affine_map<()[s0, s1] -> (s0, s1, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %14 = "torch.aten.relu"(%y) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%14, %0, %1) <{shape_expressions = affine_map<()[s0, s1] -> (s0, s1, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %15 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %16 = "torch.aten.add.Tensor"(%13, %14, %15) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.vtensor<[?,?,8],f32>, !torch.int) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%16, %0, %1) <{shape_expressions = affine_map<()[s0, s1] -> (s0, s1, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %17 = "torch.aten.neg"(%x) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%17, %0, %1) <{shape_expressions = affine_map<()[s0, s1] -> (s0, s1, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %18 = "torch.aten.exp"(%17) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%18, %0, %1) <{shape_expressions = affine_map<()[s0, s1] -> (s0, s1, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %19 = "torch.aten.mul.Tensor"(%y, %y) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.vtensor<[?,?,8],f32>) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%19, %0, %1) <{shape_expressions = affine_map<()[s0, s1] -> (s0, s1, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %20 = "torch.constant.float"() <{value = 1.000000e+00 : f64}> {torch.module = ""} : () -> !torch.float
    %21 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %22 = "torch.aten.add.Scalar"(%19, %20, %21) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.float, !torch.int) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%22, %0, %1) <{shape_expressions = affine_map<()[s0, s1] -> (s0, s1, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %23 = "torch.aten.rsqrt"(%22) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%23, %0, %1) <{shape_expressions = affine_map<()[s0, s1] -> (s0, s1, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %24 = "torch.aten.mul.Tensor"(%18, %23) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.vtensor<[?,?,8],f32>) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%24, %0, %1) <{shape_expressions = affine_map<()[s0, s1] -> (s0, s1, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %25 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %26 = "torch.aten.add.Tensor"(%16, %24, %25) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.vtensor<[?,?,8],f32>, !torch.int) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%26, %0, %1) <{shape_expressions = affine_map<()[s0, s1] -> (s0, s1, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    func.return %26 : !torch.vtensor<[?,?,8],f32>
  }
}
