// torch-mlir's symbolic shapes parse and print back: torch.symbolic_int values and
// torch.bind_symbolic_shape maps, including the semi-affine `s0 * s1` of a flattened
// batch x sequence that xDSL's affine parser alone refuses. The body is torch-mlir's
// FX import (import_symbolic_shape_expressions=True) of a small Llama-style LM head and
// loss, `F.cross_entropy(lm_head(h).view(-1, 64).float(), labels.view(-1))`, with the
// weight a function argument as stagec's import lifts it.
// RUN: stagec-opt %s | filecheck %s
// RUN: stagec-opt %s | stagec-opt | filecheck %s
// RUN: stagec-opt %s --print-op-generic | torch-mlir-opt --mlir-print-op-generic | stagec-opt | filecheck %s

// CHECK:      %[[S72:.*]] = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "s72"}> : () -> !torch.int
// CHECK-NEXT: %[[S38:.*]] = "torch.symbolic_int"() <{{.*}}symbol_name = "s38"}>
// CHECK:      "torch.bind_symbolic_shape"(%arg1, %[[S38]], %[[S72]]) <{shape_expressions = affine_map<()[s0, s1] -> (s1, s0)>}>
// CHECK:      %{{.*}} = "torch.aten.view"(%{{.*}}, %{{.*}}) : (!torch.vtensor<[?,?,64],f32>, !torch.list<int>) -> !torch.vtensor<[?,64],f32>
// CHECK-NEXT: "torch.bind_symbolic_shape"(%{{.*}}, %[[S38]], %[[S72]]) <{shape_expressions = affine_map<()[s0, s1] -> ((s0 * s1), 64)>}> : (!torch.vtensor<[?,64],f32>, !torch.int, !torch.int) -> ()
// CHECK:      "torch.bind_symbolic_shape"(%{{.*}}, %[[S38]], %[[S72]]) <{shape_expressions = affine_map<()[s0, s1] -> ((s0 * s1))>}> : (!torch.vtensor<[?],si64>, !torch.int, !torch.int) -> ()
// CHECK:      %{{.*}} = "torch.aten.cross_entropy_loss"

#map = affine_map<()[s0, s1] -> (s1, s0)>
#map6 = affine_map<()[s0, s1] -> (s1, s0, 32)>
#map16 = affine_map<()[s0, s1] -> (s1, s0, 64)>
#map17 = affine_map<()[s0, s1] -> (s0 * s1, 64)>
#map18 = affine_map<()[s0, s1] -> (s0 * s1)>
"builtin.module"() ({
  "func.func"() <{function_type = (!torch.vtensor<[64,32],f32>, !torch.vtensor<[?,?],si64>, !torch.vtensor<[?,?,32],f32>) -> !torch.vtensor<[],f32>, sym_name = "main"}> ({
  ^bb0(%arg0: !torch.vtensor<[64,32],f32>, %arg1: !torch.vtensor<[?,?],si64>, %h: !torch.vtensor<[?,?,32],f32>):
    %0 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "s72"}> : () -> !torch.int
    %1 = "torch.symbolic_int"() <{max_val = 9223372036854775807 : i64, min_val = 0 : i64, symbol_name = "s38"}> : () -> !torch.int
    "torch.bind_symbolic_shape"(%arg1, %1, %0) <{shape_expressions = #map}> : (!torch.vtensor<[?,?],si64>, !torch.int, !torch.int) -> ()
    "torch.bind_symbolic_shape"(%h, %1, %0) <{shape_expressions = #map6}> : (!torch.vtensor<[?,?,32],f32>, !torch.int, !torch.int) -> ()
    %294 = "torch.constant.none"() : () -> !torch.none
    %295 = "torch.aten.linear"(%h, %arg0, %294) : (!torch.vtensor<[?,?,32],f32>, !torch.vtensor<[64,32],f32>, !torch.none) -> !torch.vtensor<[?,?,64],f32>
    "torch.bind_symbolic_shape"(%295, %1, %0) <{shape_expressions = #map16}> : (!torch.vtensor<[?,?,64],f32>, !torch.int, !torch.int) -> ()
    %296 = "torch.constant.int"() <{value = -1 : i64}> : () -> !torch.int
    %297 = "torch.constant.int"() <{value = 64 : i64}> : () -> !torch.int
    %298 = "torch.prim.ListConstruct"(%296, %297) : (!torch.int, !torch.int) -> !torch.list<int>
    %299 = "torch.aten.view"(%295, %298) : (!torch.vtensor<[?,?,64],f32>, !torch.list<int>) -> !torch.vtensor<[?,64],f32>
    "torch.bind_symbolic_shape"(%299, %1, %0) <{shape_expressions = #map17}> : (!torch.vtensor<[?,64],f32>, !torch.int, !torch.int) -> ()
    %305 = "torch.constant.int"() <{value = 6 : i64}> : () -> !torch.int
    %306 = "torch.constant.bool"() <{value = false}> : () -> !torch.bool
    %307 = "torch.constant.bool"() <{value = false}> : () -> !torch.bool
    %308 = "torch.constant.none"() : () -> !torch.none
    %309 = "torch.aten.to.dtype"(%299, %305, %306, %307, %308) : (!torch.vtensor<[?,64],f32>, !torch.int, !torch.bool, !torch.bool, !torch.none) -> !torch.vtensor<[?,64],f32>
    "torch.bind_symbolic_shape"(%309, %1, %0) <{shape_expressions = #map17}> : (!torch.vtensor<[?,64],f32>, !torch.int, !torch.int) -> ()
    %310 = "torch.constant.int"() <{value = -1 : i64}> : () -> !torch.int
    %311 = "torch.prim.ListConstruct"(%310) : (!torch.int) -> !torch.list<int>
    %312 = "torch.aten.view"(%arg1, %311) : (!torch.vtensor<[?,?],si64>, !torch.list<int>) -> !torch.vtensor<[?],si64>
    "torch.bind_symbolic_shape"(%312, %1, %0) <{shape_expressions = #map18}> : (!torch.vtensor<[?],si64>, !torch.int, !torch.int) -> ()
    %313 = "torch.constant.none"() : () -> !torch.none
    %314 = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
    %315 = "torch.constant.int"() <{value = -100 : i64}> : () -> !torch.int
    %316 = "torch.constant.float"() <{value = 0.000000e+00 : f64}> : () -> !torch.float
    %317 = "torch.aten.cross_entropy_loss"(%309, %312, %313, %314, %315, %316) : (!torch.vtensor<[?,64],f32>, !torch.vtensor<[?],si64>, !torch.none, !torch.int, !torch.int, !torch.float) -> !torch.vtensor<[],f32>
    "func.return"(%317) : (!torch.vtensor<[],f32>) -> ()
  }) {torch.assume_strict_symbolic_shapes} : () -> ()
}) : () -> ()
