builtin.module {
  func.func @forward(%embed_tokens_weight: !torch.vtensor<[50,8],f32> {torch.name = "embed_tokens.weight", torch.kind = "parameter"}, %input_ids: !torch.vtensor<[?,?],si64> {torch.name = "input_ids", torch.kind = "input"}) -> !torch.vtensor<[?,?,8],f32> {
    %0 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "B"}> : () -> !torch.int
    %1 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "S"}> : () -> !torch.int
    "torch.bind_symbolic_shape"(%input_ids, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0)>}> {torch.module = ""} : (!torch.vtensor<[?,?],si64>, !torch.int, !torch.int) -> ()
    %2 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = "embed_tokens"} : () -> !torch.int
    %3 = "torch.constant.bool"() <{value = false}> {torch.module = "embed_tokens"} : () -> !torch.bool
    %4 = "torch.constant.bool"() <{value = false}> {torch.module = "embed_tokens"} : () -> !torch.bool
    %5 = "torch.aten.embedding"(%embed_tokens_weight, %input_ids, %2, %3, %4) {torch.module = "embed_tokens"} : (!torch.vtensor<[50,8],f32>, !torch.vtensor<[?,?],si64>, !torch.int, !torch.bool, !torch.bool) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%5, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 8)>}> {torch.module = "embed_tokens"} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    func.return %5 : !torch.vtensor<[?,?,8],f32>
  }
}
