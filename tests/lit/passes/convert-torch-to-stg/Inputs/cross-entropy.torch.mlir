builtin.module {
  func.func @forward(%logits: !torch.vtensor<[?,?,50],bf16> {torch.name = "logits", torch.kind = "input"}, %labels: !torch.vtensor<[?,?],si64> {torch.name = "labels", torch.kind = "input"}) -> !torch.vtensor<[],f32> {
    %0 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "B"}> : () -> !torch.int
    %1 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "S"}> : () -> !torch.int
    "torch.bind_symbolic_shape"(%logits, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 50)>}> {torch.module = ""} : (!torch.vtensor<[?,?,50],bf16>, !torch.int, !torch.int) -> ()
    "torch.bind_symbolic_shape"(%labels, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0)>}> {torch.module = ""} : (!torch.vtensor<[?,?],si64>, !torch.int, !torch.int) -> ()
    %2 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %3 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %4 = "torch.constant.int"() <{value = 15 : i64}> {torch.module = ""} : () -> !torch.int
    %5 = "torch.constant.device"() <{value = "cpu"}> {torch.module = ""} : () -> !torch.Device
    %6 = "torch.constant.int"() <{value = 0 : i64}> {torch.module = ""} : () -> !torch.int
    "torch.aten._assert_tensor_metadata"(%logits, %2, %3, %4, %5, %6) {torch.module = ""} : (!torch.vtensor<[?,?,50],bf16>, !torch.none, !torch.none, !torch.int, !torch.Device, !torch.int) -> ()
    %7 = "torch.constant.int"() <{value = 6 : i64}> {torch.module = ""} : () -> !torch.int
    %8 = "torch.constant.bool"() <{value = false}> {torch.module = ""} : () -> !torch.bool
    %9 = "torch.constant.bool"() <{value = false}> {torch.module = ""} : () -> !torch.bool
    %10 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %11 = "torch.aten.to.dtype"(%logits, %7, %8, %9, %10) {torch.module = ""} : (!torch.vtensor<[?,?,50],bf16>, !torch.int, !torch.bool, !torch.bool, !torch.none) -> !torch.vtensor<[?,?,50],f32>
    "torch.bind_symbolic_shape"(%11, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 50)>}> {torch.module = ""} : (!torch.vtensor<[?,?,50],f32>, !torch.int, !torch.int) -> ()
    %12 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = ""} : () -> !torch.int
    %13 = "torch.constant.int"() <{value = 50 : i64}> {torch.module = ""} : () -> !torch.int
    %14 = "torch.prim.ListConstruct"(%12, %13) {torch.module = ""} : (!torch.int, !torch.int) -> !torch.list<int>
    %15 = "torch.aten.view"(%11, %14) {torch.module = ""} : (!torch.vtensor<[?,?,50],f32>, !torch.list<int>) -> !torch.vtensor<[?,50],f32>
    "torch.bind_symbolic_shape"(%15, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> ((s0 * s1), 50)>}> {torch.module = ""} : (!torch.vtensor<[?,50],f32>, !torch.int, !torch.int) -> ()
    %16 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = ""} : () -> !torch.int
    %17 = "torch.prim.ListConstruct"(%16) {torch.module = ""} : (!torch.int) -> !torch.list<int>
    %18 = "torch.aten.view"(%labels, %17) {torch.module = ""} : (!torch.vtensor<[?,?],si64>, !torch.list<int>) -> !torch.vtensor<[?],si64>
    "torch.bind_symbolic_shape"(%18, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> ((s0 * s1))>}> {torch.module = ""} : (!torch.vtensor<[?],si64>, !torch.int, !torch.int) -> ()
    %19 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %20 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %21 = "torch.constant.int"() <{value = -100 : i64}> {torch.module = ""} : () -> !torch.int
    %22 = "torch.constant.float"() <{value = 0.000000e+00 : f64}> {torch.module = ""} : () -> !torch.float
    %23 = "torch.aten.cross_entropy_loss"(%15, %18, %19, %20, %21, %22) {torch.module = ""} : (!torch.vtensor<[?,50],f32>, !torch.vtensor<[?],si64>, !torch.none, !torch.int, !torch.int, !torch.float) -> !torch.vtensor<[],f32>
    func.return %23 : !torch.vtensor<[],f32>
  }
}
