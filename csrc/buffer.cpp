#include "buffer.h"

namespace stagec {

size_t element_size(DType dtype) {
  switch (dtype) {
    case DType::f64:
    case DType::i64:
      return 8;
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::f16:
    case DType::bf16:
      return 2;
    case DType::i8:
    case DType::u8:
      return 1;
  }
  return 0;
}

size_t Buffer::nbytes() const { return count * element_size(dtype); }

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::f16: return "float16";
    case DType::bf16: return "bfloat16";
    case DType::i8: return "int8";
    case DType::u8: return "uint8";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
  }
  return "?";
}

DType dtype_from_name(const std::string& name) {
  for (DType d : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i8, DType::u8,
                  DType::i32, DType::i64})
    if (name == dtype_name(d)) return d;
  throw std::invalid_argument("unknown dtype '" + name +
                              "' (expected float32, float64, float16, bfloat16, int8, "
                              "uint8, int32 or int64)");
}

bool is_floating(DType dtype) {
  return dtype == DType::f32 || dtype == DType::f64 || dtype == DType::f16 ||
         dtype == DType::bf16;
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::avg: return "avg";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "?";
}

ReduceOp reduce_op_from_name(const std::string& name) {
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min})
    if (name == reduce_op_name(op)) return op;
  throw std::invalid_argument("unknown reduction '" + name +
                              "' (expected sum, avg, max or min)");
}

}  // namespace stagec
