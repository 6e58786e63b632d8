#include "offload.h"

#include <chrono>
#include <cstring>

namespace stagec {
namespace {

class CopyWork : public Work {
 public:
  CopyWork(std::string description, std::shared_future<void> done)
      : Work(std::move(description)), done_(std::move(done)) {}
  bool test() override {
    return done_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }

 protected:
  void wait_impl() override {
    try {
      done_.get();
    } catch (const std::exception& error) {
      throw CommError(description() + " failed: " + error.what());
    }
  }

 private:
  std::shared_future<void> done_;
};

}  // namespace

CopyThread::CopyThread() : worker_([this] { run(); }) {}

CopyThread::~CopyThread() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_one();
  worker_.join();
}

std::shared_future<void> CopyThread::submit(std::function<void()> job) {
  std::packaged_task<void()> task(std::move(job));
  std::shared_future<void> done = task.get_future().share();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back(std::move(task));
  }
  ready_.notify_one();
  return done;
}

void CopyThread::run() {
  for (;;) {
    std::packaged_task<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      // Queued copies finish before the thread stops: their targets are still held.
      if (jobs_.empty()) return;
      task = std::move(jobs_.front());
      jobs_.pop_front();
    }
    task();
  }
}

HostOffloader::HostOffloader()
    : pool_(std::make_shared<BufferPool>(std::make_unique<HostAllocator>())) {}

std::pair<std::shared_ptr<HostCopy>, std::unique_ptr<Work>> HostOffloader::offload(
    const Buffer& source) {
  auto copy = std::make_shared<HostCopy>(pool_, source.nbytes());
  const void* from = source.data;
  auto done = thread_.submit([copy, from] { std::memcpy(copy->data(), from, copy->nbytes()); });
  std::string description = "offload #" + std::to_string(issued_++) + " (" +
                            std::to_string(source.nbytes()) + " bytes)";
  return {copy, std::make_unique<CopyWork>(std::move(description), std::move(done))};
}

std::unique_ptr<Work> HostOffloader::reload(std::shared_ptr<HostCopy> copy, const Buffer& target) {
  if (target.nbytes() != copy->nbytes())
    throw CommError("reload of " + std::to_string(copy->nbytes()) + " bytes into a tensor of " +
                    std::to_string(target.nbytes()) + " bytes");
  void* to = target.data;
  auto done = thread_.submit([copy, to] { std::memcpy(to, copy->data(), copy->nbytes()); });
  std::string description = "reload #" + std::to_string(issued_++) + " (" +
                            std::to_string(copy->nbytes()) + " bytes)";
  return std::make_unique<CopyWork>(std::move(description), std::move(done));
}

}  // namespace stagec
