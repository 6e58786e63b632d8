// The Communicator over NCCL: every operation is queued on the communicator's own
// stream after the work already queued on the producer stream (the compute stream, by
// default the legacy default stream), so communication overlaps the compute issued
// after it; a handle is an event recorded after the operation. A group is one
// ncclGroupStart/End.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

#include "communicator.h"

namespace stagec {

class NcclCommunicator : public Communicator {
 public:
  // The ranks share `unique_id` (from unique_id() on one rank, sent to the others).
  NcclCommunicator(const std::string& unique_id, int rank, int size, int device);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  static std::string unique_id();  // throws NoGpu where there is no GPU

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend() const override { return "nccl"; }
  int device() const { return device_; }
  uintptr_t stream() const { return reinterpret_cast<uintptr_t>(stream_); }
  // The stream whose queued work the next operations wait for (0: the legacy default).
  void set_producer_stream(uintptr_t stream) { producer_ = reinterpret_cast<cudaStream_t>(stream); }
  [[noreturn]] void abort(const std::string& message) override;

 protected:
  std::unique_ptr<Work> issue(const std::vector<CollectiveOp>& ops,
                              std::string description) override;

 private:
  void check(ncclResult_t rc, const char* call, const std::string& description);
  void poll(const std::string& description);
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaStream_t producer_ = nullptr;
  int rank_;
  int size_;
  int device_;
  bool aborted_ = false;
};

}  // namespace stagec
