// stagec.csrc._cpu: the CPU runtime (MPI communicator, host buffer pool, copy-thread
// offloader). Needs libmpi only; never libnccl or the CUDA runtime.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/unique_ptr.h>

#include "bind_common.h"
#include "mpi_communicator.h"

namespace nb = nanobind;
using namespace stagec;
using namespace stagec::py;

namespace {
struct CpuTag {};

struct PyMpiCommunicator {
  std::unique_ptr<MpiCommunicator> comm;
};

struct PyHostOffloader {
  std::unique_ptr<HostOffloader> offloader;
};
}  // namespace

NB_MODULE(_cpu, m) {
  m.doc() = "stagec's CPU runtime: MPI communicator, host buffer pool, copy-thread offload.";
  register_errors();
  bind_work_and_ops<CpuTag>(m, DeviceKind::cpu);

  nb::class_<PyMpiCommunicator> comm(m, "MpiCommunicator",
                                     "A communicator over MPI (MPI_COMM_WORLD, or a split of it).");
  comm.def("__init__", [](PyMpiCommunicator* self) {
        new (self) PyMpiCommunicator{std::make_unique<MpiCommunicator>()};
      })
      .def("split", [](PyMpiCommunicator& s, int color, int key) {
        return PyMpiCommunicator{s.comm->split(color, key)};
      }, nb::arg("color"), nb::arg("key"),
      "The ranks of the same color, ordered by key (collective over this communicator).");
  bind_communicator_methods<CpuTag>(comm, DeviceKind::cpu,
                                    [](PyMpiCommunicator& s) { return s.comm.get(); });

  bind_pool<CpuTag>(m, "BufferPool", "A caching pool of host buffers (gathered parameters, buckets).");
  m.def("host_pool", [] {
    return PyPool<CpuTag>{std::make_shared<BufferPool>(std::make_unique<HostAllocator>())};
  }, "A new pool of 64-byte aligned host buffers.");

  nb::class_<PyHostOffloader> offloader(m, "HostOffloader",
                                        "Offload/reload through host buffers and a copy thread.");
  offloader.def("__init__", [](PyHostOffloader* self) {
    new (self) PyHostOffloader{std::make_unique<HostOffloader>()};
  });
  bind_offloader_methods<CpuTag>(m, offloader, DeviceKind::cpu,
                                 [](PyHostOffloader& s) { return s.offloader.get(); });

  m.def("finalize", &MpiCommunicator::finalize, "Ends MPI (at exit, after every communicator).");
}
