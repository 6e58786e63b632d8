// stagec.csrc._cuda: the GPU runtime (NCCL communicator, device and pinned pools,
// copy-stream offload). Imported lazily by stagec.csrc: it loads libnccl.so.2 and needs
// the CUDA driver only when a GPU is asked for; without one every entry point raises
// stagec.csrc.errors.NoGpuError ("no GPU: ...").
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/tuple.h>

#include "bind_common.h"
#include "cuda_common.h"
#include "cuda_offload.h"
#include "nccl_communicator.h"

namespace nb = nanobind;
using namespace stagec;
using namespace stagec::py;

namespace {
struct CudaTag {};

struct PyNcclCommunicator {
  std::unique_ptr<NcclCommunicator> comm;
};

struct PyCudaOffloader {
  std::unique_ptr<CudaOffloader> offloader;
};

void copy(const Array& to, const Array& from, cudaMemcpyKind kind, const char* what) {
  if (to.nbytes() != from.nbytes())
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(from.nbytes()) +
                                " bytes into " + std::to_string(to.nbytes()));
  nb::gil_scoped_release released;
  STAGEC_CUDA(cudaMemcpy(to.data(), from.data(), from.nbytes(), kind), what);
}
}  // namespace

NB_MODULE(_cuda, m) {
  m.doc() = "stagec's GPU runtime: NCCL communicator, device/pinned pools, copy-stream offload.";
  register_errors();
  static PyObject* no_gpu =
      nb::object(nb::module_::import_("stagec.csrc.errors").attr("NoGpuError")).release().ptr();
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const NoGpu& error) {
      PyErr_SetString(no_gpu, error.what());
    }
  });
  bind_work_and_ops<CudaTag>(m, DeviceKind::cuda);

  m.def("gpu_status", [] {
    std::string reason;
    int count = gpu_count(&reason);
    return nb::make_tuple(count, reason);
  }, "(number of GPUs, why there are none: '' when there are some).");
  m.def("nccl_version", [] {
    int version = 0;
    ncclGetVersion(&version);
    return version;
  });
  m.def("unique_id", [] { return nb::bytes(NcclCommunicator::unique_id().data(), 128); },
        "A new NCCL unique id (rank 0 makes it and sends it to the others).");
  m.def("synchronize", [](int device) {
    require_gpu(device);
    nb::gil_scoped_release released;
    STAGEC_CUDA(cudaSetDevice(device), "synchronize");
    STAGEC_CUDA(cudaDeviceSynchronize(), "synchronize");
  }, nb::arg("device") = 0);
  m.def("fill", [](const Array& a, double value) {
    fill(to_buffer(a, DeviceKind::cuda, "fill"), value, nullptr);
  }, nb::arg("tensor"), nb::arg("value"), "Fills a GPU tensor on the legacy default stream.");
  m.def("copy_to_device", [](const Array& device, const Array& host) {
    to_buffer(device, DeviceKind::cuda, "copy_to_device");
    copy(device, host, cudaMemcpyHostToDevice, "copy_to_device");
  }, nb::arg("device"), nb::arg("host"));
  m.def("copy_to_host", [](const Array& host, const Array& device) {
    to_buffer(device, DeviceKind::cuda, "copy_to_host");
    copy(host, device, cudaMemcpyDeviceToHost, "copy_to_host");
  }, nb::arg("host"), nb::arg("device"));

  nb::class_<PyNcclCommunicator> comm(m, "NcclCommunicator",
                                      "A communicator over NCCL on one GPU per rank.");
  comm.def("__init__", [](PyNcclCommunicator* self, nb::bytes id, int rank, int size, int device) {
        std::string uid(static_cast<const char*>(id.data()), id.size());
        new (self) PyNcclCommunicator{std::make_unique<NcclCommunicator>(uid, rank, size, device)};
      }, nb::arg("unique_id"), nb::arg("rank"), nb::arg("size"), nb::arg("device") = 0)
      .def_prop_ro("device", [](PyNcclCommunicator& s) { return s.comm->device(); })
      .def_prop_ro("stream", [](PyNcclCommunicator& s) { return s.comm->stream(); },
                   "The communication stream's handle (an int).")
      .def("set_producer_stream", [](PyNcclCommunicator& s, uintptr_t stream) {
        s.comm->set_producer_stream(stream);
      }, nb::arg("stream"), "Later operations start after the work queued on this stream.");
  bind_communicator_methods<CudaTag>(comm, DeviceKind::cuda,
                                     [](PyNcclCommunicator& s) { return s.comm.get(); });

  bind_pool<CudaTag>(m, "BufferPool", "A caching pool of device or pinned host buffers.");
  m.def("device_pool", [](int device) {
    require_gpu(device);
    return PyPool<CudaTag>{std::make_shared<BufferPool>(std::make_unique<DeviceAllocator>(device))};
  }, nb::arg("device") = 0, "A pool of device memory (arrays cross as DLPack).");
  m.def("pinned_pool", [] {
    require_gpu(0);
    return PyPool<CudaTag>{std::make_shared<BufferPool>(std::make_unique<PinnedAllocator>())};
  }, "A pool of page-locked host memory.");

  nb::class_<PyCudaOffloader> offloader(m, "CudaOffloader",
                                        "Offload/reload through pinned buffers on a copy stream.");
  offloader.def("__init__", [](PyCudaOffloader* self, int device) {
        new (self) PyCudaOffloader{std::make_unique<CudaOffloader>(device)};
      }, nb::arg("device") = 0)
      .def_prop_ro("stream", [](PyCudaOffloader& s) { return s.offloader->stream(); })
      .def("set_producer_stream", [](PyCudaOffloader& s, uintptr_t stream) {
        s.offloader->set_producer_stream(stream);
      }, nb::arg("stream"));
  bind_offloader_methods<CudaTag>(m, offloader, DeviceKind::cuda,
                                  [](PyCudaOffloader& s) { return s.offloader.get(); });
}
