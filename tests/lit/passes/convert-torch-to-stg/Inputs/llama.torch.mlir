builtin.module {
  func.func @forward(%model_embed_tokens_weight: !torch.vtensor<[64,32],f32> {torch.name = "model.embed_tokens.weight", torch.kind = "parameter"}, %model_layers_0_input_layernorm_weight: !torch.vtensor<[32],f32> {torch.name = "model.layers.0.input_layernorm.weight", torch.kind = "parameter"}, %model_layers_0_self_attn_q_proj_weight: !torch.vtensor<[32,32],f32> {torch.name = "model.layers.0.self_attn.q_proj.weight", torch.kind = "parameter"}, %model_layers_0_self_attn_k_proj_weight: !torch.vtensor<[16,32],f32> {torch.name = "model.layers.0.self_attn.k_proj.weight", torch.kind = "parameter"}, %model_layers_0_self_attn_v_proj_weight: !torch.vtensor<[16,32],f32> {torch.name = "model.layers.0.self_attn.v_proj.weight", torch.kind = "parameter"}, %model_layers_0_self_attn_o_proj_weight: !torch.vtensor<[32,32],f32> {torch.name = "model.layers.0.self_attn.o_proj.weight", torch.kind = "parameter"}, %model_layers_0_post_attention_layernorm_weight: !torch.vtensor<[32],f32> {torch.name = "model.layers.0.post_attention_layernorm.weight", torch.kind = "parameter"}, %model_layers_0_mlp_gate_proj_weight: !torch.vtensor<[48,32],f32> {torch.name = "model.layers.0.mlp.gate_proj.weight", torch.kind = "parameter"}, %model_layers_0_mlp_up_proj_weight: !torch.vtensor<[48,32],f32> {torch.name = "model.layers.0.mlp.up_proj.weight", torch.kind = "parameter"}, %model_layers_0_mlp_down_proj_weight: !torch.vtensor<[32,48],f32> {torch.name = "model.layers.0.mlp.down_proj.weight", torch.kind = "parameter"}, %model_layers_1_input_layernorm_weight: !torch.vtensor<[32],f32> {torch.name = "model.layers.1.input_layernorm.weight", torch.kind = "parameter"}, %model_layers_1_self_attn_q_proj_weight: !torch.vtensor<[32,32],f32> {torch.name = "model.layers.1.self_attn.q_proj.weight", torch.kind = "parameter"}, %model_layers_1_self_attn_k_proj_weight: !torch.vtensor<[16,32],f32> {torch.name = "model.layers.1.self_attn.k_proj.weight", torch.kind = "parameter"}, %model_layers_1_self_attn_v_proj_weight: !torch.vtensor<[16,32],f32> {torch.name = "model.layers.1.self_attn.v_proj.weight", torch.kind = "parameter"}, %model_layers_1_self_attn_o_proj_weight: !torch.vtensor<[32,32],f32> {torch.name = "model.layers.1.self_attn.o_proj.weight", torch.kind = "parameter"}, %model_layers_1_post_attention_layernorm_weight: !torch.vtensor<[32],f32> {torch.name = "model.layers.1.post_attention_layernorm.weight", torch.kind = "parameter"}, %model_layers_1_mlp_gate_proj_weight: !torch.vtensor<[48,32],f32> {torch.name = "model.layers.1.mlp.gate_proj.weight", torch.kind = "parameter"}, %model_layers_1_mlp_up_proj_weight: !torch.vtensor<[48,32],f32> {torch.name = "model.layers.1.mlp.up_proj.weight", torch.kind = "parameter"}, %model_layers_1_mlp_down_proj_weight: !torch.vtensor<[32,48],f32> {torch.name = "model.layers.1.mlp.down_proj.weight", torch.kind = "parameter"}, %model_norm_weight: !torch.vtensor<[32],f32> {torch.name = "model.norm.weight", torch.kind = "parameter"}, %lm_head_weight: !torch.vtensor<[64,32],f32> {torch.name = "lm_head.weight", torch.kind = "parameter"}, %model_inv_freq: !torch.vtensor<[4],f32> {torch.name = "model.inv_freq", torch.kind = "buffer"}, %input_ids: !torch.vtensor<[?,?],si64> {torch.name = "input_ids", torch.kind = "input"}, %labels: !torch.vtensor<[?,?],si64> {torch.name = "labels", torch.kind = "input"}) -> !torch.vtensor<[],f32> {
    %0 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "B"}> : () -> !torch.int
    %1 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "S"}> : () -> !torch.int
    "torch.bind_symbolic_shape"(%input_ids, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0)>}> {torch.module = ""} : (!torch.vtensor<[?,?],si64>, !torch.int, !torch.int) -> ()
    "torch.bind_symbolic_shape"(%labels, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0)>}> {torch.module = ""} : (!torch.vtensor<[?,?],si64>, !torch.int, !torch.int) -> ()
    %2 = "torch.constant.int"() <{value = 0 : i64}> {torch.module = ""} : () -> !torch.int
    %3 = "torch.aten.size.int"(%input_ids, %2) {torch.module = ""} : (!torch.vtensor<[?,?],si64>, !torch.int) -> !torch.int
    %4 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %5 = "torch.aten.size.int"(%labels, %4) {torch.module = ""} : (!torch.vtensor<[?,?],si64>, !torch.int) -> !torch.int
    %6 = "torch.constant.int"() <{value = 6 : i64}> {torch.module = "model"} : () -> !torch.int
    %7 = "torch.constant.none"() {torch.module = "model"} : () -> !torch.none
    %8 = "torch.constant.device"() <{value = "cpu"}> {torch.module = "model"} : () -> !torch.Device
    %9 = "torch.constant.bool"() <{value = false}> {torch.module = "model"} : () -> !torch.bool
    %10 = "torch.aten.arange"(%5, %6, %7, %8, %9) {torch.module = "model"} : (!torch.int, !torch.int, !torch.none, !torch.Device, !torch.bool) -> !torch.vtensor<[?],f32>
    "torch.bind_symbolic_shape"(%10, %1) <{shape_expressions = affine_map<()[s0] -> (s0)>}> {torch.module = "model"} : (!torch.vtensor<[?],f32>, !torch.int) -> ()
    %11 = "torch.aten.outer"(%10, %model_inv_freq) {torch.module = "model"} : (!torch.vtensor<[?],f32>, !torch.vtensor<[4],f32>) -> !torch.vtensor<[?,4],f32>
    "torch.bind_symbolic_shape"(%11, %1) <{shape_expressions = affine_map<()[s0] -> (s0, 4)>}> {torch.module = "model"} : (!torch.vtensor<[?,4],f32>, !torch.int) -> ()
    %12 = "torch.prim.ListConstruct"(%11, %11) {torch.module = "model"} : (!torch.vtensor<[?,4],f32>, !torch.vtensor<[?,4],f32>) -> !torch.list<vtensor>
    %13 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = "model"} : () -> !torch.int
    %14 = "torch.aten.cat"(%12, %13) {torch.module = "model"} : (!torch.list<vtensor>, !torch.int) -> !torch.vtensor<[?,8],f32>
    "torch.bind_symbolic_shape"(%14, %1) <{shape_expressions = affine_map<()[s0] -> (s0, 8)>}> {torch.module = "model"} : (!torch.vtensor<[?,8],f32>, !torch.int) -> ()
    %15 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = "model.embed_tokens"} : () -> !torch.int
    %16 = "torch.constant.bool"() <{value = false}> {torch.module = "model.embed_tokens"} : () -> !torch.bool
    %17 = "torch.constant.bool"() <{value = false}> {torch.module = "model.embed_tokens"} : () -> !torch.bool
    %18 = "torch.aten.embedding"(%model_embed_tokens_weight, %input_ids, %15, %16, %17) {torch.module = "model.embed_tokens"} : (!torch.vtensor<[64,32],f32>, !torch.vtensor<[?,?],si64>, !torch.int, !torch.bool, !torch.bool) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%18, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.embed_tokens"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %19 = "torch.aten.cos"(%14) {torch.module = "model"} : (!torch.vtensor<[?,8],f32>) -> !torch.vtensor<[?,8],f32>
    "torch.bind_symbolic_shape"(%19, %1) <{shape_expressions = affine_map<()[s0] -> (s0, 8)>}> {torch.module = "model"} : (!torch.vtensor<[?,8],f32>, !torch.int) -> ()
    %20 = "torch.constant.int"() <{value = 0 : i64}> {torch.module = "model"} : () -> !torch.int
    %21 = "torch.aten.unsqueeze"(%19, %20) {torch.module = "model"} : (!torch.vtensor<[?,8],f32>, !torch.int) -> !torch.vtensor<[1,?,8],f32>
    "torch.bind_symbolic_shape"(%21, %1) <{shape_expressions = affine_map<()[s0] -> (1, s0, 8)>}> {torch.module = "model"} : (!torch.vtensor<[1,?,8],f32>, !torch.int) -> ()
    %22 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model"} : () -> !torch.int
    %23 = "torch.aten.unsqueeze"(%21, %22) {torch.module = "model"} : (!torch.vtensor<[1,?,8],f32>, !torch.int) -> !torch.vtensor<[1,1,?,8],f32>
    "torch.bind_symbolic_shape"(%23, %1) <{shape_expressions = affine_map<()[s0] -> (1, 1, s0, 8)>}> {torch.module = "model"} : (!torch.vtensor<[1,1,?,8],f32>, !torch.int) -> ()
    %24 = "torch.constant.none"() {torch.module = "model"} : () -> !torch.none
    %25 = "torch.constant.none"() {torch.module = "model"} : () -> !torch.none
    %26 = "torch.constant.int"() <{value = 6 : i64}> {torch.module = "model"} : () -> !torch.int
    %27 = "torch.constant.device"() <{value = "cpu"}> {torch.module = "model"} : () -> !torch.Device
    %28 = "torch.constant.int"() <{value = 0 : i64}> {torch.module = "model"} : () -> !torch.int
    "torch.aten._assert_tensor_metadata"(%23, %24, %25, %26, %27, %28) {torch.module = "model"} : (!torch.vtensor<[1,1,?,8],f32>, !torch.none, !torch.none, !torch.int, !torch.Device, !torch.int) -> ()
    %29 = "torch.constant.int"() <{value = 6 : i64}> {torch.module = "model"} : () -> !torch.int
    %30 = "torch.constant.bool"() <{value = false}> {torch.module = "model"} : () -> !torch.bool
    %31 = "torch.constant.bool"() <{value = false}> {torch.module = "model"} : () -> !torch.bool
    %32 = "torch.constant.none"() {torch.module = "model"} : () -> !torch.none
    %33 = "torch.aten.to.dtype"(%23, %29, %30, %31, %32) {torch.module = "model"} : (!torch.vtensor<[1,1,?,8],f32>, !torch.int, !torch.bool, !torch.bool, !torch.none) -> !torch.vtensor<[1,1,?,8],f32>
    "torch.bind_symbolic_shape"(%33, %1) <{shape_expressions = affine_map<()[s0] -> (1, 1, s0, 8)>}> {torch.module = "model"} : (!torch.vtensor<[1,1,?,8],f32>, !torch.int) -> ()
    %34 = "torch.aten.sin"(%14) {torch.module = "model"} : (!torch.vtensor<[?,8],f32>) -> !torch.vtensor<[?,8],f32>
    "torch.bind_symbolic_shape"(%34, %1) <{shape_expressions = affine_map<()[s0] -> (s0, 8)>}> {torch.module = "model"} : (!torch.vtensor<[?,8],f32>, !torch.int) -> ()
    %35 = "torch.constant.int"() <{value = 0 : i64}> {torch.module = "model"} : () -> !torch.int
    %36 = "torch.aten.unsqueeze"(%34, %35) {torch.module = "model"} : (!torch.vtensor<[?,8],f32>, !torch.int) -> !torch.vtensor<[1,?,8],f32>
    "torch.bind_symbolic_shape"(%36, %1) <{shape_expressions = affine_map<()[s0] -> (1, s0, 8)>}> {torch.module = "model"} : (!torch.vtensor<[1,?,8],f32>, !torch.int) -> ()
    %37 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model"} : () -> !torch.int
    %38 = "torch.aten.unsqueeze"(%36, %37) {torch.module = "model"} : (!torch.vtensor<[1,?,8],f32>, !torch.int) -> !torch.vtensor<[1,1,?,8],f32>
    "torch.bind_symbolic_shape"(%38, %1) <{shape_expressions = affine_map<()[s0] -> (1, 1, s0, 8)>}> {torch.module = "model"} : (!torch.vtensor<[1,1,?,8],f32>, !torch.int) -> ()
    %39 = "torch.constant.none"() {torch.module = "model"} : () -> !torch.none
    %40 = "torch.constant.none"() {torch.module = "model"} : () -> !torch.none
    %41 = "torch.constant.int"() <{value = 6 : i64}> {torch.module = "model"} : () -> !torch.int
    %42 = "torch.constant.device"() <{value = "cpu"}> {torch.module = "model"} : () -> !torch.Device
    %43 = "torch.constant.int"() <{value = 0 : i64}> {torch.module = "model"} : () -> !torch.int
    "torch.aten._assert_tensor_metadata"(%38, %39, %40, %41, %42, %43) {torch.module = "model"} : (!torch.vtensor<[1,1,?,8],f32>, !torch.none, !torch.none, !torch.int, !torch.Device, !torch.int) -> ()
    %44 = "torch.constant.int"() <{value = 6 : i64}> {torch.module = "model"} : () -> !torch.int
    %45 = "torch.constant.bool"() <{value = false}> {torch.module = "model"} : () -> !torch.bool
    %46 = "torch.constant.bool"() <{value = false}> {torch.module = "model"} : () -> !torch.bool
    %47 = "torch.constant.none"() {torch.module = "model"} : () -> !torch.none
    %48 = "torch.aten.to.dtype"(%38, %44, %45, %46, %47) {torch.module = "model"} : (!torch.vtensor<[1,1,?,8],f32>, !torch.int, !torch.bool, !torch.bool, !torch.none) -> !torch.vtensor<[1,1,?,8],f32>
    "torch.bind_symbolic_shape"(%48, %1) <{shape_expressions = affine_map<()[s0] -> (1, 1, s0, 8)>}> {torch.module = "model"} : (!torch.vtensor<[1,1,?,8],f32>, !torch.int) -> ()
    %49 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = "model.layers.0.input_layernorm"} : () -> !torch.int
    %50 = "torch.aten.pow.Tensor_Scalar"(%18, %49) {torch.module = "model.layers.0.input_layernorm"} : (!torch.vtensor<[?,?,32],f32>, !torch.int) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%50, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.layers.0.input_layernorm"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %51 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = "model.layers.0.input_layernorm"} : () -> !torch.int
    %52 = "torch.prim.ListConstruct"(%51) {torch.module = "model.layers.0.input_layernorm"} : (!torch.int) -> !torch.list<int>
    %53 = "torch.constant.bool"() <{value = true}> {torch.module = "model.layers.0.input_layernorm"} : () -> !torch.bool
    %54 = "torch.constant.none"() {torch.module = "model.layers.0.input_layernorm"} : () -> !torch.none
    %55 = "torch.aten.mean.dim"(%50, %52, %53, %54) {torch.module = "model.layers.0.input_layernorm"} : (!torch.vtensor<[?,?,32],f32>, !torch.list<int>, !torch.bool, !torch.none) -> !torch.vtensor<[?,?,1],f32>
    "torch.bind_symbolic_shape"(%55, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 1)>}> {torch.module = "model.layers.0.input_layernorm"} : (!torch.vtensor<[?,?,1],f32>, !torch.int, !torch.int) -> ()
    %56 = "torch.constant.float"() <{value = 1.000000e-05 : f64}> {torch.module = "model.layers.0.input_layernorm"} : () -> !torch.float
    %57 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.0.input_layernorm"} : () -> !torch.int
    %58 = "torch.aten.add.Scalar"(%55, %56, %57) {torch.module = "model.layers.0.input_layernorm"} : (!torch.vtensor<[?,?,1],f32>, !torch.float, !torch.int) -> !torch.vtensor<[?,?,1],f32>
    "torch.bind_symbolic_shape"(%58, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 1)>}> {torch.module = "model.layers.0.input_layernorm"} : (!torch.vtensor<[?,?,1],f32>, !torch.int, !torch.int) -> ()
    %59 = "torch.aten.rsqrt"(%58) {torch.module = "model.layers.0.input_layernorm"} : (!torch.vtensor<[?,?,1],f32>) -> !torch.vtensor<[?,?,1],f32>
    "torch.bind_symbolic_shape"(%59, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 1)>}> {torch.module = "model.layers.0.input_layernorm"} : (!torch.vtensor<[?,?,1],f32>, !torch.int, !torch.int) -> ()
    %60 = "torch.aten.mul.Tensor"(%18, %59) {torch.module = "model.layers.0.input_layernorm"} : (!torch.vtensor<[?,?,32],f32>, !torch.vtensor<[?,?,1],f32>) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%60, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.layers.0.input_layernorm"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %61 = "torch.aten.mul.Tensor"(%model_layers_0_input_layernorm_weight, %60) {torch.module = "model.layers.0.input_layernorm"} : (!torch.vtensor<[32],f32>, !torch.vtensor<[?,?,32],f32>) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%61, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.layers.0.input_layernorm"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %62 = "torch.constant.none"() {torch.module = "model.layers.0.self_attn.q_proj"} : () -> !torch.none
    %63 = "torch.aten.linear"(%61, %model_layers_0_self_attn_q_proj_weight, %62) {torch.module = "model.layers.0.self_attn.q_proj"} : (!torch.vtensor<[?,?,32],f32>, !torch.vtensor<[32,32],f32>, !torch.none) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%63, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.layers.0.self_attn.q_proj"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %64 = "torch.constant.int"() <{value = 4 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %65 = "torch.constant.int"() <{value = 8 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %66 = "torch.prim.ListConstruct"(%3, %5, %64, %65) {torch.module = "model.layers.0.self_attn"} : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %67 = "torch.aten.view"(%63, %66) {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,?,32],f32>, !torch.list<int>) -> !torch.vtensor<[?,?,4,8],f32>
    "torch.bind_symbolic_shape"(%67, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 4, 8)>}> {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,?,4,8],f32>, !torch.int, !torch.int) -> ()
    %68 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %69 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %70 = "torch.aten.transpose.int"(%67, %68, %69) {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,?,4,8],f32>, !torch.int, !torch.int) -> !torch.vtensor<[?,4,?,8],f32>
    "torch.bind_symbolic_shape"(%70, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 8)>}> {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int) -> ()
    %71 = "torch.constant.none"() {torch.module = "model.layers.0.self_attn.k_proj"} : () -> !torch.none
    %72 = "torch.aten.linear"(%61, %model_layers_0_self_attn_k_proj_weight, %71) {torch.module = "model.layers.0.self_attn.k_proj"} : (!torch.vtensor<[?,?,32],f32>, !torch.vtensor<[16,32],f32>, !torch.none) -> !torch.vtensor<[?,?,16],f32>
    "torch.bind_symbolic_shape"(%72, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 16)>}> {torch.module = "model.layers.0.self_attn.k_proj"} : (!torch.vtensor<[?,?,16],f32>, !torch.int, !torch.int) -> ()
    %73 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %74 = "torch.constant.int"() <{value = 8 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %75 = "torch.prim.ListConstruct"(%3, %5, %73, %74) {torch.module = "model.layers.0.self_attn"} : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %76 = "torch.aten.view"(%72, %75) {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,?,16],f32>, !torch.list<int>) -> !torch.vtensor<[?,?,2,8],f32>
    "torch.bind_symbolic_shape"(%76, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 2, 8)>}> {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,?,2,8],f32>, !torch.int, !torch.int) -> ()
    %77 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %78 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %79 = "torch.aten.transpose.int"(%76, %77, %78) {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,?,2,8],f32>, !torch.int, !torch.int) -> !torch.vtensor<[?,2,?,8],f32>
    "torch.bind_symbolic_shape"(%79, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 2, s0, 8)>}> {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,2,?,8],f32>, !torch.int, !torch.int) -> ()
    %80 = "torch.constant.none"() {torch.module = "model.layers.0.self_attn.v_proj"} : () -> !torch.none
    %81 = "torch.aten.linear"(%61, %model_layers_0_self_attn_v_proj_weight, %80) {torch.module = "model.layers.0.self_attn.v_proj"} : (!torch.vtensor<[?,?,32],f32>, !torch.vtensor<[16,32],f32>, !torch.none) -> !torch.vtensor<[?,?,16],f32>
    "torch.bind_symbolic_shape"(%81, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 16)>}> {torch.module = "model.layers.0.self_attn.v_proj"} : (!torch.vtensor<[?,?,16],f32>, !torch.int, !torch.int) -> ()
    %82 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %83 = "torch.constant.int"() <{value = 8 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %84 = "torch.prim.ListConstruct"(%3, %5, %82, %83) {torch.module = "model.layers.0.self_attn"} : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %85 = "torch.aten.view"(%81, %84) {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,?,16],f32>, !torch.list<int>) -> !torch.vtensor<[?,?,2,8],f32>
    "torch.bind_symbolic_shape"(%85, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 2, 8)>}> {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,?,2,8],f32>, !torch.int, !torch.int) -> ()
    %86 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %87 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %88 = "torch.aten.transpose.int"(%85, %86, %87) {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,?,2,8],f32>, !torch.int, !torch.int) -> !torch.vtensor<[?,2,?,8],f32>
    "torch.bind_symbolic_shape"(%88, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 2, s0, 8)>}> {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,2,?,8],f32>, !torch.int, !torch.int) -> ()
    %89 = "torch.aten.mul.Tensor"(%70, %33) {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,4,?,8],f32>, !torch.vtensor<[1,1,?,8],f32>) -> !torch.vtensor<[?,4,?,8],f32>
    "torch.bind_symbolic_shape"(%89, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 8)>}> {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int) -> ()
    %90 = "torch.constant.int"() <{value = 3 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %91 = "torch.constant.int"() <{value = 4 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %92 = "torch.constant.int"() <{value = 9223372036854775807 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %93 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %94 = "torch.aten.slice.Tensor"(%70, %90, %91, %92, %93) {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int, !torch.int, !torch.int) -> !torch.vtensor<[?,4,?,4],f32>
    "torch.bind_symbolic_shape"(%94, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 4)>}> {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,4,?,4],f32>, !torch.int, !torch.int) -> ()
    %95 = "torch.aten.neg"(%94) {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,4,?,4],f32>) -> !torch.vtensor<[?,4,?,4],f32>
    "torch.bind_symbolic_shape"(%95, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 4)>}> {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,4,?,4],f32>, !torch.int, !torch.int) -> ()
    %96 = "torch.constant.int"() <{value = 3 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %97 = "torch.constant.int"() <{value = 0 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %98 = "torch.constant.int"() <{value = 4 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %99 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %100 = "torch.aten.slice.Tensor"(%70, %96, %97, %98, %99) {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int, !torch.int, !torch.int) -> !torch.vtensor<[?,4,?,4],f32>
    "torch.bind_symbolic_shape"(%100, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 4)>}> {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,4,?,4],f32>, !torch.int, !torch.int) -> ()
    %101 = "torch.prim.ListConstruct"(%95, %100) {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,4,?,4],f32>, !torch.vtensor<[?,4,?,4],f32>) -> !torch.list<vtensor>
    %102 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %103 = "torch.aten.cat"(%101, %102) {torch.module = "model.layers.0.self_attn"} : (!torch.list<vtensor>, !torch.int) -> !torch.vtensor<[?,4,?,8],f32>
    "torch.bind_symbolic_shape"(%103, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 8)>}> {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int) -> ()
    %104 = "torch.aten.mul.Tensor"(%103, %48) {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,4,?,8],f32>, !torch.vtensor<[1,1,?,8],f32>) -> !torch.vtensor<[?,4,?,8],f32>
    "torch.bind_symbolic_shape"(%104, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 8)>}> {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int) -> ()
    %105 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %106 = "torch.aten.add.Tensor"(%89, %104, %105) {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,4,?,8],f32>, !torch.vtensor<[?,4,?,8],f32>, !torch.int) -> !torch.vtensor<[?,4,?,8],f32>
    "torch.bind_symbolic_shape"(%106, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 8)>}> {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int) -> ()
    %107 = "torch.aten.mul.Tensor"(%79, %33) {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,2,?,8],f32>, !torch.vtensor<[1,1,?,8],f32>) -> !torch.vtensor<[?,2,?,8],f32>
    "torch.bind_symbolic_shape"(%107, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 2, s0, 8)>}> {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,2,?,8],f32>, !torch.int, !torch.int) -> ()
    %108 = "torch.constant.int"() <{value = 3 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %109 = "torch.constant.int"() <{value = 4 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %110 = "torch.constant.int"() <{value = 9223372036854775807 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %111 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %112 = "torch.aten.slice.Tensor"(%79, %108, %109, %110, %111) {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,2,?,8],f32>, !torch.int, !torch.int, !torch.int, !torch.int) -> !torch.vtensor<[?,2,?,4],f32>
    "torch.bind_symbolic_shape"(%112, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 2, s0, 4)>}> {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,2,?,4],f32>, !torch.int, !torch.int) -> ()
    %113 = "torch.aten.neg"(%112) {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,2,?,4],f32>) -> !torch.vtensor<[?,2,?,4],f32>
    "torch.bind_symbolic_shape"(%113, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 2, s0, 4)>}> {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,2,?,4],f32>, !torch.int, !torch.int) -> ()
    %114 = "torch.constant.int"() <{value = 3 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %115 = "torch.constant.int"() <{value = 0 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %116 = "torch.constant.int"() <{value = 4 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %117 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %118 = "torch.aten.slice.Tensor"(%79, %114, %115, %116, %117) {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,2,?,8],f32>, !torch.int, !torch.int, !torch.int, !torch.int) -> !torch.vtensor<[?,2,?,4],f32>
    "torch.bind_symbolic_shape"(%118, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 2, s0, 4)>}> {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,2,?,4],f32>, !torch.int, !torch.int) -> ()
    %119 = "torch.prim.ListConstruct"(%113, %118) {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,2,?,4],f32>, !torch.vtensor<[?,2,?,4],f32>) -> !torch.list<vtensor>
    %120 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %121 = "torch.aten.cat"(%119, %120) {torch.module = "model.layers.0.self_attn"} : (!torch.list<vtensor>, !torch.int) -> !torch.vtensor<[?,2,?,8],f32>
    "torch.bind_symbolic_shape"(%121, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 2, s0, 8)>}> {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,2,?,8],f32>, !torch.int, !torch.int) -> ()
    %122 = "torch.aten.mul.Tensor"(%121, %48) {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,2,?,8],f32>, !torch.vtensor<[1,1,?,8],f32>) -> !torch.vtensor<[?,2,?,8],f32>
    "torch.bind_symbolic_shape"(%122, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 2, s0, 8)>}> {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,2,?,8],f32>, !torch.int, !torch.int) -> ()
    %123 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %124 = "torch.aten.add.Tensor"(%107, %122, %123) {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,2,?,8],f32>, !torch.vtensor<[?,2,?,8],f32>, !torch.int) -> !torch.vtensor<[?,2,?,8],f32>
    "torch.bind_symbolic_shape"(%124, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 2, s0, 8)>}> {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,2,?,8],f32>, !torch.int, !torch.int) -> ()
    %125 = "torch.constant.none"() {torch.module = "model.layers.0.self_attn"} : () -> !torch.none
    %126 = "torch.constant.float"() <{value = 0.000000e+00 : f64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.float
    %127 = "torch.constant.bool"() <{value = true}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.bool
    %128 = "torch.constant.none"() {torch.module = "model.layers.0.self_attn"} : () -> !torch.none
    %129 = "torch.constant.bool"() <{value = true}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.bool
    %130 = "torch.aten.scaled_dot_product_attention"(%106, %124, %88, %125, %126, %127, %128, %129) {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,4,?,8],f32>, !torch.vtensor<[?,2,?,8],f32>, !torch.vtensor<[?,2,?,8],f32>, !torch.none, !torch.float, !torch.bool, !torch.none, !torch.bool) -> !torch.vtensor<[?,4,?,8],f32>
    "torch.bind_symbolic_shape"(%130, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 8)>}> {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int) -> ()
    %131 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %132 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %133 = "torch.aten.transpose.int"(%130, %131, %132) {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int) -> !torch.vtensor<[?,?,4,8],f32>
    "torch.bind_symbolic_shape"(%133, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 4, 8)>}> {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,?,4,8],f32>, !torch.int, !torch.int) -> ()
    %134 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = "model.layers.0.self_attn"} : () -> !torch.int
    %135 = "torch.prim.ListConstruct"(%3, %5, %134) {torch.module = "model.layers.0.self_attn"} : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %136 = "torch.aten.reshape"(%133, %135) {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,?,4,8],f32>, !torch.list<int>) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%136, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.layers.0.self_attn"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %137 = "torch.constant.none"() {torch.module = "model.layers.0.self_attn.o_proj"} : () -> !torch.none
    %138 = "torch.aten.linear"(%136, %model_layers_0_self_attn_o_proj_weight, %137) {torch.module = "model.layers.0.self_attn.o_proj"} : (!torch.vtensor<[?,?,32],f32>, !torch.vtensor<[32,32],f32>, !torch.none) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%138, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.layers.0.self_attn.o_proj"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %139 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.0"} : () -> !torch.int
    %140 = "torch.aten.add.Tensor"(%18, %138, %139) {torch.module = "model.layers.0"} : (!torch.vtensor<[?,?,32],f32>, !torch.vtensor<[?,?,32],f32>, !torch.int) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%140, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.layers.0"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %141 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = "model.layers.0.post_attention_layernorm"} : () -> !torch.int
    %142 = "torch.aten.pow.Tensor_Scalar"(%140, %141) {torch.module = "model.layers.0.post_attention_layernorm"} : (!torch.vtensor<[?,?,32],f32>, !torch.int) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%142, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.layers.0.post_attention_layernorm"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %143 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = "model.layers.0.post_attention_layernorm"} : () -> !torch.int
    %144 = "torch.prim.ListConstruct"(%143) {torch.module = "model.layers.0.post_attention_layernorm"} : (!torch.int) -> !torch.list<int>
    %145 = "torch.constant.bool"() <{value = true}> {torch.module = "model.layers.0.post_attention_layernorm"} : () -> !torch.bool
    %146 = "torch.constant.none"() {torch.module = "model.layers.0.post_attention_layernorm"} : () -> !torch.none
    %147 = "torch.aten.mean.dim"(%142, %144, %145, %146) {torch.module = "model.layers.0.post_attention_layernorm"} : (!torch.vtensor<[?,?,32],f32>, !torch.list<int>, !torch.bool, !torch.none) -> !torch.vtensor<[?,?,1],f32>
    "torch.bind_symbolic_shape"(%147, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 1)>}> {torch.module = "model.layers.0.post_attention_layernorm"} : (!torch.vtensor<[?,?,1],f32>, !torch.int, !torch.int) -> ()
    %148 = "torch.constant.float"() <{value = 1.000000e-05 : f64}> {torch.module = "model.layers.0.post_attention_layernorm"} : () -> !torch.float
    %149 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.0.post_attention_layernorm"} : () -> !torch.int
    %150 = "torch.aten.add.Scalar"(%147, %148, %149) {torch.module = "model.layers.0.post_attention_layernorm"} : (!torch.vtensor<[?,?,1],f32>, !torch.float, !torch.int) -> !torch.vtensor<[?,?,1],f32>
    "torch.bind_symbolic_shape"(%150, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 1)>}> {torch.module = "model.layers.0.post_attention_layernorm"} : (!torch.vtensor<[?,?,1],f32>, !torch.int, !torch.int) -> ()
    %151 = "torch.aten.rsqrt"(%150) {torch.module = "model.layers.0.post_attention_layernorm"} : (!torch.vtensor<[?,?,1],f32>) -> !torch.vtensor<[?,?,1],f32>
    "torch.bind_symbolic_shape"(%151, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 1)>}> {torch.module = "model.layers.0.post_attention_layernorm"} : (!torch.vtensor<[?,?,1],f32>, !torch.int, !torch.int) -> ()
    %152 = "torch.aten.mul.Tensor"(%140, %151) {torch.module = "model.layers.0.post_attention_layernorm"} : (!torch.vtensor<[?,?,32],f32>, !torch.vtensor<[?,?,1],f32>) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%152, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.layers.0.post_attention_layernorm"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %153 = "torch.aten.mul.Tensor"(%model_layers_0_post_attention_layernorm_weight, %152) {torch.module = "model.layers.0.post_attention_layernorm"} : (!torch.vtensor<[32],f32>, !torch.vtensor<[?,?,32],f32>) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%153, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.layers.0.post_attention_layernorm"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %154 = "torch.constant.none"() {torch.module = "model.layers.0.mlp.gate_proj"} : () -> !torch.none
    %155 = "torch.aten.linear"(%153, %model_layers_0_mlp_gate_proj_weight, %154) {torch.module = "model.layers.0.mlp.gate_proj"} : (!torch.vtensor<[?,?,32],f32>, !torch.vtensor<[48,32],f32>, !torch.none) -> !torch.vtensor<[?,?,48],f32>
    "torch.bind_symbolic_shape"(%155, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 48)>}> {torch.module = "model.layers.0.mlp.gate_proj"} : (!torch.vtensor<[?,?,48],f32>, !torch.int, !torch.int) -> ()
    %156 = "torch.aten.silu"(%155) {torch.module = "model.layers.0.mlp"} : (!torch.vtensor<[?,?,48],f32>) -> !torch.vtensor<[?,?,48],f32>
    "torch.bind_symbolic_shape"(%156, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 48)>}> {torch.module = "model.layers.0.mlp"} : (!torch.vtensor<[?,?,48],f32>, !torch.int, !torch.int) -> ()
    %157 = "torch.constant.none"() {torch.module = "model.layers.0.mlp.up_proj"} : () -> !torch.none
    %158 = "torch.aten.linear"(%153, %model_layers_0_mlp_up_proj_weight, %157) {torch.module = "model.layers.0.mlp.up_proj"} : (!torch.vtensor<[?,?,32],f32>, !torch.vtensor<[48,32],f32>, !torch.none) -> !torch.vtensor<[?,?,48],f32>
    "torch.bind_symbolic_shape"(%158, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 48)>}> {torch.module = "model.layers.0.mlp.up_proj"} : (!torch.vtensor<[?,?,48],f32>, !torch.int, !torch.int) -> ()
    %159 = "torch.aten.mul.Tensor"(%156, %158) {torch.module = "model.layers.0.mlp"} : (!torch.vtensor<[?,?,48],f32>, !torch.vtensor<[?,?,48],f32>) -> !torch.vtensor<[?,?,48],f32>
    "torch.bind_symbolic_shape"(%159, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 48)>}> {torch.module = "model.layers.0.mlp"} : (!torch.vtensor<[?,?,48],f32>, !torch.int, !torch.int) -> ()
    %160 = "torch.constant.none"() {torch.module = "model.layers.0.mlp.down_proj"} : () -> !torch.none
    %161 = "torch.aten.linear"(%159, %model_layers_0_mlp_down_proj_weight, %160) {torch.module = "model.layers.0.mlp.down_proj"} : (!torch.vtensor<[?,?,48],f32>, !torch.vtensor<[32,48],f32>, !torch.none) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%161, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.layers.0.mlp.down_proj"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %162 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.0"} : () -> !torch.int
    %163 = "torch.aten.add.Tensor"(%140, %161, %162) {torch.module = "model.layers.0"} : (!torch.vtensor<[?,?,32],f32>, !torch.vtensor<[?,?,32],f32>, !torch.int) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%163, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.layers.0"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %164 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = "model.layers.1.input_layernorm"} : () -> !torch.int
    %165 = "torch.aten.pow.Tensor_Scalar"(%163, %164) {torch.module = "model.layers.1.input_layernorm"} : (!torch.vtensor<[?,?,32],f32>, !torch.int) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%165, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.layers.1.input_layernorm"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %166 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = "model.layers.1.input_layernorm"} : () -> !torch.int
    %167 = "torch.prim.ListConstruct"(%166) {torch.module = "model.layers.1.input_layernorm"} : (!torch.int) -> !torch.list<int>
    %168 = "torch.constant.bool"() <{value = true}> {torch.module = "model.layers.1.input_layernorm"} : () -> !torch.bool
    %169 = "torch.constant.none"() {torch.module = "model.layers.1.input_layernorm"} : () -> !torch.none
    %170 = "torch.aten.mean.dim"(%165, %167, %168, %169) {torch.module = "model.layers.1.input_layernorm"} : (!torch.vtensor<[?,?,32],f32>, !torch.list<int>, !torch.bool, !torch.none) -> !torch.vtensor<[?,?,1],f32>
    "torch.bind_symbolic_shape"(%170, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 1)>}> {torch.module = "model.layers.1.input_layernorm"} : (!torch.vtensor<[?,?,1],f32>, !torch.int, !torch.int) -> ()
    %171 = "torch.constant.float"() <{value = 1.000000e-05 : f64}> {torch.module = "model.layers.1.input_layernorm"} : () -> !torch.float
    %172 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.1.input_layernorm"} : () -> !torch.int
    %173 = "torch.aten.add.Scalar"(%170, %171, %172) {torch.module = "model.layers.1.input_layernorm"} : (!torch.vtensor<[?,?,1],f32>, !torch.float, !torch.int) -> !torch.vtensor<[?,?,1],f32>
    "torch.bind_symbolic_shape"(%173, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 1)>}> {torch.module = "model.layers.1.input_layernorm"} : (!torch.vtensor<[?,?,1],f32>, !torch.int, !torch.int) -> ()
    %174 = "torch.aten.rsqrt"(%173) {torch.module = "model.layers.1.input_layernorm"} : (!torch.vtensor<[?,?,1],f32>) -> !torch.vtensor<[?,?,1],f32>
    "torch.bind_symbolic_shape"(%174, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 1)>}> {torch.module = "model.layers.1.input_layernorm"} : (!torch.vtensor<[?,?,1],f32>, !torch.int, !torch.int) -> ()
    %175 = "torch.aten.mul.Tensor"(%163, %174) {torch.module = "model.layers.1.input_layernorm"} : (!torch.vtensor<[?,?,32],f32>, !torch.vtensor<[?,?,1],f32>) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%175, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.layers.1.input_layernorm"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %176 = "torch.aten.mul.Tensor"(%model_layers_1_input_layernorm_weight, %175) {torch.module = "model.layers.1.input_layernorm"} : (!torch.vtensor<[32],f32>, !torch.vtensor<[?,?,32],f32>) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%176, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.layers.1.input_layernorm"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %177 = "torch.constant.none"() {torch.module = "model.layers.1.self_attn.q_proj"} : () -> !torch.none
    %178 = "torch.aten.linear"(%176, %model_layers_1_self_attn_q_proj_weight, %177) {torch.module = "model.layers.1.self_attn.q_proj"} : (!torch.vtensor<[?,?,32],f32>, !torch.vtensor<[32,32],f32>, !torch.none) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%178, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.layers.1.self_attn.q_proj"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %179 = "torch.constant.int"() <{value = 4 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %180 = "torch.constant.int"() <{value = 8 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %181 = "torch.prim.ListConstruct"(%3, %5, %179, %180) {torch.module = "model.layers.1.self_attn"} : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %182 = "torch.aten.view"(%178, %181) {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,?,32],f32>, !torch.list<int>) -> !torch.vtensor<[?,?,4,8],f32>
    "torch.bind_symbolic_shape"(%182, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 4, 8)>}> {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,?,4,8],f32>, !torch.int, !torch.int) -> ()
    %183 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %184 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %185 = "torch.aten.transpose.int"(%182, %183, %184) {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,?,4,8],f32>, !torch.int, !torch.int) -> !torch.vtensor<[?,4,?,8],f32>
    "torch.bind_symbolic_shape"(%185, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 8)>}> {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int) -> ()
    %186 = "torch.constant.none"() {torch.module = "model.layers.1.self_attn.k_proj"} : () -> !torch.none
    %187 = "torch.aten.linear"(%176, %model_layers_1_self_attn_k_proj_weight, %186) {torch.module = "model.layers.1.self_attn.k_proj"} : (!torch.vtensor<[?,?,32],f32>, !torch.vtensor<[16,32],f32>, !torch.none) -> !torch.vtensor<[?,?,16],f32>
    "torch.bind_symbolic_shape"(%187, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 16)>}> {torch.module = "model.layers.1.self_attn.k_proj"} : (!torch.vtensor<[?,?,16],f32>, !torch.int, !torch.int) -> ()
    %188 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %189 = "torch.constant.int"() <{value = 8 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %190 = "torch.prim.ListConstruct"(%3, %5, %188, %189) {torch.module = "model.layers.1.self_attn"} : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %191 = "torch.aten.view"(%187, %190) {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,?,16],f32>, !torch.list<int>) -> !torch.vtensor<[?,?,2,8],f32>
    "torch.bind_symbolic_shape"(%191, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 2, 8)>}> {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,?,2,8],f32>, !torch.int, !torch.int) -> ()
    %192 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %193 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %194 = "torch.aten.transpose.int"(%191, %192, %193) {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,?,2,8],f32>, !torch.int, !torch.int) -> !torch.vtensor<[?,2,?,8],f32>
    "torch.bind_symbolic_shape"(%194, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 2, s0, 8)>}> {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,2,?,8],f32>, !torch.int, !torch.int) -> ()
    %195 = "torch.constant.none"() {torch.module = "model.layers.1.self_attn.v_proj"} : () -> !torch.none
    %196 = "torch.aten.linear"(%176, %model_layers_1_self_attn_v_proj_weight, %195) {torch.module = "model.layers.1.self_attn.v_proj"} : (!torch.vtensor<[?,?,32],f32>, !torch.vtensor<[16,32],f32>, !torch.none) -> !torch.vtensor<[?,?,16],f32>
    "torch.bind_symbolic_shape"(%196, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 16)>}> {torch.module = "model.layers.1.self_attn.v_proj"} : (!torch.vtensor<[?,?,16],f32>, !torch.int, !torch.int) -> ()
    %197 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %198 = "torch.constant.int"() <{value = 8 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %199 = "torch.prim.ListConstruct"(%3, %5, %197, %198) {torch.module = "model.layers.1.self_attn"} : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %200 = "torch.aten.view"(%196, %199) {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,?,16],f32>, !torch.list<int>) -> !torch.vtensor<[?,?,2,8],f32>
    "torch.bind_symbolic_shape"(%200, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 2, 8)>}> {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,?,2,8],f32>, !torch.int, !torch.int) -> ()
    %201 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %202 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %203 = "torch.aten.transpose.int"(%200, %201, %202) {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,?,2,8],f32>, !torch.int, !torch.int) -> !torch.vtensor<[?,2,?,8],f32>
    "torch.bind_symbolic_shape"(%203, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 2, s0, 8)>}> {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,2,?,8],f32>, !torch.int, !torch.int) -> ()
    %204 = "torch.aten.mul.Tensor"(%185, %33) {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,4,?,8],f32>, !torch.vtensor<[1,1,?,8],f32>) -> !torch.vtensor<[?,4,?,8],f32>
    "torch.bind_symbolic_shape"(%204, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 8)>}> {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int) -> ()
    %205 = "torch.constant.int"() <{value = 3 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %206 = "torch.constant.int"() <{value = 4 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %207 = "torch.constant.int"() <{value = 9223372036854775807 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %208 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %209 = "torch.aten.slice.Tensor"(%185, %205, %206, %207, %208) {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int, !torch.int, !torch.int) -> !torch.vtensor<[?,4,?,4],f32>
    "torch.bind_symbolic_shape"(%209, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 4)>}> {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,4,?,4],f32>, !torch.int, !torch.int) -> ()
    %210 = "torch.aten.neg"(%209) {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,4,?,4],f32>) -> !torch.vtensor<[?,4,?,4],f32>
    "torch.bind_symbolic_shape"(%210, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 4)>}> {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,4,?,4],f32>, !torch.int, !torch.int) -> ()
    %211 = "torch.constant.int"() <{value = 3 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %212 = "torch.constant.int"() <{value = 0 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %213 = "torch.constant.int"() <{value = 4 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %214 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %215 = "torch.aten.slice.Tensor"(%185, %211, %212, %213, %214) {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int, !torch.int, !torch.int) -> !torch.vtensor<[?,4,?,4],f32>
    "torch.bind_symbolic_shape"(%215, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 4)>}> {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,4,?,4],f32>, !torch.int, !torch.int) -> ()
    %216 = "torch.prim.ListConstruct"(%210, %215) {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,4,?,4],f32>, !torch.vtensor<[?,4,?,4],f32>) -> !torch.list<vtensor>
    %217 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %218 = "torch.aten.cat"(%216, %217) {torch.module = "model.layers.1.self_attn"} : (!torch.list<vtensor>, !torch.int) -> !torch.vtensor<[?,4,?,8],f32>
    "torch.bind_symbolic_shape"(%218, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 8)>}> {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int) -> ()
    %219 = "torch.aten.mul.Tensor"(%218, %48) {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,4,?,8],f32>, !torch.vtensor<[1,1,?,8],f32>) -> !torch.vtensor<[?,4,?,8],f32>
    "torch.bind_symbolic_shape"(%219, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 8)>}> {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int) -> ()
    %220 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %221 = "torch.aten.add.Tensor"(%204, %219, %220) {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,4,?,8],f32>, !torch.vtensor<[?,4,?,8],f32>, !torch.int) -> !torch.vtensor<[?,4,?,8],f32>
    "torch.bind_symbolic_shape"(%221, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 8)>}> {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int) -> ()
    %222 = "torch.aten.mul.Tensor"(%194, %33) {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,2,?,8],f32>, !torch.vtensor<[1,1,?,8],f32>) -> !torch.vtensor<[?,2,?,8],f32>
    "torch.bind_symbolic_shape"(%222, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 2, s0, 8)>}> {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,2,?,8],f32>, !torch.int, !torch.int) -> ()
    %223 = "torch.constant.int"() <{value = 3 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %224 = "torch.constant.int"() <{value = 4 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %225 = "torch.constant.int"() <{value = 9223372036854775807 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %226 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %227 = "torch.aten.slice.Tensor"(%194, %223, %224, %225, %226) {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,2,?,8],f32>, !torch.int, !torch.int, !torch.int, !torch.int) -> !torch.vtensor<[?,2,?,4],f32>
    "torch.bind_symbolic_shape"(%227, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 2, s0, 4)>}> {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,2,?,4],f32>, !torch.int, !torch.int) -> ()
    %228 = "torch.aten.neg"(%227) {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,2,?,4],f32>) -> !torch.vtensor<[?,2,?,4],f32>
    "torch.bind_symbolic_shape"(%228, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 2, s0, 4)>}> {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,2,?,4],f32>, !torch.int, !torch.int) -> ()
    %229 = "torch.constant.int"() <{value = 3 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %230 = "torch.constant.int"() <{value = 0 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %231 = "torch.constant.int"() <{value = 4 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %232 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %233 = "torch.aten.slice.Tensor"(%194, %229, %230, %231, %232) {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,2,?,8],f32>, !torch.int, !torch.int, !torch.int, !torch.int) -> !torch.vtensor<[?,2,?,4],f32>
    "torch.bind_symbolic_shape"(%233, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 2, s0, 4)>}> {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,2,?,4],f32>, !torch.int, !torch.int) -> ()
    %234 = "torch.prim.ListConstruct"(%228, %233) {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,2,?,4],f32>, !torch.vtensor<[?,2,?,4],f32>) -> !torch.list<vtensor>
    %235 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %236 = "torch.aten.cat"(%234, %235) {torch.module = "model.layers.1.self_attn"} : (!torch.list<vtensor>, !torch.int) -> !torch.vtensor<[?,2,?,8],f32>
    "torch.bind_symbolic_shape"(%236, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 2, s0, 8)>}> {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,2,?,8],f32>, !torch.int, !torch.int) -> ()
    %237 = "torch.aten.mul.Tensor"(%236, %48) {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,2,?,8],f32>, !torch.vtensor<[1,1,?,8],f32>) -> !torch.vtensor<[?,2,?,8],f32>
    "torch.bind_symbolic_shape"(%237, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 2, s0, 8)>}> {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,2,?,8],f32>, !torch.int, !torch.int) -> ()
    %238 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %239 = "torch.aten.add.Tensor"(%222, %237, %238) {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,2,?,8],f32>, !torch.vtensor<[?,2,?,8],f32>, !torch.int) -> !torch.vtensor<[?,2,?,8],f32>
    "torch.bind_symbolic_shape"(%239, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 2, s0, 8)>}> {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,2,?,8],f32>, !torch.int, !torch.int) -> ()
    %240 = "torch.constant.none"() {torch.module = "model.layers.1.self_attn"} : () -> !torch.none
    %241 = "torch.constant.float"() <{value = 0.000000e+00 : f64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.float
    %242 = "torch.constant.bool"() <{value = true}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.bool
    %243 = "torch.constant.none"() {torch.module = "model.layers.1.self_attn"} : () -> !torch.none
    %244 = "torch.constant.bool"() <{value = true}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.bool
    %245 = "torch.aten.scaled_dot_product_attention"(%221, %239, %203, %240, %241, %242, %243, %244) {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,4,?,8],f32>, !torch.vtensor<[?,2,?,8],f32>, !torch.vtensor<[?,2,?,8],f32>, !torch.none, !torch.float, !torch.bool, !torch.none, !torch.bool) -> !torch.vtensor<[?,4,?,8],f32>
    "torch.bind_symbolic_shape"(%245, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, 4, s0, 8)>}> {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int) -> ()
    %246 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %247 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %248 = "torch.aten.transpose.int"(%245, %246, %247) {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,4,?,8],f32>, !torch.int, !torch.int) -> !torch.vtensor<[?,?,4,8],f32>
    "torch.bind_symbolic_shape"(%248, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 4, 8)>}> {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,?,4,8],f32>, !torch.int, !torch.int) -> ()
    %249 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = "model.layers.1.self_attn"} : () -> !torch.int
    %250 = "torch.prim.ListConstruct"(%3, %5, %249) {torch.module = "model.layers.1.self_attn"} : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %251 = "torch.aten.reshape"(%248, %250) {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,?,4,8],f32>, !torch.list<int>) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%251, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.layers.1.self_attn"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %252 = "torch.constant.none"() {torch.module = "model.layers.1.self_attn.o_proj"} : () -> !torch.none
    %253 = "torch.aten.linear"(%251, %model_layers_1_self_attn_o_proj_weight, %252) {torch.module = "model.layers.1.self_attn.o_proj"} : (!torch.vtensor<[?,?,32],f32>, !torch.vtensor<[32,32],f32>, !torch.none) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%253, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.layers.1.self_attn.o_proj"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %254 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.1"} : () -> !torch.int
    %255 = "torch.aten.add.Tensor"(%163, %253, %254) {torch.module = "model.layers.1"} : (!torch.vtensor<[?,?,32],f32>, !torch.vtensor<[?,?,32],f32>, !torch.int) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%255, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.layers.1"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %256 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = "model.layers.1.post_attention_layernorm"} : () -> !torch.int
    %257 = "torch.aten.pow.Tensor_Scalar"(%255, %256) {torch.module = "model.layers.1.post_attention_layernorm"} : (!torch.vtensor<[?,?,32],f32>, !torch.int) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%257, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.layers.1.post_attention_layernorm"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %258 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = "model.layers.1.post_attention_layernorm"} : () -> !torch.int
    %259 = "torch.prim.ListConstruct"(%258) {torch.module = "model.layers.1.post_attention_layernorm"} : (!torch.int) -> !torch.list<int>
    %260 = "torch.constant.bool"() <{value = true}> {torch.module = "model.layers.1.post_attention_layernorm"} : () -> !torch.bool
    %261 = "torch.constant.none"() {torch.module = "model.layers.1.post_attention_layernorm"} : () -> !torch.none
    %262 = "torch.aten.mean.dim"(%257, %259, %260, %261) {torch.module = "model.layers.1.post_attention_layernorm"} : (!torch.vtensor<[?,?,32],f32>, !torch.list<int>, !torch.bool, !torch.none) -> !torch.vtensor<[?,?,1],f32>
    "torch.bind_symbolic_shape"(%262, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 1)>}> {torch.module = "model.layers.1.post_attention_layernorm"} : (!torch.vtensor<[?,?,1],f32>, !torch.int, !torch.int) -> ()
    %263 = "torch.constant.float"() <{value = 1.000000e-05 : f64}> {torch.module = "model.layers.1.post_attention_layernorm"} : () -> !torch.float
    %264 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.1.post_attention_layernorm"} : () -> !torch.int
    %265 = "torch.aten.add.Scalar"(%262, %263, %264) {torch.module = "model.layers.1.post_attention_layernorm"} : (!torch.vtensor<[?,?,1],f32>, !torch.float, !torch.int) -> !torch.vtensor<[?,?,1],f32>
    "torch.bind_symbolic_shape"(%265, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 1)>}> {torch.module = "model.layers.1.post_attention_layernorm"} : (!torch.vtensor<[?,?,1],f32>, !torch.int, !torch.int) -> ()
    %266 = "torch.aten.rsqrt"(%265) {torch.module = "model.layers.1.post_attention_layernorm"} : (!torch.vtensor<[?,?,1],f32>) -> !torch.vtensor<[?,?,1],f32>
    "torch.bind_symbolic_shape"(%266, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 1)>}> {torch.module = "model.layers.1.post_attention_layernorm"} : (!torch.vtensor<[?,?,1],f32>, !torch.int, !torch.int) -> ()
    %267 = "torch.aten.mul.Tensor"(%255, %266) {torch.module = "model.layers.1.post_attention_layernorm"} : (!torch.vtensor<[?,?,32],f32>, !torch.vtensor<[?,?,1],f32>) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%267, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.layers.1.post_attention_layernorm"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %268 = "torch.aten.mul.Tensor"(%model_layers_1_post_attention_layernorm_weight, %267) {torch.module = "model.layers.1.post_attention_layernorm"} : (!torch.vtensor<[32],f32>, !torch.vtensor<[?,?,32],f32>) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%268, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.layers.1.post_attention_layernorm"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %269 = "torch.constant.none"() {torch.module = "model.layers.1.mlp.gate_proj"} : () -> !torch.none
    %270 = "torch.aten.linear"(%268, %model_layers_1_mlp_gate_proj_weight, %269) {torch.module = "model.layers.1.mlp.gate_proj"} : (!torch.vtensor<[?,?,32],f32>, !torch.vtensor<[48,32],f32>, !torch.none) -> !torch.vtensor<[?,?,48],f32>
    "torch.bind_symbolic_shape"(%270, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 48)>}> {torch.module = "model.layers.1.mlp.gate_proj"} : (!torch.vtensor<[?,?,48],f32>, !torch.int, !torch.int) -> ()
    %271 = "torch.aten.silu"(%270) {torch.module = "model.layers.1.mlp"} : (!torch.vtensor<[?,?,48],f32>) -> !torch.vtensor<[?,?,48],f32>
    "torch.bind_symbolic_shape"(%271, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 48)>}> {torch.module = "model.layers.1.mlp"} : (!torch.vtensor<[?,?,48],f32>, !torch.int, !torch.int) -> ()
    %272 = "torch.constant.none"() {torch.module = "model.layers.1.mlp.up_proj"} : () -> !torch.none
    %273 = "torch.aten.linear"(%268, %model_layers_1_mlp_up_proj_weight, %272) {torch.module = "model.layers.1.mlp.up_proj"} : (!torch.vtensor<[?,?,32],f32>, !torch.vtensor<[48,32],f32>, !torch.none) -> !torch.vtensor<[?,?,48],f32>
    "torch.bind_symbolic_shape"(%273, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 48)>}> {torch.module = "model.layers.1.mlp.up_proj"} : (!torch.vtensor<[?,?,48],f32>, !torch.int, !torch.int) -> ()
    %274 = "torch.aten.mul.Tensor"(%271, %273) {torch.module = "model.layers.1.mlp"} : (!torch.vtensor<[?,?,48],f32>, !torch.vtensor<[?,?,48],f32>) -> !torch.vtensor<[?,?,48],f32>
    "torch.bind_symbolic_shape"(%274, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 48)>}> {torch.module = "model.layers.1.mlp"} : (!torch.vtensor<[?,?,48],f32>, !torch.int, !torch.int) -> ()
    %275 = "torch.constant.none"() {torch.module = "model.layers.1.mlp.down_proj"} : () -> !torch.none
    %276 = "torch.aten.linear"(%274, %model_layers_1_mlp_down_proj_weight, %275) {torch.module = "model.layers.1.mlp.down_proj"} : (!torch.vtensor<[?,?,48],f32>, !torch.vtensor<[32,48],f32>, !torch.none) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%276, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.layers.1.mlp.down_proj"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %277 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.layers.1"} : () -> !torch.int
    %278 = "torch.aten.add.Tensor"(%255, %276, %277) {torch.module = "model.layers.1"} : (!torch.vtensor<[?,?,32],f32>, !torch.vtensor<[?,?,32],f32>, !torch.int) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%278, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.layers.1"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %279 = "torch.constant.int"() <{value = 2 : i64}> {torch.module = "model.norm"} : () -> !torch.int
    %280 = "torch.aten.pow.Tensor_Scalar"(%278, %279) {torch.module = "model.norm"} : (!torch.vtensor<[?,?,32],f32>, !torch.int) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%280, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.norm"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %281 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = "model.norm"} : () -> !torch.int
    %282 = "torch.prim.ListConstruct"(%281) {torch.module = "model.norm"} : (!torch.int) -> !torch.list<int>
    %283 = "torch.constant.bool"() <{value = true}> {torch.module = "model.norm"} : () -> !torch.bool
    %284 = "torch.constant.none"() {torch.module = "model.norm"} : () -> !torch.none
    %285 = "torch.aten.mean.dim"(%280, %282, %283, %284) {torch.module = "model.norm"} : (!torch.vtensor<[?,?,32],f32>, !torch.list<int>, !torch.bool, !torch.none) -> !torch.vtensor<[?,?,1],f32>
    "torch.bind_symbolic_shape"(%285, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 1)>}> {torch.module = "model.norm"} : (!torch.vtensor<[?,?,1],f32>, !torch.int, !torch.int) -> ()
    %286 = "torch.constant.float"() <{value = 1.000000e-05 : f64}> {torch.module = "model.norm"} : () -> !torch.float
    %287 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = "model.norm"} : () -> !torch.int
    %288 = "torch.aten.add.Scalar"(%285, %286, %287) {torch.module = "model.norm"} : (!torch.vtensor<[?,?,1],f32>, !torch.float, !torch.int) -> !torch.vtensor<[?,?,1],f32>
    "torch.bind_symbolic_shape"(%288, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 1)>}> {torch.module = "model.norm"} : (!torch.vtensor<[?,?,1],f32>, !torch.int, !torch.int) -> ()
    %289 = "torch.aten.rsqrt"(%288) {torch.module = "model.norm"} : (!torch.vtensor<[?,?,1],f32>) -> !torch.vtensor<[?,?,1],f32>
    "torch.bind_symbolic_shape"(%289, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 1)>}> {torch.module = "model.norm"} : (!torch.vtensor<[?,?,1],f32>, !torch.int, !torch.int) -> ()
    %290 = "torch.aten.mul.Tensor"(%278, %289) {torch.module = "model.norm"} : (!torch.vtensor<[?,?,32],f32>, !torch.vtensor<[?,?,1],f32>) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%290, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.norm"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %291 = "torch.aten.mul.Tensor"(%model_norm_weight, %290) {torch.module = "model.norm"} : (!torch.vtensor<[32],f32>, !torch.vtensor<[?,?,32],f32>) -> !torch.vtensor<[?,?,32],f32>
    "torch.bind_symbolic_shape"(%291, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 32)>}> {torch.module = "model.norm"} : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %292 = "torch.constant.none"() {torch.module = "lm_head"} : () -> !torch.none
    %293 = "torch.aten.linear"(%291, %lm_head_weight, %292) {torch.module = "lm_head"} : (!torch.vtensor<[?,?,32],f32>, !torch.vtensor<[64,32],f32>, !torch.none) -> !torch.vtensor<[?,?,64],f32>
    "torch.bind_symbolic_shape"(%293, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 64)>}> {torch.module = "lm_head"} : (!torch.vtensor<[?,?,64],f32>, !torch.int, !torch.int) -> ()
    %294 = "torch.constant.int"() <{value = 6 : i64}> {torch.module = ""} : () -> !torch.int
    %295 = "torch.constant.int"() <{value = 6 : i64}> {torch.module = ""} : () -> !torch.int
    %296 = "torch.operator"(%294, %295) <{name = "torch.aten.promote_types"}> {torch.module = ""} : (!torch.int, !torch.int) -> !torch.none
    %297 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %298 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %299 = "torch.constant.int"() <{value = 6 : i64}> {torch.module = ""} : () -> !torch.int
    %300 = "torch.constant.device"() <{value = "cpu"}> {torch.module = ""} : () -> !torch.Device
    %301 = "torch.constant.int"() <{value = 0 : i64}> {torch.module = ""} : () -> !torch.int
    "torch.aten._assert_tensor_metadata"(%293, %297, %298, %299, %300, %301) {torch.module = ""} : (!torch.vtensor<[?,?,64],f32>, !torch.none, !torch.none, !torch.int, !torch.Device, !torch.int) -> ()
    %302 = "torch.constant.int"() <{value = 6 : i64}> {torch.module = ""} : () -> !torch.int
    %303 = "torch.constant.bool"() <{value = false}> {torch.module = ""} : () -> !torch.bool
    %304 = "torch.constant.bool"() <{value = false}> {torch.module = ""} : () -> !torch.bool
    %305 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %306 = "torch.aten.to.dtype"(%293, %302, %303, %304, %305) {torch.module = ""} : (!torch.vtensor<[?,?,64],f32>, !torch.int, !torch.bool, !torch.bool, !torch.none) -> !torch.vtensor<[?,?,64],f32>
    "torch.bind_symbolic_shape"(%306, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0, 64)>}> {torch.module = ""} : (!torch.vtensor<[?,?,64],f32>, !torch.int, !torch.int) -> ()
    %307 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = ""} : () -> !torch.int
    %308 = "torch.constant.int"() <{value = 64 : i64}> {torch.module = ""} : () -> !torch.int
    %309 = "torch.prim.ListConstruct"(%307, %308) {torch.module = ""} : (!torch.int, !torch.int) -> !torch.list<int>
    %310 = "torch.aten.view"(%306, %309) {torch.module = ""} : (!torch.vtensor<[?,?,64],f32>, !torch.list<int>) -> !torch.vtensor<[?,64],f32>
    "torch.bind_symbolic_shape"(%310, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> ((s0 * s1), 64)>}> {torch.module = ""} : (!torch.vtensor<[?,64],f32>, !torch.int, !torch.int) -> ()
    %311 = "torch.constant.int"() <{value = -1 : i64}> {torch.module = ""} : () -> !torch.int
    %312 = "torch.prim.ListConstruct"(%311) {torch.module = ""} : (!torch.int) -> !torch.list<int>
    %313 = "torch.aten.view"(%labels, %312) {torch.module = ""} : (!torch.vtensor<[?,?],si64>, !torch.list<int>) -> !torch.vtensor<[?],si64>
    "torch.bind_symbolic_shape"(%313, %1, %0) <{shape_expressions = affine_map<()[s0, s1] -> ((s0 * s1))>}> {torch.module = ""} : (!torch.vtensor<[?],si64>, !torch.int, !torch.int) -> ()
    %314 = "torch.constant.none"() {torch.module = ""} : () -> !torch.none
    %315 = "torch.constant.int"() <{value = 1 : i64}> {torch.module = ""} : () -> !torch.int
    %316 = "torch.constant.int"() <{value = -100 : i64}> {torch.module = ""} : () -> !torch.int
    %317 = "torch.constant.float"() <{value = 0.000000e+00 : f64}> {torch.module = ""} : () -> !torch.float
    %318 = "torch.aten.cross_entropy_loss"(%310, %313, %314, %315, %316, %317) {torch.module = ""} : (!torch.vtensor<[?,64],f32>, !torch.vtensor<[?],si64>, !torch.none, !torch.int, !torch.int, !torch.float) -> !torch.vtensor<[],f32>
    func.return %318 : !torch.vtensor<[],f32>
  }
}
