// The Communicator over MPI (MPICH from PyPI): nonblocking MPI_I* calls, a handle waits
// on their requests. The CPU backend of the runtime and of `stagec run` on CPU ranks.
#pragma once

#include <mpi.h>

#include "communicator.h"

namespace stagec {

class MpiCommunicator : public Communicator {
 public:
  // MPI_COMM_WORLD (MPI is initialised on first use; a process started without mpiexec
  // is a world of one rank).
  MpiCommunicator();
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend() const override { return "mpi"; }
  // The ranks with the same color, ordered by key (a mesh axis' group); collective.
  std::unique_ptr<MpiCommunicator> split(int color, int key);
  [[noreturn]] void abort(const std::string& message) override;
  // Ends MPI at process exit (after every communicator is gone).
  static void finalize();

 protected:
  std::unique_ptr<Work> issue(const std::vector<CollectiveOp>& ops,
                              std::string description) override;

 private:
  explicit MpiCommunicator(MPI_Comm comm);
  void call(int rc, const char* function, const std::string& description) const;
  MPI_Comm comm_;
  bool owned_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace stagec
