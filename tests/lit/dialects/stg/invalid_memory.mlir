// RUN: stagec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Memory ops: release, offload, reload and wait.

// An async transfer returns a token ...
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], bf16>) {
  %h = stg.offload %x async : !stg.tensor<[B/dp, H], bf16> -> !stg.host<[B/dp, H], bf16>
  func.return
}

// CHECK: 'stg.offload': an async transfer returns a !stg.token, a synchronous one a tensor

// -----

// ... a synchronous one a tensor.
stg.mesh @m [dp, tp]
func.func @f(%h: !stg.host<[B/dp, H], bf16>) {
  %x = stg.reload %h : !stg.host<[B/dp, H], bf16> -> !stg.token<!stg.tensor<[B/dp, H], bf16>>
  func.return
}

// CHECK: 'stg.reload': an async transfer returns a !stg.token, a synchronous one a tensor

// -----

// A transfer keeps the layout: split ...
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], bf16>) {
  %h = stg.offload %x : !stg.tensor<[B/dp, H], bf16> -> !stg.host<[B, H], bf16>
  func.return
}

// CHECK: 'stg.offload': the result must be !stg.host<[B/dp, H], bf16>, with the input's layout

// -----

// ... partial sums ...
stg.mesh @m [dp, tp]
func.func @f(%h: !stg.host<[B, H] @tp, f32>) {
  %x = stg.reload %h : !stg.host<[B, H] @tp, f32> -> !stg.tensor<[B, H], f32>
  func.return
}

// CHECK: 'stg.reload': the result must be !stg.tensor<[B, H] @tp, f32>, with the input's layout

// -----

// ... and element type.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], bf16>) {
  %h = stg.offload %x : !stg.tensor<[B/dp, H], bf16> -> !stg.host<[B/dp, H], f32>
  func.return
}

// CHECK: 'stg.offload': the result must be !stg.host<[B/dp, H], bf16>, with the input's layout

// -----

// An async transfer's token carries the transferred tensor.
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], bf16>) {
  %h = stg.offload %x async : !stg.tensor<[B/dp, H], bf16> -> !stg.token
  func.return
}

// CHECK: 'stg.offload': the result must be !stg.host<[B/dp, H], bf16>, with the input's layout

// -----

stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], bf16>) {
  %h = stg.offload %x async : !stg.tensor<[B/dp, H], bf16> -> !stg.token<!stg.tensor<[B/dp, H], bf16>>
  func.return
}

// CHECK: 'stg.offload': the result must be !stg.host<[B/dp, H], bf16>, with the input's layout

// -----

stg.mesh @m [dp, tp]
func.func @f(%h: !stg.host<[B/dp, H], bf16>) {
  %x = stg.reload %h async : !stg.host<[B/dp, H], bf16> -> !stg.token<!stg.tensor<[B/dp, H/tp], bf16>>
  func.return
}

// CHECK: 'stg.reload': the result must be !stg.tensor<[B/dp, H], bf16>, with the input's layout

// -----

// offload goes to host memory ...
stg.mesh @m [dp, tp]
func.func @f(%x: !stg.tensor<[B/dp, H], bf16>) {
  %h = stg.offload %x : !stg.tensor<[B/dp, H], bf16> -> !stg.tensor<[B/dp, H], bf16>
  func.return
}

// CHECK: Unexpected attribute !stg.tensor<[B/dp, H], bf16>

// -----

// ... from device memory.
stg.mesh @m [dp, tp]
func.func @f(%h: !stg.host<[B/dp, H], bf16>) {
  %x = stg.offload %h : !stg.host<[B/dp, H], bf16> -> !stg.host<[B/dp, H], bf16>
  func.return
}

// CHECK: !stg.host<[B/dp, H], bf16> should be of base attribute stg.tensor

// -----

// stg.wait yields the token's payload (generic form; a payload of another layout is
// in type_equality.mlir) ...
stg.mesh @m [dp, tp]
func.func @f(%t: !stg.token<!stg.tensor<[B/dp, H], bf16>>) {
  "stg.wait"(%t) : (!stg.token<!stg.tensor<[B/dp, H], bf16>>) -> ()
  func.return
}

// CHECK: 'stg.wait' must yield the token's payload !stg.tensor<[B/dp, H], bf16>, not None

// -----

// ... and nothing for a bare token.
stg.mesh @m [dp, tp]
func.func @f(%t: !stg.token) {
  %x = "stg.wait"(%t) : (!stg.token) -> !stg.tensor<[B/dp, H], bf16>
  func.return
}

// CHECK: 'stg.wait' must yield the token's payload None, not !stg.tensor<[B/dp, H], bf16>

// -----

// release frees a device buffer.
stg.mesh @m [dp, tp]
func.func @f(%h: !stg.host<[B/dp, H], bf16>) {
  stg.release %h : !stg.host<[B/dp, H], bf16>
  func.return
}

// CHECK: !stg.host<[B/dp, H], bf16> should be of base attribute stg.tensor
