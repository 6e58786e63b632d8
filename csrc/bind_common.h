// What the two extension modules (_cpu: MPI, host pool and copy thread; _cuda: NCCL,
// device and pinned pools, copy stream) share in their Python bindings: DLPack arrays to
// Buffers, the handle type, the op descriptors of a group, pool arrays and the errors.
//
// Each module instantiates these templates with its own tag, so the two never register
// the same C++ type with nanobind (they may be loaded into one process together).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>
#include <vector>

#include "buffer_pool.h"
#include "communicator.h"
#include "offload.h"

namespace stagec::py {

namespace nb = nanobind;
using Array = nb::ndarray<nb::c_contig>;

inline DType dtype_of(const nb::dlpack::dtype& t) {
  using code = nb::dlpack::dtype_code;
  if (t.lanes == 1) {
    if (t.code == (uint8_t)code::Float && t.bits == 32) return DType::f32;
    if (t.code == (uint8_t)code::Float && t.bits == 64) return DType::f64;
    if (t.code == (uint8_t)code::Float && t.bits == 16) return DType::f16;
    if (t.code == (uint8_t)code::Bfloat && t.bits == 16) return DType::bf16;
    if (t.code == (uint8_t)code::Int && t.bits == 8) return DType::i8;
    if (t.code == (uint8_t)code::UInt && t.bits == 8) return DType::u8;
    if (t.code == (uint8_t)code::Int && t.bits == 32) return DType::i32;
    if (t.code == (uint8_t)code::Int && t.bits == 64) return DType::i64;
  }
  throw std::invalid_argument("unsupported element type (code " + std::to_string(t.code) +
                              ", " + std::to_string(t.bits) + " bits): expected float32, "
                              "float64, float16, bfloat16, int8, uint8, int32 or int64");
}

inline nb::dlpack::dtype dlpack_of(DType d) {
  using code = nb::dlpack::dtype_code;
  switch (d) {
    case DType::f32: return {(uint8_t)code::Float, 32, 1};
    case DType::f64: return {(uint8_t)code::Float, 64, 1};
    case DType::f16: return {(uint8_t)code::Float, 16, 1};
    case DType::bf16: return {(uint8_t)code::Bfloat, 16, 1};
    case DType::i8: return {(uint8_t)code::Int, 8, 1};
    case DType::u8: return {(uint8_t)code::UInt, 8, 1};
    case DType::i32: return {(uint8_t)code::Int, 32, 1};
    case DType::i64: return {(uint8_t)code::Int, 64, 1};
  }
  return {};
}

// A Python tensor (any DLPack producer: numpy, torch, a pool array) as an Array, the way
// a function argument converts (nb::cast's `manual` conversion can refuse nanobind's
// own array objects); a clear TypeError otherwise.
inline Array as_array(nb::handle h, const char* what) {
  nb::detail::make_caster<Array> caster;
  nb::detail::cleanup_list cleanup(nullptr, NB_CTX);
  bool ok = caster.from_python(h, (uint8_t)nb::detail::cast_flags::convert, &cleanup);
  Array result = ok ? caster.value : Array();
  cleanup.release();
  if (!ok)
    throw nb::type_error((std::string(what) + ": expected a C-contiguous tensor (numpy, torch or a pool "
                          "array, anything with __dlpack__), got " +
                          nb::cast<std::string>(nb::str(h.type()))).c_str());
  return result;
}

// `expected` is the device the module's backend reads (CPU for MPI, CUDA for NCCL).
inline Buffer to_buffer(const Array& a, DeviceKind expected, const char* what) {
  DeviceKind device;
  if (a.device_type() == nb::device::cpu::value || a.device_type() == nb::device::cuda_host::value)
    device = DeviceKind::cpu;
  else if (a.device_type() == nb::device::cuda::value)
    device = DeviceKind::cuda;
  else
    throw std::invalid_argument(std::string(what) + ": tensor on an unsupported device");
  if (device != expected)
    throw std::invalid_argument(std::string(what) + ": tensor is on " +
                                (device == DeviceKind::cpu ? "the CPU" : "a GPU") +
                                ", this backend needs it on " +
                                (expected == DeviceKind::cpu ? "the CPU" : "a GPU"));
  return Buffer{a.data(), a.size(), dtype_of(a.dtype()), device, a.device_id()};
}

// A handle: the Work and the arrays it reads or writes, kept alive until it is waited.
template <typename Tag>
struct PyWork {
  std::unique_ptr<Work> work;
  std::vector<nb::object> keep;

