#include "cuda_common.h"

#include <chrono>
#include <thread>

namespace stagec {

int gpu_count(std::string* reason) {
  int count = 0;
  cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later calls see a clean state
    if (reason) *reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(rc);
    return 0;
  }
  if (count == 0 && reason) *reason = "cudaGetDeviceCount found 0 devices";
  return count;
}

void require_gpu(int device) {
  std::string reason;
  int count = gpu_count(&reason);
  if (count == 0) throw NoGpu("no GPU: " + reason);
  if (device < 0 || device >= count)
    throw NoGpu("no GPU " + std::to_string(device) + ": this machine has " +
                std::to_string(count));
}

void cuda_check(cudaError_t rc, const char* call, const std::string& where) {
  if (rc == cudaSuccess) return;
  throw CommError(where + ": " + call + " failed: " + cudaGetErrorString(rc));
}

void* DeviceAllocator::allocate(size_t nbytes) {
  void* pointer = nullptr;
  STAGEC_CUDA(cudaSetDevice(device_), "device pool");
  STAGEC_CUDA(cudaMalloc(&pointer, nbytes), "device pool");
  return pointer;
}

void DeviceAllocator::deallocate(void* pointer, size_t) {
  cudaSetDevice(device_);
  cudaFree(pointer);
}

void* PinnedAllocator::allocate(size_t nbytes) {
  void* pointer = nullptr;
  STAGEC_CUDA(cudaHostAlloc(&pointer, nbytes, cudaHostAllocDefault), "pinned pool");
  return pointer;
}

void PinnedAllocator::deallocate(void* pointer, size_t) { cudaFreeHost(pointer); }

EventWork::EventWork(std::string description, cudaStream_t stream, int device,
                     std::function<void(const std::string&)> poll)
    : Work(std::move(description)), device_(device), poll_(std::move(poll)) {
  STAGEC_CUDA(cudaSetDevice(device_), this->description());
  STAGEC_CUDA(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), this->description());
  STAGEC_CUDA(cudaEventRecord(event_, stream), this->description());
}

EventWork::~EventWork() {
  if (event_) cudaEventDestroy(event_);
}

bool EventWork::test() {
  cudaError_t rc = cudaEventQuery(event_);
  if (rc == cudaErrorNotReady) {
    if (poll_) poll_(description());
    return false;
  }
  STAGEC_CUDA(rc, description());
  return true;
}

void EventWork::wait_impl() {
  // Polled rather than cudaEventSynchronize: a peer's failure shows as an NCCL async
  // error while the event never completes, and only a poll sees it.
  while (!test()) std::this_thread::sleep_for(std::chrono::microseconds(20));
}

void EventWork::wait_on_stream_impl(uintptr_t stream) {
  STAGEC_CUDA(cudaStreamWaitEvent(reinterpret_cast<cudaStream_t>(stream), event_, 0),
              description());
}

void stream_after(cudaStream_t consumer, cudaStream_t producer, const std::string& where) {
  if (consumer == producer) return;
  cudaEvent_t event;
  STAGEC_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), where);
  STAGEC_CUDA(cudaEventRecord(event, producer), where);
  STAGEC_CUDA(cudaStreamWaitEvent(consumer, event, 0), where);
  cudaEventDestroy(event);
}

}  // namespace stagec
