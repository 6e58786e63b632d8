#include "nccl_communicator.h"

#include <cstdio>
#include <cstring>

#include "cuda_common.h"

namespace stagec {
namespace {

ncclDataType_t nccl_dtype(DType dtype) {
  switch (dtype) {
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    case DType::f16: return ncclFloat16;
    case DType::bf16: return ncclBfloat16;
    case DType::i8: return ncclInt8;
    case DType::u8: return ncclUint8;
    case DType::i32: return ncclInt32;
    case DType::i64: return ncclInt64;
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::avg: return ncclAvg;
    case ReduceOp::max: return ncclMax;
    case ReduceOp::min: return ncclMin;
  }
  return ncclSum;
}

char* offset(void* data, size_t elements, DType dtype) {
  return static_cast<char*>(data) + elements * element_size(dtype);
}

}  // namespace

std::string NcclCommunicator::unique_id() {
  require_gpu(0);
  ncclUniqueId id;
  ncclResult_t rc = ncclGetUniqueId(&id);
  if (rc != ncclSuccess)
    throw CommError(std::string("ncclGetUniqueId failed: ") + ncclGetErrorString(rc));
  return std::string(id.internal, sizeof(id.internal));
}

NcclCommunicator::NcclCommunicator(const std::string& unique_id, int rank, int size, int device)
    : rank_(rank), size_(size), device_(device) {
  require_gpu(device);
  if (unique_id.size() != sizeof(ncclUniqueId))
    fail("the NCCL unique id has " + std::to_string(unique_id.size()) + " bytes, expected " +
         std::to_string(sizeof(ncclUniqueId)));
  if (rank < 0 || rank >= size) fail("rank out of 0.." + std::to_string(size - 1));
  ncclUniqueId id;
  std::memcpy(id.internal, unique_id.data(), sizeof(id.internal));
  STAGEC_CUDA(cudaSetDevice(device), "rank " + std::to_string(rank) + " init");
  STAGEC_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
              "rank " + std::to_string(rank) + " init");
  check(ncclCommInitRank(&comm_, size, id, rank), "ncclCommInitRank", "init");
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_) {
    cudaSetDevice(device_);
    if (aborted_) return;
    ncclCommFinalize(comm_);
    ncclCommDestroy(comm_);
  }
  if (stream_) cudaStreamDestroy(stream_);
}

void NcclCommunicator::check(ncclResult_t rc, const char* call, const std::string& description) {
  if (rc == ncclSuccess || rc == ncclInProgress) return;
  const char* last = comm_ ? ncclGetLastError(comm_) : nullptr;
  fail(description + ": " + call + " failed: " + ncclGetErrorString(rc) +
       (last && *last ? std::string(" (") + last + ")" : std::string()));
}

void NcclCommunicator::poll(const std::string& description) {
  ncclResult_t async = ncclSuccess;
  ncclCommGetAsyncError(comm_, &async);
  if (async != ncclSuccess && async != ncclInProgress) {
    // A failed communicator never completes its queued work: abort it so the stream
    // drains and the error reaches the caller, which stops the job.
    ncclCommAbort(comm_);
    aborted_ = true;
    fail(description + ": NCCL reported " + ncclGetErrorString(async));
  }
}

void NcclCommunicator::abort(const std::string& message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  std::fflush(stderr);
  if (comm_ && !aborted_) ncclCommAbort(comm_);
  aborted_ = true;
  std::_Exit(1);
}

std::unique_ptr<Work> NcclCommunicator::issue(const std::vector<CollectiveOp>& ops,
                                              std::string description) {
  if (aborted_) fail(description + ": the communicator was aborted");
  for (const CollectiveOp& op : ops)
    for (const Buffer* b : {&op.input, &op.output})
      if (b->data && (b->device != DeviceKind::cuda || b->device_id != device_))
        fail(description + ": a tensor is not on GPU " + std::to_string(device_));
  STAGEC_CUDA(cudaSetDevice(device_), description);
  stream_after(stream_, producer_, description);
  check(ncclGroupStart(), "ncclGroupStart", description);
  for (const CollectiveOp& op : ops) {
    const Buffer& in = op.input;
    const Buffer& out = op.output;
    switch (op.kind) {
      case OpKind::all_gather:
        check(ncclAllGather(in.data, out.data, in.count, nccl_dtype(in.dtype), comm_, stream_),
              "ncclAllGather", description);
        break;
      case OpKind::reduce_scatter:
        check(ncclReduceScatter(in.data, out.data, out.count, nccl_dtype(out.dtype),
                                nccl_op(op.op), comm_, stream_),
              "ncclReduceScatter", description);
        break;
      case OpKind::all_reduce:
        check(ncclAllReduce(out.data, out.data, out.count, nccl_dtype(out.dtype), nccl_op(op.op),
                            comm_, stream_),
              "ncclAllReduce", description);
        break;
      case OpKind::all_to_all: {
        size_t block = in.count / size_;
        for (int peer = 0; peer < size_; ++peer) {
          check(ncclSend(offset(in.data, peer * block, in.dtype), block, nccl_dtype(in.dtype), peer,
                         comm_, stream_),
                "ncclSend", description);
          check(ncclRecv(offset(out.data, peer * block, out.dtype), block, nccl_dtype(out.dtype),
                         peer, comm_, stream_),
                "ncclRecv", description);
        }
        break;
      }
      case OpKind::broadcast:
        check(ncclBroadcast(out.data, out.data, out.count, nccl_dtype(out.dtype), op.peer, comm_,
                            stream_),
              "ncclBroadcast", description);
        break;
      case OpKind::send:
        check(ncclSend(in.data, in.count, nccl_dtype(in.dtype), op.peer, comm_, stream_),
              "ncclSend", description);
        break;
      case OpKind::recv:
        check(ncclRecv(out.data, out.count, nccl_dtype(out.dtype), op.peer, comm_, stream_),
              "ncclRecv", description);
        break;
    }
  }
  check(ncclGroupEnd(), "ncclGroupEnd", description);
  return std::make_unique<EventWork>(std::move(description), stream_, device_,
                                     [this](const std::string& d) { poll(d); });
}

}  // namespace stagec
