// Offload and reload: a tensor's bytes go to a host buffer and come back later
// (DeepCompile's offloading of optimizer state and activations, deepcompile.md §4.3).
//
// Copies run off the compute path, in issue order: on a CPU a copy thread, on a GPU a
// copy stream between device memory and pinned host buffers (cuda_offload.h). A reload
// issued after an offload of the same copy runs after it, so a schedule may issue both
// without waiting in between. The host buffers come from a BufferPool and go back to it
// when the HostCopy is dropped.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "buffer_pool.h"
#include "communicator.h"

namespace stagec {

// An offloaded tensor's bytes in a host buffer of a pool.
class HostCopy {
 public:
  HostCopy(std::shared_ptr<BufferPool> pool, size_t nbytes)
      : pool_(std::move(pool)), data_(pool_->acquire(nbytes)), nbytes_(nbytes) {}
  ~HostCopy() { pool_->release(data_); }
  HostCopy(const HostCopy&) = delete;
  HostCopy& operator=(const HostCopy&) = delete;
  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }

 private:
  std::shared_ptr<BufferPool> pool_;
  void* data_;
  size_t nbytes_;
};

class Offloader {
 public:
  virtual ~Offloader() = default;
  // Starts copying `source` into a new host buffer; the copy is valid once the work is
  // waited on (or once a reload issued later has run).
  virtual std::pair<std::shared_ptr<HostCopy>, std::unique_ptr<Work>> offload(
      const Buffer& source) = 0;
  // Starts copying `copy` back into `target` (same byte size).
  virtual std::unique_ptr<Work> reload(std::shared_ptr<HostCopy> copy, const Buffer& target) = 0;
  virtual BufferPool& host_pool() = 0;
};

// One worker thread running jobs in the order they were queued.
class CopyThread {
 public:
  CopyThread();
  ~CopyThread();
  std::shared_future<void> submit(std::function<void()> job);

 private:
  void run();
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::packaged_task<void()>> jobs_;
  bool stopping_ = false;
  std::thread worker_;
};

// The CPU offloader: plain host memory (the "pinned" buffers of a GPU become ordinary
// ones) and a copy thread.
class HostOffloader : public Offloader {
 public:
  HostOffloader();
  std::pair<std::shared_ptr<HostCopy>, std::unique_ptr<Work>> offload(
      const Buffer& source) override;
  std::unique_ptr<Work> reload(std::shared_ptr<HostCopy> copy, const Buffer& target) override;
  BufferPool& host_pool() override { return *pool_; }
  std::shared_ptr<BufferPool> shared_pool() { return pool_; }

 private:
  std::shared_ptr<BufferPool> pool_;
  CopyThread thread_;
  uint64_t issued_ = 0;
};

}  // namespace stagec
