#include "buffer_pool.h"

#include <cstdlib>
#include <new>
#include <stdexcept>

namespace stagec {

void* HostAllocator::allocate(size_t nbytes) {
  void* pointer = std::aligned_alloc(64, nbytes);
  if (!pointer) throw std::bad_alloc();
  return pointer;
}

void HostAllocator::deallocate(void* pointer, size_t) { std::free(pointer); }

BufferPool::BufferPool(std::unique_ptr<Allocator> allocator) : allocator_(std::move(allocator)) {}

BufferPool::~BufferPool() {
  trim();
  // Blocks still in use belong to arrays that outlive the pool's last Python reference
  // only if a caller leaked them; the bindings keep the pool alive while any is held.
  for (auto& [pointer, size] : in_use_) allocator_->deallocate(pointer, size);
}

size_t BufferPool::round_up(size_t nbytes) {
  constexpr size_t quantum = 512;
  if (nbytes == 0) nbytes = 1;
  return (nbytes + quantum - 1) / quantum * quantum;
}

void* BufferPool::acquire(size_t nbytes) {
  size_t size = round_up(nbytes);
  std::lock_guard<std::mutex> lock(mutex_);
  void* pointer = nullptr;
  auto fit = cached_.lower_bound(size);
  if (fit != cached_.end() && fit->first <= size + size / 4) {
    size = fit->first;
    pointer = fit->second;
    cached_.erase(fit);
    stats_.cached_bytes -= size;
    ++stats_.reuses;
  } else {
    pointer = allocator_->allocate(size);
    ++stats_.allocations;
  }
  in_use_.emplace(pointer, size);
  stats_.in_use_bytes += size;
  if (stats_.in_use_bytes > stats_.peak_in_use_bytes)
    stats_.peak_in_use_bytes = stats_.in_use_bytes;
  return pointer;
}

void BufferPool::release(void* pointer) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = in_use_.find(pointer);
  if (it == in_use_.end())
    throw std::invalid_argument("release of a block this pool did not hand out");
  size_t size = it->second;
  in_use_.erase(it);
  stats_.in_use_bytes -= size;
  cached_.emplace(size, pointer);
  stats_.cached_bytes += size;
}

void BufferPool::trim() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [size, pointer] : cached_) allocator_->deallocate(pointer, size);
  cached_.clear();
  stats_.cached_bytes = 0;
}

PoolStats BufferPool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace stagec
