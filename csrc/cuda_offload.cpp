#include "cuda_offload.h"

namespace stagec {
namespace {

// The host copy must outlive the copy engine's use of it: held until the event is
// waited, the copy goes with the work.
class CopyStreamWork : public EventWork {
 public:
  CopyStreamWork(std::string description, cudaStream_t stream, int device,
                 std::shared_ptr<HostCopy> copy)
      : EventWork(std::move(description), stream, device), copy_(std::move(copy)) {}

 private:
  std::shared_ptr<HostCopy> copy_;
};

}  // namespace

CudaOffloader::CudaOffloader(int device)
    : device_(device) {
  require_gpu(device);
  pool_ = std::make_shared<BufferPool>(std::make_unique<PinnedAllocator>());
  STAGEC_CUDA(cudaSetDevice(device), "offloader");
  STAGEC_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "offloader");
}

CudaOffloader::~CudaOffloader() {
  if (stream_) {
    cudaSetDevice(device_);
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
}

void CudaOffloader::check_device(const Buffer& b, const char* what) const {
  if (b.device != DeviceKind::cuda || b.device_id != device_)
    throw CommError(std::string(what) + ": the tensor is not on GPU " + std::to_string(device_));
}

std::pair<std::shared_ptr<HostCopy>, std::unique_ptr<Work>> CudaOffloader::offload(
    const Buffer& source) {
  check_device(source, "offload");
  std::string description = "offload #" + std::to_string(issued_++) + " (" +
                            std::to_string(source.nbytes()) + " bytes)";
  auto copy = std::make_shared<HostCopy>(pool_, source.nbytes());
  STAGEC_CUDA(cudaSetDevice(device_), description);
  stream_after(stream_, producer_, description);
  STAGEC_CUDA(cudaMemcpyAsync(copy->data(), source.data, source.nbytes(), cudaMemcpyDeviceToHost,
                              stream_),
              description);
  return {copy, std::make_unique<CopyStreamWork>(std::move(description), stream_, device_, copy)};
}

std::unique_ptr<Work> CudaOffloader::reload(std::shared_ptr<HostCopy> copy, const Buffer& target) {
  check_device(target, "reload");
  if (target.nbytes() != copy->nbytes())
    throw CommError("reload of " + std::to_string(copy->nbytes()) + " bytes into a tensor of " +
                    std::to_string(target.nbytes()) + " bytes");
  std::string description = "reload #" + std::to_string(issued_++) + " (" +
                            std::to_string(copy->nbytes()) + " bytes)";
  STAGEC_CUDA(cudaSetDevice(device_), description);
  stream_after(stream_, producer_, description);
  STAGEC_CUDA(cudaMemcpyAsync(target.data, copy->data(), copy->nbytes(), cudaMemcpyHostToDevice,
                              stream_),
              description);
  return std::make_unique<CopyStreamWork>(std::move(description), stream_, device_, copy);
}

}  // namespace stagec
