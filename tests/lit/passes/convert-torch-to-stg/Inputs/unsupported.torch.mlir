builtin.module {
  func.func @forward(%proj_weight: !torch.vtensor<[8,8],f32> {torch.name = "proj.weight", torch.kind = "parameter"}, %proj_bias: !torch.vtensor<[8],f32> {torch.name = "proj.bias", torch.kind = "parameter"}, %x: !torch.vtensor<[?,?,8],f32> {torch.name = "x", torch.kind = "input"}) -> !torch.vtensor<[?,?,8],f32> {
    %0 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "B"}> : () -> !torch.int
    %1 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "S"}> : () -> !torch.int
    "torch.bind_symbolic_shape"(%x, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %2 = "torch.aten.linear"(%x, %proj_weight, %proj_bias) {torch.module = "proj"} : (!torch.vtensor<[?,?,8],f32>, !torch.vtensor<[8,8],f32>, !torch.vtensor<[8],f32>) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%2, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 8)>}> {torch.module = "proj"} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %3 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "scan", torch.loc = "make_inputs.py:116"} : () -> !torch.int
    %4 = "torch.constant.none"() {torch.module = "scan", torch.loc = "make_inputs.py:116"} : () -> !torch.none
    %5 = "torch.aten.cumsum"(%2, %3, %4) {torch.module = "scan", torch.loc = "make_inputs.py:116"} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.none) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%5, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 8)>}> {torch.module = "scan", torch.loc = "make_inputs.py:116"} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    func.return %5 : !torch.vtensor<[?,?,8],f32>
  }
}
