#include "communicator.h"

#include <sstream>

namespace stagec {

void Work::wait() {
  if (consumed_) throw CommError("wait on a handle already waited: " + description_);
  consumed_ = true;
  wait_impl();
}

void Work::wait_on_stream(uintptr_t stream) {
  if (consumed_) throw CommError("wait on a handle already waited: " + description_);
  consumed_ = true;
  wait_on_stream_impl(stream);
}

const char* op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::all_gather: return "all_gather";
    case OpKind::reduce_scatter: return "reduce_scatter";
    case OpKind::all_reduce: return "all_reduce";
    case OpKind::all_to_all: return "all_to_all";
    case OpKind::broadcast: return "broadcast";
    case OpKind::send: return "send";
    case OpKind::recv: return "recv";
  }
  return "?";
}

void Communicator::fail(const std::string& what) const {
  std::ostringstream message;
  message << "rank " << rank() << " of " << size() << " (" << backend() << "): " << what;
  throw CommError(message.str());
}

std::string Communicator::check(const CollectiveOp& op) {
  const int n = size();
  const Buffer& in = op.input;
  const Buffer& out = op.output;
  std::ostringstream name;
  name << op_kind_name(op.kind) << " #" << issued_;
  auto need = [&](bool ok, const std::string& what) {
    if (!ok) fail(name.str() + ": " + what);
  };
  auto same_dtype = [&] {
    need(in.dtype == out.dtype, std::string("input is ") + dtype_name(in.dtype) +
                                    " but output is " + dtype_name(out.dtype));
  };
  auto reducible = [&](const Buffer& b) {
    need(op.op != ReduceOp::avg || is_floating(b.dtype),
         std::string("avg needs a floating dtype, got ") + dtype_name(b.dtype));
  };
  switch (op.kind) {
    case OpKind::all_gather:
      same_dtype();
      need(out.count == in.count * n,
           "output has " + std::to_string(out.count) + " elements, expected size x input = " +
               std::to_string(in.count * n));
      name << " (" << in.count << " " << dtype_name(in.dtype) << ")";
      break;
    case OpKind::reduce_scatter:
      same_dtype();
      reducible(in);
      need(in.count == out.count * n,
           "input has " + std::to_string(in.count) + " elements, expected size x output = " +
               std::to_string(out.count * n));
      name << " (" << out.count << " " << dtype_name(out.dtype) << ", "
           << reduce_op_name(op.op) << ")";
      break;
    case OpKind::all_to_all:
      same_dtype();
      need(in.count == out.count, "input and output differ in size (" +
                                      std::to_string(in.count) + " vs " +
                                      std::to_string(out.count) + ")");
      need(in.count % n == 0, "size " + std::to_string(in.count) +
                                  " does not split into " + std::to_string(n) + " blocks");
      name << " (" << in.count << " " << dtype_name(in.dtype) << ")";
      break;
    case OpKind::all_reduce:
      reducible(out);
      name << " (" << out.count << " " << dtype_name(out.dtype) << ", "
           << reduce_op_name(op.op) << ")";
      break;
    case OpKind::broadcast:
      need(op.peer >= 0 && op.peer < n, "root " + std::to_string(op.peer) + " out of range");
      name << " (" << out.count << " " << dtype_name(out.dtype) << " from " << op.peer << ")";
      break;
    case OpKind::send:
    case OpKind::recv: {
      const Buffer& b = op.kind == OpKind::send ? in : out;
      need(op.peer >= 0 && op.peer < n && op.peer != rank(),
           "peer " + std::to_string(op.peer) + " is not another rank of 0.." +
               std::to_string(n - 1));
      name << " (" << b.count << " " << dtype_name(b.dtype)
           << (op.kind == OpKind::send ? " to " : " from ") << op.peer << ")";
      break;
    }
  }
  ++issued_;
  return name.str();
}

std::unique_ptr<Work> Communicator::issue_one(CollectiveOp op) {
  std::string description = check(op);
  activity_ = description;
  return issue({op}, description);
}

std::unique_ptr<Work> Communicator::all_gather(const Buffer& input, const Buffer& output) {
  return issue_one({OpKind::all_gather, input, output});
}
std::unique_ptr<Work> Communicator::reduce_scatter(const Buffer& input, const Buffer& output,
                                                   ReduceOp op) {
  return issue_one({OpKind::reduce_scatter, input, output, op});
}
std::unique_ptr<Work> Communicator::all_reduce(const Buffer& output, ReduceOp op) {
  return issue_one({OpKind::all_reduce, output, output, op});
}
std::unique_ptr<Work> Communicator::all_to_all(const Buffer& input, const Buffer& output) {
  return issue_one({OpKind::all_to_all, input, output});
}
std::unique_ptr<Work> Communicator::broadcast(const Buffer& output, int root) {
  return issue_one({OpKind::broadcast, output, output, ReduceOp::sum, root});
}
std::unique_ptr<Work> Communicator::send(const Buffer& input, int peer, int tag) {
  return issue_one({OpKind::send, input, Buffer{}, ReduceOp::sum, peer, tag});
}
std::unique_ptr<Work> Communicator::recv(const Buffer& output, int peer, int tag) {
  return issue_one({OpKind::recv, Buffer{}, output, ReduceOp::sum, peer, tag});
}

std::unique_ptr<Work> Communicator::group(const std::vector<CollectiveOp>& ops) {
  if (ops.empty()) fail("group of no operations");
  std::string description = "group of " + std::to_string(ops.size()) + " [";
  for (size_t i = 0; i < ops.size(); ++i)
    description += (i ? ", " : "") + check(ops[i]);
  description += "]";
  activity_ = description;
  return issue(ops, description);
}

}  // namespace stagec
