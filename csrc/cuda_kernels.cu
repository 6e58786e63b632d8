// The runtime's own kernels: filling a buffer (zeroed gradient buckets, test data
// without torch on the device).
#include "cuda_common.h"

namespace stagec {
namespace {

template <typename T>
__global__ void fill_kernel(T* data, size_t count, T value) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
       i += (size_t)gridDim.x * blockDim.x)
    data[i] = value;
}

template <typename T>
void launch(const Buffer& b, T value, cudaStream_t stream) {
  if (b.count == 0) return;
  unsigned threads = 256;
  size_t blocks = (b.count + threads - 1) / threads;
  if (blocks > 65535) blocks = 65535;
  fill_kernel<T><<<(unsigned)blocks, threads, 0, stream>>>(static_cast<T*>(b.data), b.count, value);
}

}  // namespace

void fill(const Buffer& b, double value, cudaStream_t stream) {
  STAGEC_CUDA(cudaSetDevice(b.device_id), "fill");
  switch (b.dtype) {
    case DType::f32: launch<float>(b, (float)value, stream); break;
    case DType::f64: launch<double>(b, value, stream); break;
    case DType::i32: launch<int32_t>(b, (int32_t)value, stream); break;
    case DType::i64: launch<int64_t>(b, (int64_t)value, stream); break;
    case DType::i8: launch<int8_t>(b, (int8_t)value, stream); break;
    case DType::u8: launch<uint8_t>(b, (uint8_t)value, stream); break;
    case DType::f16:
    case DType::bf16:
      throw std::invalid_argument(std::string("fill of ") + dtype_name(b.dtype) +
                                  " is not supported (float32, float64 and integers are)");
  }
  STAGEC_CUDA(cudaGetLastError(), "fill");
}

}  // namespace stagec
