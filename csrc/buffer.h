// The runtime's view of a tensor: a pointer, an element count, an element type and the
// device that holds it. Tensors cross the Python boundary as DLPack (see the bindings);
// inside csrc every call takes these plain views, so the core needs no Python headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace stagec {

enum class DType : uint8_t { f32, f64, f16, bf16, i8, u8, i32, i64 };

enum class DeviceKind : uint8_t { cpu, cuda };

struct Buffer {
  void* data = nullptr;
  size_t count = 0;  // elements, not bytes
  DType dtype = DType::f32;
  DeviceKind device = DeviceKind::cpu;
  int device_id = 0;

  size_t nbytes() const;
};

enum class ReduceOp : uint8_t { sum, avg, max, min };

size_t element_size(DType dtype);
const char* dtype_name(DType dtype);
DType dtype_from_name(const std::string& name);  // throws std::invalid_argument
bool is_floating(DType dtype);
const char* reduce_op_name(ReduceOp op);
ReduceOp reduce_op_from_name(const std::string& name);  // throws std::invalid_argument

}  // namespace stagec
