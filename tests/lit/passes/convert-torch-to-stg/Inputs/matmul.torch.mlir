builtin.module {
  func.func @forward(%a: !torch.vtensor<[?,?,8],f32> {torch.name = "a", torch.kind = "input"}, %b: !torch.vtensor<[?,5,8],f32> {torch.name = "b", torch.kind = "input"}) -> !torch.vtensor<[?,?,5],f32> {
    %0 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "B"}> : () -> !torch.int
    %1 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "S"}> : () -> !torch.int
    "torch.bind_symbolic_shape"(%a, %0, %1) <{shape_expressions = affine_map<()[s0, s1] -> (s0, s1, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    "torch.bind_symbolic_shape"(%b, %0) <{shape_expressions = affine_map<()[s0] -> (s0, 5, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,5,8],f32>, !torch.int) -> ()
    %2 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %3 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = ""} : () -> !torch.int
    %4 = "torch.aten.transpose.int"(%b, %2, %3) {torch.module = ""} : (!torch.vtensor<[?,5,8],f32>, !torch.int, !torch.int) -> !torch.vtensor<[?,8,5],f32>
    "torch.bind_symbolic_shape"(%4, %0) <{shape_expressions = affine_map<()[s0] -> (s0, 8, 5)>}> {torch.module = ""} : (!torch.vtensor<[?,8,5],f32>, !torch.int) -> ()
    %5 = "torch.aten.matmul"(%a, %4) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.vtensor<[?,8,5],f32>) -> !torch.vtensor<[?,?,5],f32>
    "torch.bind_symbolic_shape"(%5, %0, %1) <{shape_expressions = affine_map<()[s0, s1] -> (s0, s1, 5)>}> {torch.module = ""} : (!torch.vtensor<[?,?,5],f32>, !torch.int, !torch.int) -> ()
    func.return %5 : !torch.vtensor<[?,?,5],f32>
  }
}
