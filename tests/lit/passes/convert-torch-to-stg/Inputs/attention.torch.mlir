builtin.module {
  func.func @forward(%q: !torch.vtensor<[?,?,4,8],f32> {torch.name = "q", torch.kind = "input"}, %k: !torch.vtensor<[?,?,2,8],f32> {torch.name = "k", torch.kind = "input"}, %v: !torch.vtensor<[?,?,2,8],f32> {torch.name = "v", torch.kind = "input"}) -> !torch.vtensor<[?,?,4,8],f32> {
    %0 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "B"}> : () -> !torch.int
    %1 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "S"}> : () -> !torch.int
    "torch.bind_symbolic_shape"(%q, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 4, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,4,8],f32>, !torch.int, !torch.int) -> ()
    "torch.bind_symbolic_shape"(%k, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 2, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,2,8],f32>, !torch.int, !torch.int) -> ()
    "torch.bind_symbolic_shape"(%v, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 2, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,2,8],f32>, !torch.int, !torch.int) -> ()
    %2 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %3 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = ""} : () -> !torch.int
    %4 = "torch.aten.transpose.int"(%q, %2, %3) {torch.module = ""} : (!torch.vtensor<[?,?,4,8],f32>, !torch.int, !torch.int) -> !torch.vtensor<[?,4,?,8],f32>
    "torch.bind_symbolic_shape"(%4, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int) -> ()
    %5 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %6 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = ""} : () -> !torch.int
    %7 = "torch.aten.transpose.int"(%k, %5, %6) {torch.module = ""} : (!torch.vtensor<[?,?,2,8],f32>, !torch.int, !torch.int) -> !torch.vtensor<[?,2,?,8],f32>
    "torch.bind_symbolic_shape"(%7, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 2, s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,2,?,8],f32>, !torch.int, !torch.int) -> ()
    %8 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %9 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = ""} : () -> !torch.int
    %10 = "torch.aten.transpose.int"(%v, %8, %9) {torch.module = ""} : (!torch.vtensor<[?,?,2,8],f32>, !torch.int, !torch.int) -> !torch.vtensor<[?,2,?,8],f32>
    "torch.bind_symbolic_shape"(%10, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 2, s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,2,?,8],f32>, !torch.int, !torch.int) -> ()
    %11 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %12 = "torch.constant.float"() <{value = 0.000000e+00 : f64}> {torch.module = ""} : () -> !torch.float
    %13 = "torch.constant.bool"() <{value = true}> {torch.module = ""} : () -> !torch.bool
    %14 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %15 = "torch.constant.bool"() <{value = true}> {torch.module = ""} : () -> !torch.bool
    %16 = "torch.aten.scaled_dot_product_attention"(%4, %7, %10, %11, %12, %13, %14, %15) {torch.module = ""} : (!torch.vtensor<[?,4,?,8],f32>, !torch.vtensor<[?,2,?,8],f32>, !torch.vtensor<[?,2,?,8],f32>, !torch.none, !torch.float, !torch.bool, !torch.none, !torch.bool) -> !torch.vtensor<[?,4,?,8],f32>
    "torch.bind_symbolic_shape"(%16, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int) -> ()
    %17 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %18 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = ""} : () -> !torch.int
    %19 = "torch.aten.transpose.int"(%16, %17, %18) {torch.module = ""} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int) -> !torch.vtensor<[?,?,4,8],f32>
    "torch.bind_symbolic_shape"(%19, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 4, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,4,8],f32>, !torch.int, !torch.int) -> ()
    func.return %19 : !torch.vtensor<[?,?,4,8],f32>
  }
}
