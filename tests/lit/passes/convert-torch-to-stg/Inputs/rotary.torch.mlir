builtin.module {
  func.func @forward(%inv_freq: !torch.vtensor<[4],f32> {torch.name = "inv_freq", torch.kind = "buffer"}, %q: !torch.vtensor<[?,?,4,8],f32> {torch.name = "q", torch.kind = "input"}) -> !torch.vtensor<[?,?,4,8],f32> {
    %0 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "B"}> : () -> !torch.int
    %1 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "S"}> : () -> !torch.int
    "torch.bind_symbolic_shape"(%q, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 4, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,4,8],f32>, !torch.int, !torch.int) -> ()
    %2 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %3 = "torch.aten.size.int"(%q, %2) {torch.module = ""} : (!torch.vtensor<[?,?,4,8],f32>, !torch.int) -> !torch.int
    %4 = "torch.constant.int"() <{value = 6 : i64}> {torch.module = ""} : () -> !torch.int
    %5 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %6 = "torch.constant.device"() <{value = "cpu"}> {torch.module = ""} : () -> !torch.Device
    %7 = "torch.constant.bool"() <{value = false}> {torch.module = ""} : () -> !torch.bool
    %8 = "torch.aten.arange"(%3, %4, %5, %6, %7) {torch.module = ""} : (!torch.int, !torch.int, !torch.none, !torch.Device, !torch.bool) -> !torch.vtensor<[?],f32>
    "torch.bind_symbolic_shape"(%8, %1) <{shape_expressions = affine_map<()[s0] -> (s0)>}> {torch.module = ""} : (!torch.vtensor<[?],f32>, !torch.int) -> ()
    %9 = "torch.aten.outer"(%8, %inv_freq) {torch.module = ""} : (!torch.vtensor<[?],f32>, !torch.vtensor<[4],f32>) -> !torch.vtensor<[?,4],f32>
    "torch.bind_symbolic_shape"(%9, %1) <{shape_expressions = affine_map<()[s0] -> (s0, 4)>}> {torch.module = ""} : (!torch.vtensor<[?,4],f32>, !torch.int) -> ()
    %10 = "torch.prim.ListConstruct"(%9, %9) {torch.module = ""} : (!torch.vtensor<[?,4],f32>, !torch.vtensor<[?,4],f32>) -> !torch.list<vtensor>
    %11 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = ""} : () -> !torch.int
    %12 = "torch.aten.cat"(%10, %11) {torch.module = ""} : (!torch.list<vtensor>, !torch.int) -> !torch.vtensor<[?,8],f32>
    "torch.bind_symbolic_shape"(%12, %1) <{shape_expressions = affine_map<()[s0] -> (s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,8],f32>, !torch.int) -> ()
    %13 = "torch.aten.cos"(%12) {torch.module = ""} : (!torch.vtensor<[?,8],f32>) -> !torch.vtensor<[?,8],f32>
    "torch.bind_symbolic_shape"(%13, %1) <{shape_expressions = affine_map<()[s0] -> (s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,8],f32>, !torch.int) -> ()
    %14 = "torch.constant.int"() <{value = 0 : i64}> {torch.module = ""} : () -> !torch.int
    %15 = "torch.aten.unsqueeze"(%13, %14) {torch.module = ""} : (!torch.vtensor<[?,8],f32>, !torch.int) -> !torch.vtensor<[1,?,8],f32>
    "torch.bind_symbolic_shape"(%15, %1) <{shape_expressions = affine_map<()[s0] -> (1, s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[1,?,8],f32>, !torch.int) -> ()
    %16 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %17 = "torch.aten.unsqueeze"(%15, %16) {torch.module = ""} : (!torch.vtensor<[1,?,8],f32>, !torch.int) -> !torch.vtensor<[1,1,?,8],f32>
    "torch.bind_symbolic_shape"(%17, %1) <{shape_expressions = affine_map<()[s0] -> (1, 1, s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[1,1,?,8],f32>, !torch.int) -> ()
    %18 = "torch.aten.sin"(%12) {torch.module = ""} : (!torch.vtensor<[?,8],f32>) -> !torch.vtensor<[?,8],f32>
    "torch.bind_symbolic_shape"(%18, %1) <{shape_expressions = affine_map<()[s0] -> (s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,8],f32>, !torch.int) -> ()
    %19 = "torch.constant.int"() <{value = 0 : i64}> {torch.module = ""} : () -> !torch.int
    %20 = "torch.aten.unsqueeze"(%18, %19) {torch.module = ""} : (!torch.vtensor<[?,8],f32>, !torch.int) -> !torch.vtensor<[1,?,8],f32>
    "torch.bind_symbolic_shape"(%20, %1) <{shape_expressions = affine_map<()[s0] -> (1, s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[1,?,8],f32>, !torch.int) -> ()
    %21 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %22 = "torch.aten.unsqueeze"(%20, %21) {torch.module = ""} : (!torch.vtensor<[1,?,8],f32>, !torch.int) -> !torch.vtensor<[1,1,?,8],f32>
    "torch.bind_symbolic_shape"(%22, %1) <{shape_expressions = affine_map<()[s0] -> (1, 1, s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[1,1,?,8],f32>, !torch.int) -> ()
    %23 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %24 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = ""} : () -> !torch.int
    %25 = "torch.aten.transpose.int"(%q, %23, %24) {torch.module = ""} : (!torch.vtensor<[?,?,4,8],f32>, !torch.int, !torch.int) -> !torch.vtensor<[?,4,?,8],f32>
    "torch.bind_symbolic_shape"(%25, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int) -> ()
    %26 = "torch.aten.mul.Tensor"(%25, %17) {torch.module = ""} : (!torch.vtensor<[?,4,?,8],f32>, !torch.vtensor<[1,1,?,8],f32>) -> !torch.vtensor<[?,4,?,8],f32>
    "torch.bind_symbolic_shape"(%26, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int) -> ()
    %27 = "torch.constant.int"() <{value = 3 : i64}> {torch.module = ""} : () -> !torch.int
    %28 = "torch.constant.int"() <{value = 4 : i64}> {torch.module = ""} : () -> !torch.int
    %29 = "torch.constant.int"() <{value = 9223372036854775807 : i64}> {torch.module = ""} : () -> !torch.int
    %30 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %31 = "torch.aten.slice.Tensor"(%25, %27, %28, %29, %30) {torch.module = ""} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int, !torch.int, !torch.int) -> !torch.vtensor<[?,4,?,4],f32>
    "torch.bind_symbolic_shape"(%31, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 4)>}> {torch.module = ""} : (!torch.vtensor<[?,4,?,4],f32>, !torch.int, !torch.int) -> ()
    %32 = "torch.aten.neg"(%31) {torch.module = ""} : (!torch.vtensor<[?,4,?,4],f32>) -> !torch.vtensor<[?,4,?,4],f32>
    "torch.bind_symbolic_shape"(%32, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 4)>}> {torch.module = ""} : (!torch.vtensor<[?,4,?,4],f32>, !torch.int, !torch.int) -> ()
    %33 = "torch.constant.int"() <{value = 3 : i64}> {torch.module = ""} : () -> !torch.int
    %34 = "torch.constant.int"() <{value = 0 : i64}> {torch.module = ""} : () -> !torch.int
    %35 = "torch.constant.int"() <{value = 4 : i64}> {torch.module = ""} : () -> !torch.int
    %36 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %37 = "torch.aten.slice.Tensor"(%25, %33, %34, %35, %36) {torch.module = ""} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int, !torch.int, !torch.int) -> !torch.vtensor<[?,4,?,4],f32>
    "torch.bind_symbolic_shape"(%37, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 4)>}> {torch.module = ""} : (!torch.vtensor<[?,4,?,4],f32>, !torch.int, !torch.int) -> ()
    %38 = "torch.prim.ListConstruct"(%32, %37) {torch.module = ""} : (!torch.vtensor<[?,4,?,4],f32>, !torch.vtensor<[?,4,?,4],f32>) -> !torch.list<vtensor>
    %39 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = ""} : () -> !torch.int
    %40 = "torch.aten.cat"(%38, %39) {torch.module = ""} : (!torch.list<vtensor>, !torch.int) -> !torch.vtensor<[?,4,?,8],f32>
    "torch.bind_symbolic_shape"(%40, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int) -> ()
    %41 = "torch.aten.mul.Tensor"(%40, %22) {torch.module = ""} : (!torch.vtensor<[?,4,?,8],f32>, !torch.vtensor<[1,1,?,8],f32>) -> !torch.vtensor<[?,4,?,8],f32>
    "torch.bind_symbolic_shape"(%41, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int) -> ()
    %42 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %43 = "torch.aten.add.Tensor"(%26, %41, %42) {torch.module = ""} : (!torch.vtensor<[?,4,?,8],f32>, !torch.vtensor<[?,4,?,8],f32>, !torch.int) -> !torch.vtensor<[?,4,?,8],f32>
    "torch.bind_symbolic_shape"(%43, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int) -> ()
    %44 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %45 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = ""} : () -> !torch.int
    %46 = "torch.aten.transpose.int"(%43, %44, %45) {torch.module = ""} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int) -> !torch.vtensor<[?,?,4,8],f32>
    "torch.bind_symbolic_shape"(%46, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 4, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,4,8],f32>, !torch.int, !torch.int) -> ()
    func.return %46 : !torch.vtensor<[?,?,4,8],f32>
  }
}
