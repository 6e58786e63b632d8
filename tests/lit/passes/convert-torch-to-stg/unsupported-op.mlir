// An op no pattern maps is an error naming the op, its source line and the nn.Module
// path it ran in - never a silent drop (Inputs/make_inputs.py: a cumsum inside the
// `scan` submodule, on the way from the input to the result).
// RUN: not stagec-opt %S/Inputs/unsupported.torch.mlir --pass-pipeline='builtin.module(convert-torch-to-stg)' 2>&1 | filecheck %s

// CHECK: unsupported.torch.mlir:10:10: error: pass 'convert-torch-to-stg' failed: cannot convert 'torch.aten.cumsum' at make_inputs.py:{{[0-9]+}} in module 'scan': convert-torch-to-stg has no pattern for this op
