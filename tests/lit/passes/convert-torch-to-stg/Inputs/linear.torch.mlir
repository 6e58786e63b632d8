builtin.module {
  func.func @forward(%proj_weight: !torch.vtensor<[12,8],f32> {torch.name = "proj.weight", torch.kind = "parameter"}, %proj_bias: !torch.vtensor<[12],f32> {torch.name = "proj.bias", torch.kind = "parameter"}, %x: !torch.vtensor<[?,?,8],f32> {torch.name = "x", torch.kind = "input"}) -> !torch.vtensor<[?,?,12],f32> {
    %0 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "B"}> : () -> !torch.int
    %1 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "S"}> : () -> !torch.int
    "torch.bind_symbolic_shape"(%x, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %2 = "torch.aten.linear"(%x, %proj_weight, %proj_bias) {torch.module = "proj"} : (!torch.vtensor<[?,?,8],f32>, !torch.vtensor<[12,8],f32>, !torch.vtensor<[12],f32>) -> !torch.vtensor<[?,?,12],f32>
    "torch.bind_symbolic_shape"(%2, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 12)>}> {torch.module = "proj"} : (!torch.vtensor<[?,?,12],f32>, !torch.int, !torch.int) -> ()
    func.return %2 : !torch.vtensor<[?,?,12],f32>
  }
}
