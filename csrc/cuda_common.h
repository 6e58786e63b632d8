// CUDA helpers shared by the NCCL communicator and the copy-stream offloader: error
// checks that name the rank and call, the "no GPU" check, pools of device and pinned
// memory, and a Work completed by a CUDA event.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <string>

#include "buffer_pool.h"
#include "communicator.h"

namespace stagec {

// No usable GPU on this machine (no device, or no driver); the message says which.
class NoGpu : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The number of GPUs, or 0 and why there are none.
int gpu_count(std::string* reason);
// Throws NoGpu unless `device` is a GPU of this machine.
void require_gpu(int device);

void cuda_check(cudaError_t rc, const char* call, const std::string& where);
#define STAGEC_CUDA(call, where) ::stagec::cuda_check((call), #call, (where))

class DeviceAllocator : public Allocator {
 public:
  explicit DeviceAllocator(int device) : device_(device) {}
  void* allocate(size_t nbytes) override;
  void deallocate(void* pointer, size_t nbytes) override;
  DeviceKind device() const override { return DeviceKind::cuda; }
  int device_id() const override { return device_; }
  const char* name() const override { return "device"; }

 private:
  int device_;
};

// Page-locked host memory: the only kind a copy engine moves asynchronously.
class PinnedAllocator : public Allocator {
 public:
  void* allocate(size_t nbytes) override;
  void deallocate(void* pointer, size_t nbytes) override;
  DeviceKind device() const override { return DeviceKind::cpu; }
  const char* name() const override { return "pinned"; }
};

// Completion of work queued on a stream, marked by an event recorded after it.
class EventWork : public Work {
 public:
  // `poll` runs while waiting (the NCCL communicator checks its async error there) and
  // may throw.
  EventWork(std::string description, cudaStream_t stream, int device,
            std::function<void(const std::string&)> poll = {});
  ~EventWork() override;
  bool test() override;

 protected:
  void wait_impl() override;
  void wait_on_stream_impl(uintptr_t stream) override;

 private:
  cudaEvent_t event_ = nullptr;
  int device_;
  std::function<void(const std::string&)> poll_;
};

// Makes `consumer` wait for the work queued so far on `producer`.
void stream_after(cudaStream_t consumer, cudaStream_t producer, const std::string& where);

// fill(buffer, value) on `stream`, for any dtype (cuda_kernels.cu).
void fill(const Buffer& buffer, double value, cudaStream_t stream);

}  // namespace stagec