  void wait() {
    {
      nb::gil_scoped_release released;
      work->wait();
    }
    keep.clear();
  }
  // The arrays stay held by the handle: the operation may still be running on the GPU.
  void wait_on_stream(uintptr_t stream) { work->wait_on_stream(stream); }
  bool test() { return work->test(); }
};

// One op of a group with the arrays it names.
template <typename Tag>
struct PyOp {
  CollectiveOp op;
  std::vector<nb::object> keep;
};

template <typename Tag>
void bind_work_and_ops(nb::module_& m, DeviceKind device) {
  using W = PyWork<Tag>;
  using O = PyOp<Tag>;
  nb::class_<W>(m, "Work", "A pending operation; wait() completes and consumes it.")
      .def("wait", &W::wait, "Blocks until the operation is done; a second wait raises CommError.")
      .def("wait_on_stream", &W::wait_on_stream, nb::arg("stream"),
           "Makes a CUDA stream (its handle as an int) wait for the operation without "
           "blocking the host; consumes the handle. On CPU backends the same as wait().")
      .def("test", &W::test, "True once the operation is done (does not consume the handle).")
      .def_prop_ro("consumed", [](const W& w) { return w.work->consumed(); })
      .def_prop_ro("description", [](const W& w) { return w.work->description(); })
      .def("__repr__", [](const W& w) {
        return "<Work " + w.work->description() + (w.work->consumed() ? " (waited)>" : ">");
      });

  auto op = [device](OpKind kind, nb::object input, nb::object output, const std::string& reduce,
                     int peer, int tag) {
    O result;
    result.op.kind = kind;
    result.op.op = reduce_op_from_name(reduce);
    result.op.peer = peer;
    result.op.tag = tag;
    if (!input.is_none()) {
      result.op.input = to_buffer(as_array(input, op_kind_name(kind)), device, op_kind_name(kind));
      result.keep.push_back(input);
    }
    if (!output.is_none()) {
      result.op.output = to_buffer(as_array(output, op_kind_name(kind)), device, op_kind_name(kind));
      result.keep.push_back(output);
    }
    if (kind == OpKind::all_reduce || kind == OpKind::broadcast) result.op.input = result.op.output;
    return result;
  };
  nb::class_<O>(m, "Op", "One operation of a group (Communicator.group).")
      .def_static("all_gather", [op](nb::object i, nb::object o) {
        return op(OpKind::all_gather, i, o, "sum", 0, 0); }, nb::arg("input"), nb::arg("output"))
      .def_static("reduce_scatter", [op](nb::object i, nb::object o, const std::string& r) {
        return op(OpKind::reduce_scatter, i, o, r, 0, 0); },
        nb::arg("input"), nb::arg("output"), nb::arg("op") = "sum")
      .def_static("all_reduce", [op](nb::object t, const std::string& r) {
        return op(OpKind::all_reduce, nb::none(), t, r, 0, 0); },
        nb::arg("tensor"), nb::arg("op") = "sum")
      .def_static("all_to_all", [op](nb::object i, nb::object o) {
        return op(OpKind::all_to_all, i, o, "sum", 0, 0); }, nb::arg("input"), nb::arg("output"))
      .def_static("broadcast", [op](nb::object t, int root) {
        return op(OpKind::broadcast, nb::none(), t, "sum", root, 0); },
        nb::arg("tensor"), nb::arg("root"))
      .def_static("send", [op](nb::object t, int peer, int tag) {
        return op(OpKind::send, t, nb::none(), "sum", peer, tag); },
        nb::arg("tensor"), nb::arg("peer"), nb::arg("tag") = 0)
      .def_static("recv", [op](nb::object t, int peer, int tag) {
        return op(OpKind::recv, nb::none(), t, "sum", peer, tag); },
        nb::arg("tensor"), nb::arg("peer"), nb::arg("tag") = 0)
      .def_prop_ro("kind", [](const O& o) { return std::string(op_kind_name(o.op.kind)); });
}

// The communicator's methods, for a bound class whose C++ type holds `Communicator* get()`.
template <typename Tag, typename Class, typename Get>
void bind_communicator_methods(Class& cls, DeviceKind device, Get get) {
  using W = PyWork<Tag>;
  using O = PyOp<Tag>;
  using Self = typename Class::Type;
  // The handle holds the communicator too: its wait may poll it.
  auto wrap = [](Self& self, std::unique_ptr<Work> work, std::vector<nb::object> keep) {
    keep.push_back(nb::find(&self));
    return W{std::move(work), std::move(keep)};
  };
  cls.def_prop_ro("rank", [get](Self& s) { return get(s)->rank(); })
      .def_prop_ro("size", [get](Self& s) { return get(s)->size(); })
      .def_prop_ro("backend", [get](Self& s) { return std::string(get(s)->backend()); })
      .def_prop_ro("issued", [get](Self& s) { return get(s)->issued(); })
      .def_prop_rw("activity", [get](Self& s) { return get(s)->activity(); },
                   [get](Self& s, std::string a) { get(s)->set_activity(std::move(a)); })
      .def("all_gather", [=](Self& s, nb::object i, nb::object o) {
        return wrap(s, get(s)->all_gather(to_buffer(as_array(i, "all_gather"), device, "all_gather"),
                                       to_buffer(as_array(o, "all_gather"), device, "all_gather")), {i, o});
      }, nb::arg("input"), nb::arg("output"))
      .def("reduce_scatter", [=](Self& s, nb::object i, nb::object o, const std::string& r) {
        return wrap(s, get(s)->reduce_scatter(to_buffer(as_array(i, "reduce_scatter"), device, "reduce_scatter"),
                                           to_buffer(as_array(o, "reduce_scatter"), device, "reduce_scatter"),
                                           reduce_op_from_name(r)), {i, o});
      }, nb::arg("input"), nb::arg("output"), nb::arg("op") = "sum")
      .def("all_reduce", [=](Self& s, nb::object t, const std::string& r) {
        return wrap(s, get(s)->all_reduce(to_buffer(as_array(t, "all_reduce"), device, "all_reduce"),
                                       reduce_op_from_name(r)), {t});
      }, nb::arg("tensor"), nb::arg("op") = "sum")
      .def("all_to_all", [=](Self& s, nb::object i, nb::object o) {
        return wrap(s, get(s)->all_to_all(to_buffer(as_array(i, "all_to_all"), device, "all_to_all"),
                                       to_buffer(as_array(o, "all_to_all"), device, "all_to_all")), {i, o});
      }, nb::arg("input"), nb::arg("output"))
      .def("broadcast", [=](Self& s, nb::object t, int root) {
        return wrap(s, get(s)->broadcast(to_buffer(as_array(t, "broadcast"), device, "broadcast"), root), {t});
      }, nb::arg("tensor"), nb::arg("root"))
      .def("send", [=](Self& s, nb::object t, int peer, int tag) {
        return wrap(s, get(s)->send(to_buffer(as_array(t, "send"), device, "send"), peer, tag), {t});
      }, nb::arg("tensor"), nb::arg("peer"), nb::arg("tag") = 0)
      .def("recv", [=](Self& s, nb::object t, int peer, int tag) {
        return wrap(s, get(s)->recv(to_buffer(as_array(t, "recv"), device, "recv"), peer, tag), {t});
      }, nb::arg("tensor"), nb::arg("peer"), nb::arg("tag") = 0)
      .def("group", [=](Self& s, const std::vector<O>& ops) {
        std::vector<CollectiveOp> plain;
        std::vector<nb::object> keep;
        for (const O& o : ops) {
          plain.push_back(o.op);
          keep.insert(keep.end(), o.keep.begin(), o.keep.end());
        }
        return wrap(s, get(s)->group(plain), std::move(keep));
      }, nb::arg("ops"), "Issues the ops as one group (a fused bucket); one handle for all.")
      .def("abort", [get](Self& s, const std::string& message) { get(s)->abort(message); },
           nb::arg("message"), "Prints the message and stops every rank of the job.");
}

// A pool array: an ndarray over a pooled block that goes back to the pool when the last
// reference to the array is dropped (the runtime's release is dropping the array).
struct PoolBlock {
  std::shared_ptr<BufferPool> pool;
  void* pointer;
};

inline nb::object pool_array(const std::shared_ptr<BufferPool>& pool, const std::vector<size_t>& shape,
                             const std::string& dtype_name_) {
  DType dtype = dtype_from_name(dtype_name_);
  size_t count = 1;
  for (size_t extent : shape) count *= extent;
  void* pointer;
  {
    nb::gil_scoped_release released;
    pointer = pool->acquire(count * element_size(dtype));
  }
  nb::capsule owner(new PoolBlock{pool, pointer}, [](void* p) noexcept {
    auto* block = static_cast<PoolBlock*>(p);
    block->pool->release(block->pointer);
    delete block;
  });
  Allocator& allocator = pool->allocator();
  int device_type = allocator.device() == DeviceKind::cuda ? nb::device::cuda::value
                                                           : nb::device::cpu::value;
  if (device_type == nb::device::cpu::value)
    return nb::cast(nb::ndarray<nb::numpy>(pointer, shape.size(), shape.data(), owner, nullptr,
                                           dlpack_of(dtype), device_type, 0));
  // A device array as nanobind's own array-API object: its __dlpack__ can be taken any
  // number of times (a bare DLPack capsule, the framework-less default, is consumed by
  // its first reader: the pool array's second use would find it spent).
  return nb::cast(nb::ndarray<nb::array_api>(pointer, shape.size(), shape.data(), owner, nullptr,
                                             dlpack_of(dtype), device_type, allocator.device_id()));
}

inline nb::dict pool_stats(const BufferPool& pool) {
  PoolStats s = pool.stats();
  nb::dict d;
  d["in_use_bytes"] = s.in_use_bytes;
  d["cached_bytes"] = s.cached_bytes;
  d["peak_in_use_bytes"] = s.peak_in_use_bytes;
  d["allocations"] = s.allocations;
  d["reuses"] = s.reuses;
  return d;
}

template <typename Tag>
struct PyPool {
  std::shared_ptr<BufferPool> pool;
};

template <typename Tag>
void bind_pool(nb::module_& m, const char* name, const char* doc) {
  using P = PyPool<Tag>;
  nb::class_<P>(m, name, doc)
      .def("acquire", [](P& p, const std::vector<size_t>& shape, const std::string& dtype) {
        return pool_array(p.pool, shape, dtype);
      }, nb::arg("shape"), nb::arg("dtype") = "float32",
         "An array over a pooled block; the block returns to the pool when the array is dropped.")
      .def("stats", [](P& p) { return pool_stats(*p.pool); })
      .def("trim", [](P& p) { p.pool->trim(); }, "Frees every cached block.")
      .def_prop_ro("kind", [](P& p) { return std::string(p.pool->allocator().name()); });
}

// Offload/reload over an Offloader (a copy thread on CPU, a copy stream on GPU).
template <typename Tag>
struct PyHostCopy {
  std::shared_ptr<HostCopy> copy;
};

template <typename Tag, typename Class, typename Get>
void bind_offloader_methods(nb::module_& m, Class& cls, DeviceKind device, Get get) {
  using W = PyWork<Tag>;
  using C = PyHostCopy<Tag>;
  nb::class_<C>(m, "HostCopy", "An offloaded tensor's bytes in a host buffer.")
      .def_prop_ro("nbytes", [](const C& c) { return c.copy->nbytes(); })
      .def("to_numpy", [](const C& c, const std::string& dtype) {
        // A read-only-by-convention view for checks; the copy stays alive with it.
        DType d = dtype_from_name(dtype);
        size_t count = c.copy->nbytes() / element_size(d);
        auto* holder = new std::shared_ptr<HostCopy>(c.copy);
        nb::capsule owner(holder, [](void* p) noexcept {
          delete static_cast<std::shared_ptr<HostCopy>*>(p);
        });
        size_t shape[1] = {count};
        return nb::ndarray<nb::numpy>(c.copy->data(), 1, shape, owner, nullptr, dlpack_of(d),
                                      nb::device::cpu::value, 0);
      }, nb::arg("dtype") = "uint8");
  using Self = typename Class::Type;
  cls.def("offload", [=](Self& s, nb::object source) {
        auto [copy, work] = get(s)->offload(to_buffer(as_array(source, "offload"), device, "offload"));
        return nb::make_tuple(C{copy}, W{std::move(work), {source}});
      }, nb::arg("source"),
      "Starts copying `source` to a host buffer: returns (HostCopy, Work).")
      .def("reload", [=](Self& s, const C& copy, nb::object target) {
        return W{get(s)->reload(copy.copy, to_buffer(as_array(target, "reload"), device, "reload")),
                 {target}};
      }, nb::arg("copy"), nb::arg("target"), "Starts copying `copy` back into `target`: a Work.")
      .def("host_pool_stats", [get](Self& s) { return pool_stats(get(s)->host_pool()); });
}

// CommError and NoGpuError are Python classes of stagec.csrc.errors, one for both modules.
inline void register_errors() {
  // Held for the life of the process: released at exit, after the interpreter is gone,
  // an nb::object would touch a dead interpreter.
  static PyObject* comm_error =
      nb::object(nb::module_::import_("stagec.csrc.errors").attr("CommError")).release().ptr();
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const CommError& error) {
      PyErr_SetString(comm_error, error.what());
    }
  });
}

}  // namespace stagec::py
