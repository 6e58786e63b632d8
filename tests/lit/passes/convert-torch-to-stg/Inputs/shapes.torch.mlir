builtin.module {
  func.func @forward(%x: !torch.vtensor<[?,?,12],f32> {torch.name = "x", torch.kind = "input"}) -> !torch.vtensor<[?,?,12],f32> {
    %0 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "B"}> : () -> !torch.int
    %1 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "S"}> : () -> !torch.int
    "torch.bind_symbolic_shape"(%x, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 12)>}> {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>, !torch.int, !torch.int) -> ()
    %2 = "torch.constant.int"() <{value = 0 : i64}> {torch.module = ""} : () -> !torch.int
    %3 = "torch.aten.size.int"(%x, %2) {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>, !torch.int) -> !torch.int
    %4 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %5 = "torch.aten.size.int"(%x, %4) {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>, !torch.int) -> !torch.int
    %6 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = ""} : () -> !torch.int
    %7 = "torch.constant.int"() <{value = 6 : i64}> {torch.module = ""} : () -> !torch.int
    %8 = "torch.prim.ListConstruct"(%3, %5, %6, %7) {torch.module = ""} : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %9 = "torch.aten.view"(%x, %8) {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>, !torch.list<int>) -> !torch.vtensor<[?,?,2,6],f32>
    "torch.bind_symbolic_shape"(%9, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 2, 6)>}> {torch.module = ""} : (!torch.vtensor<[?,?,2,6],f32>, !torch.int, !torch.int) -> ()
    %10 = "torch.constant.int"() <{value = 0 : i64}> {torch.module = ""} : () -> !torch.int
    %11 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = ""} : () -> !torch.int
    %12 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %13 = "torch.constant.int"() <{value = 3 : i64}> {torch.module = ""} : () -> !torch.int
    %14 = "torch.prim.ListConstruct"(%10, %11, %12, %13) {torch.module = ""} : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %15 = "torch.aten.permute"(%9, %14) {torch.module = ""} : (!torch.vtensor<[?,?,2,6],f32>, !torch.list<int>) -> !torch.vtensor<[?,2,?,6],f32>
    "torch.bind_symbolic_shape"(%15, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 2, s0, 6)>}> {torch.module = ""} : (!torch.vtensor<[?,2,?,6],f32>, !torch.int, !torch.int) -> ()
    %16 = "torch.constant.int"() <{value = 3 : i64}> {torch.module = ""} : () -> !torch.int
    %17 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = ""} : () -> !torch.int
    %18 = "torch.aten.split.Tensor"(%15, %16, %17) {torch.module = ""} : (!torch.vtensor<[?,2,?,6],f32>, !torch.int, !torch.int) -> !torch.list<vtensor>
    %19, %20 = "torch.prim.ListUnpack"(%18) {torch.module = ""} : (!torch.list<vtensor>) -> (!torch.vtensor<[?,2,?,3],f32>, !torch.vtensor<[?,2,?,3],f32>)
    "torch.bind_symbolic_shape"(%19, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 2, s0, 3)>}> {torch.module = ""} : (!torch.vtensor<[?,2,?,3],f32>, !torch.int, !torch.int) -> ()
    "torch.bind_symbolic_shape"(%20, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 2, s0, 3)>}> {torch.module = ""} : (!torch.vtensor<[?,2,?,3],f32>, !torch.int, !torch.int) -> ()
    %21 = "torch.prim.ListConstruct"(%20, %19) {torch.module = ""} : (!torch.vtensor<[?,2,?,3],f32>, !torch.vtensor<[?,2,?,3],f32>) -> !torch.list<vtensor>
    %22 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = ""} : () -> !torch.int
    %23 = "torch.aten.cat"(%21, %22) {torch.module = ""} : (!torch.list<vtensor>, !torch.int) -> !torch.vtensor<[?,2,?,6],f32>
    "torch.bind_symbolic_shape"(%23, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 2, s0, 6)>}> {torch.module = ""} : (!torch.vtensor<[?,2,?,6],f32>, !torch.int, !torch.int) -> ()
    %24 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %25 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = ""} : () -> !torch.int
    %26 = "torch.aten.transpose.int"(%23, %24, %25) {torch.module = ""} : (!torch.vtensor<[?,2,?,6],f32>, !torch.int, !torch.int) -> !torch.vtensor<[?,?,2,6],f32>
    "torch.bind_symbolic_shape"(%26, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 2, 6)>}> {torch.module = ""} : (!torch.vtensor<[?,?,2,6],f32>, !torch.int, !torch.int) -> ()
    %27 = "torch.constant.int"() <{value = 12 : i64}> {torch.module = ""} : () -> !torch.int
    %28 = "torch.prim.ListConstruct"(%3, %5, %27) {torch.module = ""} : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %29 = "torch.aten.reshape"(%26, %28) {torch.module = ""} : (!torch.vtensor<[?,?,2,6],f32>, !torch.list<int>) -> !torch.vtensor<[?,?,12],f32>
    "torch.bind_symbolic_shape"(%29, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 12)>}> {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>, !torch.int, !torch.int) -> ()
    %30 = "torch.aten.alias"(%x) {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>) -> !torch.vtensor<[?,?,12],f32>
    "torch.bind_symbolic_shape"(%30, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 12)>}> {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>, !torch.int, !torch.int) -> ()
    %31 = "torch.constant.int"() <{value = 12 : i64}> {torch.module = ""} : () -> !torch.int
    %32 = "torch.prim.ListConstruct"(%3, %5, %31) {torch.module = ""} : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %33 = "torch.constant.bool"() <{value = false}> {torch.module = ""} : () -> !torch.bool
    %34 = "torch.aten.expand"(%30, %32, %33) {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>, !torch.list<int>, !torch.bool) -> !torch.vtensor<[?,?,12],f32>
    "torch.bind_symbolic_shape"(%34, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 12)>}> {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>, !torch.int, !torch.int) -> ()
    %35 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %36 = "torch.aten.add.Tensor"(%29, %34, %35) {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>, !torch.vtensor<[?,?,12],f32>, !torch.int) -> !torch.vtensor<[?,?,12],f32>
    "torch.bind_symbolic_shape"(%36, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 12)>}> {torch.module = ""} : (!torch.vtensor<[?,?,12],f32>, !torch.int, !torch.int) -> ()
    func.return %36 : !torch.vtensor<[?,?,12],f32>
  }
}
