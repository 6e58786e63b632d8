builtin.module {
  func.func @forward(%x: !torch.vtensor<[?,?,8],f32> {torch.name = "x", torch.kind = "input"}) -> !torch.vtensor<[?,?,8],f32> {
    %0 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "B"}> : () -> !torch.int
    %1 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "S"}> : () -> !torch.int
    "torch.bind_symbolic_shape"(%x, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %2 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = ""} : () -> !torch.int
    %3 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %4 = "torch.aten.softmax.int"(%x, %2, %3) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.none) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%4, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    func.return %4 : !torch.vtensor<[?,?,8],f32>
  }
}
