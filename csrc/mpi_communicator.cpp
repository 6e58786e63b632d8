#include "mpi_communicator.h"

#include <cstdio>
#include <functional>

namespace stagec {
namespace {

void ensure_initialized() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  // Serialized: the Python thread issues every call; copy threads never touch MPI.
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
}

MPI_Datatype mpi_dtype(DType dtype) {
  switch (dtype) {
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
    case DType::f16: return MPIX_C_FLOAT16;
    case DType::bf16: return MPIX_BFLOAT16;
    case DType::i8: return MPI_INT8_T;
    case DType::u8: return MPI_UINT8_T;
    case DType::i32: return MPI_INT32_T;
    case DType::i64: return MPI_INT64_T;
  }
  return MPI_DATATYPE_NULL;
}

// avg is sum then a division by the rank count once the data is there.
MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return MPI_SUM;
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::min: return MPI_MIN;
  }
  return MPI_OP_NULL;
}

template <typename T>
void divide(void* data, size_t count, int by) {
  T* values = static_cast<T*>(data);
  for (size_t i = 0; i < count; ++i) values[i] /= static_cast<T>(by);
}

class MpiWork : public Work {
 public:
  MpiWork(std::string description, std::vector<MPI_Request> requests,
          std::vector<std::function<void()>> then, int rank)
      : Work(std::move(description)), requests_(std::move(requests)), then_(std::move(then)),
        rank_(rank) {}

  bool test() override {
    if (done_) return true;
    int flag = 0;
    int rc = MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &flag,
                         MPI_STATUSES_IGNORE);
    check(rc);
    if (flag) finish();
    return done_;
  }

 protected:
  void wait_impl() override {
    if (done_) return;
    int rc = MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(),
                         MPI_STATUSES_IGNORE);
    check(rc);
    finish();
  }

 private:
  void check(int rc) {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(rc, text, &length);
    throw CommError("rank " + std::to_string(rank_) + " (mpi): " + description() +
                    " failed: " + std::string(text, length));
  }
  void finish() {
    done_ = true;
    for (auto& step : then_) step();
  }
  std::vector<MPI_Request> requests_;
  std::vector<std::function<void()>> then_;
  int rank_;
  bool done_ = false;
};

}  // namespace

MpiCommunicator::MpiCommunicator() : comm_(MPI_COMM_WORLD), owned_(false) {
  ensure_initialized();
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm) : comm_(comm), owned_(true) {
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owned_ && !finalized) MPI_Comm_free(&comm_);
}

void MpiCommunicator::finalize() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Finalize();
}

std::unique_ptr<MpiCommunicator> MpiCommunicator::split(int color, int key) {
  MPI_Comm sub;
  call(MPI_Comm_split(comm_, color, key, &sub), "MPI_Comm_split", "split");
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(sub));
}

void MpiCommunicator::abort(const std::string& message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  std::fflush(stderr);
  // MPI_Abort on the world: mpiexec stops every rank of the job, not only this group.
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

void MpiCommunicator::call(int rc, const char* function, const std::string& description) const {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  fail(description + ": " + function + " failed: " + std::string(text, length));
}

std::unique_ptr<Work> MpiCommunicator::issue(const std::vector<CollectiveOp>& ops,
                                             std::string description) {
  std::vector<MPI_Request> requests;
  std::vector<std::function<void()>> then;
  for (const CollectiveOp& op : ops) {
    MPI_Request request = MPI_REQUEST_NULL;
    const Buffer& in = op.input;
    const Buffer& out = op.output;
    // Checked before the call is issued, so a refused op leaves no request behind.
    if (op.op == ReduceOp::avg &&
        (op.kind == OpKind::all_reduce || op.kind == OpKind::reduce_scatter)) {
      Buffer target = out;
      int n = size_;
      if (target.dtype == DType::f32)
        then.push_back([target, n] { divide<float>(target.data, target.count, n); });
      else if (target.dtype == DType::f64)
        then.push_back([target, n] { divide<double>(target.data, target.count, n); });
      else
        fail(description + ": avg of " + dtype_name(target.dtype) +
             " is not supported on MPI (float32 and float64 are; or reduce with sum)");
    }
    switch (op.kind) {
      case OpKind::all_gather:
        call(MPI_Iallgather(in.data, static_cast<int>(in.count), mpi_dtype(in.dtype), out.data,
                            static_cast<int>(in.count), mpi_dtype(out.dtype), comm_, &request),
             "MPI_Iallgather", description);
        break;
      case OpKind::reduce_scatter:
        call(MPI_Ireduce_scatter_block(in.data, out.data, static_cast<int>(out.count),
                                       mpi_dtype(out.dtype), mpi_op(op.op), comm_, &request),
             "MPI_Ireduce_scatter_block", description);
        break;
      case OpKind::all_reduce:
        call(MPI_Iallreduce(MPI_IN_PLACE, out.data, static_cast<int>(out.count),
                            mpi_dtype(out.dtype), mpi_op(op.op), comm_, &request),
             "MPI_Iallreduce", description);
        break;
      case OpKind::all_to_all: {
        int block = static_cast<int>(in.count / size_);
        call(MPI_Ialltoall(in.data, block, mpi_dtype(in.dtype), out.data, block,
                           mpi_dtype(out.dtype), comm_, &request),
             "MPI_Ialltoall", description);
        break;
      }
      case OpKind::broadcast:
        call(MPI_Ibcast(out.data, static_cast<int>(out.count), mpi_dtype(out.dtype), op.peer,
                        comm_, &request),
             "MPI_Ibcast", description);
        break;
      case OpKind::send:
        call(MPI_Isend(in.data, static_cast<int>(in.count), mpi_dtype(in.dtype), op.peer, op.tag,
                       comm_, &request),
             "MPI_Isend", description);
        break;
      case OpKind::recv:
        call(MPI_Irecv(out.data, static_cast<int>(out.count), mpi_dtype(out.dtype), op.peer,
                       op.tag, comm_, &request),
             "MPI_Irecv", description);
        break;
    }
    requests.push_back(request);
  }
  return std::make_unique<MpiWork>(std::move(description), std::move(requests), std::move(then),
                                   rank_);
}

}  // namespace stagec
