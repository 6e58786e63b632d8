// The communication interface every backend implements (MPI on CPUs, NCCL on GPUs).
//
// Every call is asynchronous: it issues the operation and returns a Work handle; the data
// is only valid after the handle's wait(), which consumes it (a second wait is an
// error, so a schedule that waits twice on one exchange is caught). A group issues
// several operations as one (fused gradient buckets, the exchanges of one FSDP unit):
// MPI issues each nonblocking call and waits on all of them together, NCCL brackets them
// in ncclGroupStart/End so they run as one kernel launch.
//
// Every rank issues the collectives of one communicator in the same order, as MPI and
// NCCL require; the IR's schedule guarantees this (docs/runtime.md).
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "buffer.h"

namespace stagec {

// A failure of a communication call; the message names the rank and the operation.
class CommError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Work {
 public:
  virtual ~Work() = default;
  // Blocks until the operation is complete; throws CommError on failure or when the
  // handle was already consumed.
  void wait();
  // Makes the GPU stream `stream` wait for the operation without blocking the host
  // (CUDA backends); consumes the handle. Elsewhere the same as wait().
  void wait_on_stream(uintptr_t stream);
  // True once the operation is complete (a test does not consume the handle).
  virtual bool test() = 0;
  bool consumed() const { return consumed_; }
  const std::string& description() const { return description_; }

 protected:
  explicit Work(std::string description) : description_(std::move(description)) {}
  virtual void wait_impl() = 0;
  virtual void wait_on_stream_impl(uintptr_t) { wait_impl(); }

 private:
  std::string description_;
  bool consumed_ = false;
};

enum class OpKind : uint8_t { all_gather, reduce_scatter, all_reduce, all_to_all, broadcast,
                              send, recv };

const char* op_kind_name(OpKind kind);

// One operation of a group. `input`/`output` as for the single calls; all_reduce and
// broadcast work in place on `output`; send reads `input`, recv writes `output`.
struct CollectiveOp {
  OpKind kind;
  Buffer input;
  Buffer output;
  ReduceOp op = ReduceOp::sum;
  int peer = 0;  // send/recv peer, broadcast root
  int tag = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const char* backend() const = 0;

  // output (size * n elements) = the concatenation of every rank's input (n), by rank.
  std::unique_ptr<Work> all_gather(const Buffer& input, const Buffer& output);
  // output (n) = this rank's n-element block of the reduction of every input (size * n).
  std::unique_ptr<Work> reduce_scatter(const Buffer& input, const Buffer& output,
                                       ReduceOp op);
  // output = the reduction of every rank's output, in place.
  std::unique_ptr<Work> all_reduce(const Buffer& output, ReduceOp op);
  // output block j (n elements) = rank j's input block `rank` (n); both size * n.
  std::unique_ptr<Work> all_to_all(const Buffer& input, const Buffer& output);
  // output = root's output on every rank, in place.
  std::unique_ptr<Work> broadcast(const Buffer& output, int root);
  std::unique_ptr<Work> send(const Buffer& input, int peer, int tag);
  std::unique_ptr<Work> recv(const Buffer& output, int peer, int tag);
  // Every op issued as one group; one handle completes them all.
  std::unique_ptr<Work> group(const std::vector<CollectiveOp>& ops);

  // Prints `message` and stops every rank of the job (MPI_Abort / ncclCommAbort);
  // never returns.
  [[noreturn]] virtual void abort(const std::string& message) = 0;

  // What this rank is doing, for failure messages ("all_gather #3 (4096 float32)");
  // the runtime may set it to the op of the schedule it is executing.
  const std::string& activity() const { return activity_; }
  void set_activity(std::string activity) { activity_ = std::move(activity); }
  // Operations issued so far (each op of a group counts).
  uint64_t issued() const { return issued_; }

 protected:
  // Checks the op against this communicator (sizes, dtypes, peers) and names it.
  std::string check(const CollectiveOp& op);
  virtual std::unique_ptr<Work> issue(const std::vector<CollectiveOp>& ops,
                                      std::string description) = 0;
  [[noreturn]] void fail(const std::string& what) const;

 private:
  std::unique_ptr<Work> issue_one(CollectiveOp op);
  std::string activity_ = "idle";
  uint64_t issued_ = 0;
};

}  // namespace stagec
