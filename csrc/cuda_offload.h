// Offload/reload on a GPU: device memory <-> pinned host buffers on a copy stream of its
// own, so the copies overlap compute and communication (deepcompile.md §4.3).
#pragma once

#include <cuda_runtime.h>

#include "cuda_common.h"
#include "offload.h"

namespace stagec {

class CudaOffloader : public Offloader {
 public:
  explicit CudaOffloader(int device);
  ~CudaOffloader() override;
  std::pair<std::shared_ptr<HostCopy>, std::unique_ptr<Work>> offload(
      const Buffer& source) override;
  std::unique_ptr<Work> reload(std::shared_ptr<HostCopy> copy, const Buffer& target) override;
  BufferPool& host_pool() override { return *pool_; }
  uintptr_t stream() const { return reinterpret_cast<uintptr_t>(stream_); }
  // Copies start after the work queued on this stream so far (0: the legacy default).
  void set_producer_stream(uintptr_t stream) { producer_ = reinterpret_cast<cudaStream_t>(stream); }

 private:
  void check_device(const Buffer& b, const char* what) const;
  int device_;
  std::shared_ptr<BufferPool> pool_;
  cudaStream_t stream_ = nullptr;
  cudaStream_t producer_ = nullptr;
  uint64_t issued_ = 0;
};

}  // namespace stagec
