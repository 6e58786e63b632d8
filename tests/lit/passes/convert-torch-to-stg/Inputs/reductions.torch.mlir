builtin.module {
  func.func @forward(%x: !torch.vtensor<[?,?,8],f32> {torch.name = "x", torch.kind = "input"}) -> !torch.vtensor<[?,?],f32> {
    %0 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "B"}> : () -> !torch.int
    %1 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "S"}> : () -> !torch.int
    "torch.bind_symbolic_shape"(%x, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %2 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = ""} : () -> !torch.int
    %3 = "torch.prim.ListConstruct"(%2) {torch.module = ""} : (!torch.int) -> !torch.list<int>
    %4 = "torch.constant.bool"() <{value = false}> {torch.module = ""} : () -> !torch.bool
    %5 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %6 = "torch.aten.mean.dim"(%x, %3, %4, %5) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.list<int>, !torch.bool, !torch.none) -> !torch.vtensor<[?,?],f32>
    "torch.bind_symbolic_shape"(%6, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0)>}> {torch.module = ""} : (!torch.vtensor<[?,?],f32>, !torch.int, !torch.int) -> ()
    %7 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = ""} : () -> !torch.int
    %8 = "torch.prim.ListConstruct"(%7) {torch.module = ""} : (!torch.int) -> !torch.list<int>
    %9 = "torch.constant.bool"() <{value = false}> {torch.module = ""} : () -> !torch.bool
    %10 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %11 = "torch.aten.sum.dim_IntList"(%x, %8, %9, %10) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.list<int>, !torch.bool, !torch.none) -> !torch.vtensor<[?,?],f32>
    "torch.bind_symbolic_shape"(%11, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0)>}> {torch.module = ""} : (!torch.vtensor<[?,?],f32>, !torch.int, !torch.int) -> ()
    %12 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %13 = "torch.aten.add.Tensor"(%6, %11, %12) {torch.module = ""} : (!torch.vtensor<[?,?],f32>, !torch.vtensor<[?,?],f32>, !torch.int) -> !torch.vtensor<[?,?],f32>
    "torch.bind_symbolic_shape"(%13, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0)>}> {torch.module = ""} : (!torch.vtensor<[?,?],f32>, !torch.int, !torch.int) -> ()
    %14 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = ""} : () -> !torch.int
    %15 = "torch.prim.ListConstruct"(%14) {torch.module = ""} : (!torch.int) -> !torch.list<int>
    %16 = "torch.constant.bool"() <{value = false}> {torch.module = ""} : () -> !torch.bool
    %17 = "torch.aten.amax"(%x, %15, %16) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.list<int>, !torch.bool) -> !torch.vtensor<[?,?],f32>
    "torch.bind_symbolic_shape"(%17, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0)>}> {torch.module = ""} : (!torch.vtensor<[?,?],f32>, !torch.int, !torch.int) -> ()
    %18 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %19 = "torch.aten.sub.Tensor"(%13, %17, %18) {torch.module = ""} : (!torch.vtensor<[?,?],f32>, !torch.vtensor<[?,?],f32>, !torch.int) -> !torch.vtensor<[?,?],f32>
    "torch.bind_symbolic_shape"(%19, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0)>}> {torch.module = ""} : (!torch.vtensor<[?,?],f32>, !torch.int, !torch.int) -> ()
    func.return %19 : !torch.vtensor<[?,?],f32>
  }
}
