// A caching pool of buffers for gathered parameters and gradient buckets.
//
// FSDP gathers the same parameter sizes every step and releases them after use
// (stg.release); allocating each gather afresh would cost a malloc/cudaMalloc and a page
// fault per unit per step. The pool keeps released blocks and hands a cached block of
// the same size class back on the next acquire. Sizes are rounded up to a 512-byte
// multiple; a cached block up to 25% larger than asked serves (best fit), so buckets of
// nearly equal size share blocks without wasting much.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "buffer.h"

namespace stagec {

// Where a pool's memory comes from: host memory, pinned host memory, device memory.
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t nbytes) = 0;
  virtual void deallocate(void* pointer, size_t nbytes) = 0;
  virtual DeviceKind device() const = 0;
  virtual int device_id() const { return 0; }
  virtual const char* name() const = 0;
};

// 64-byte aligned host memory (malloc's alignment is too small for vector loads).
class HostAllocator : public Allocator {
 public:
  void* allocate(size_t nbytes) override;
  void deallocate(void* pointer, size_t nbytes) override;
  DeviceKind device() const override { return DeviceKind::cpu; }
  const char* name() const override { return "host"; }
};

struct PoolStats {
  size_t in_use_bytes = 0;    // held by live buffers
  size_t cached_bytes = 0;    // released, kept for reuse
  size_t peak_in_use_bytes = 0;
  size_t allocations = 0;     // calls to the allocator
  size_t reuses = 0;          // acquires served from the cache
};

class BufferPool {
 public:
  explicit BufferPool(std::unique_ptr<Allocator> allocator);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A block of at least `nbytes`; released with release(pointer).
  void* acquire(size_t nbytes);
  void release(void* pointer);
  // Gives every cached block back to the allocator.
  void trim();
  PoolStats stats() const;
  Allocator& allocator() { return *allocator_; }

  static size_t round_up(size_t nbytes);

 private:
  std::unique_ptr<Allocator> allocator_;
  mutable std::mutex mutex_;
  std::multimap<size_t, void*> cached_;           // size -> block
  std::unordered_map<void*, size_t> in_use_;      // block -> size
  PoolStats stats_;
};

}  // namespace stagec
