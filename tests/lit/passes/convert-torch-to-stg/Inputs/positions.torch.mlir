builtin.module {
  func.func @forward(%wte_weight: !torch.vtensor<[50,8],f32> {torch.name = "wte.weight", torch.kind = "parameter"}, %wpe_weight: !torch.vtensor<[16,8],f32> {torch.name = "wpe.weight", torch.kind = "parameter"}, %input_ids: !torch.vtensor<[?,?],si64> {torch.name = "input_ids", torch.kind = "input"}) -> !torch.vtensor<[?,?,8],f32> {
    %0 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "B"}> : () -> !torch.int
    %1 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "S"}> : () -> !torch.int
    "torch.bind_symbolic_shape"(%input_ids, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0)>}> {torch.module = ""} : (!torch.vtensor<[?,?],si64>, !torch.int, !torch.int) -> ()
    %2 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %3 = "torch.aten.size.int"(%input_ids, %2) {torch.module = ""} : (!torch.vtensor<[?,?],si64>, !torch.int) -> !torch.int
    %4 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %5 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %6 = "torch.constant.device"() <{value = "cpu"}> {torch.module = ""} : () -> !torch.Device
    %7 = "torch.constant.bool"() <{value = false}> {torch.module = ""} : () -> !torch.bool
    %8 = "torch.aten.arange"(%3, %4, %5, %6, %7) {torch.module = ""} : (!torch.int, !torch.none, !torch.none, !torch.Device, !torch.bool) -> !torch.vtensor<[?],si64>
    "torch.bind_symbolic_shape"(%8, %1) <{shape_expressions = affine_map<()[s0] -> (s0)>}> {torch.module = ""} : (!torch.vtensor<[?],si64>, !torch.int) -> ()
    %9 = "torch.constant.int"() <{value = 0 : i64}> {torch.module = ""} : () -> !torch.int
    %10 = "torch.aten.unsqueeze"(%8, %9) {torch.module = ""} : (!torch.vtensor<[?],si64>, !torch.int) -> !torch.vtensor<[1,?],si64>
    "torch.bind_symbolic_shape"(%10, %1) <{shape_expressions = affine_map<()[s0] -> (1, s0)>}> {torch.module = ""} : (!torch.vtensor<[1,?],si64>, !torch.int) -> ()
    %11 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = "wte"} : () -> !torch.int
    %12 = "torch.constant.bool"() <{value = false}> {torch.module = "wte"} : () -> !torch.bool
    %13 = "torch.constant.bool"() <{value = false}> {torch.module = "wte"} : () -> !torch.bool
    %14 = "torch.aten.embedding"(%wte_weight, %input_ids, %11, %12, %13) {torch.module = "wte"} : (!torch.vtensor<[50,8],f32>, !torch.vtensor<[?,?],si64>, !torch.int, !torch.bool, !torch.bool) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%14, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 8)>}> {torch.module = "wte"} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    %15 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = "wpe"} : () -> !torch.int
    %16 = "torch.constant.bool"() <{value = false}> {torch.module = "wpe"} : () -> !torch.bool
    %17 = "torch.constant.bool"() <{value = false}> {torch.module = "wpe"} : () -> !torch.bool
    %18 = "torch.aten.embedding"(%wpe_weight, %10, %15, %16, %17) {torch.module = "wpe"} : (!torch.vtensor<[16,8],f32>, !torch.vtensor<[1,?],si64>, !torch.int, !torch.bool, !torch.bool) -> !torch.vtensor<[1,?,8],f32>
    "torch.bind_symbolic_shape"(%18, %1) <{shape_expressions = affine_map<()[s0] -> (1, s0, 8)>}> {torch.module = "wpe"} : (!torch.vtensor<[1,?,8],f32>, !torch.int) -> ()
    %19 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %20 = "torch.aten.add.Tensor"(%14, %18, %19) {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.vtensor<[1,?,8],f32>, !torch.int) -> !torch.vtensor<[?,?,8],f32>
    "torch.bind_symbolic_shape"(%20, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 8)>}> {torch.module = ""} : (!torch.vtensor<[?,?,8],f32>, !torch.int, !torch.int) -> ()
    func.return %20 : !torch.vtensor<[?,?,8],f32>
  }
}
