"""The C++ runtime (csrc/): communicators over MPI and NCCL, buffer pools, offload.

Compiled modules, built by `pip install` (CMakeLists.txt):

- ``stagec.csrc.cpu()``: the CPU runtime (``MpiCommunicator``, ``host_pool``,
  ``HostOffloader``); needs libmpi from the ``mpich`` wheel.
- ``stagec.csrc.cuda()``: the GPU runtime (``NcclCommunicator``, ``device_pool``,
  ``pinned_pool``, ``CudaOffloader``); imported only when asked for, so a CPU-only
  program never loads libnccl. Without a GPU it imports, and every call that needs a
  GPU raises ``NoGpuError("no GPU: ...")``; ``gpu_count()`` says so without raising.
- ``stagec.csrc._mac``: the Di-PS payload MAC's GHASH (x86-64; runtime/ps/mac.py).

Tensors cross as DLPack (numpy arrays, torch tensors). Every operation returns a
``Work`` handle that ``wait()`` consumes. ``abort_on_failure`` turns a failure on one
rank into a stop of every rank with a message naming the rank and what it was doing.
The contract in full: docs/runtime.md.
"""

from __future__ import annotations

import atexit
import ctypes
import importlib
import importlib.metadata
import os
import sys
import traceback
from contextlib import contextmanager
from types import ModuleType
from typing import Iterator

from stagec.csrc.errors import CommError, MissingExtensionError, NoGpuError

__all__ = [
    "CommError",
    "MissingExtensionError",
    "NoGpuError",
    "abort_on_failure",
    "cpu",
    "cuda",
    "gpu_count",
    "require_gpu",
    "world",
]

_REBUILD = 'reinstall stagec to build it: pip install -e ".[test]"'


def _wheel_library(distribution: str, soname: str) -> str | None:
    """The path of the shared library `soname` that the wheel `distribution` installed."""
    try:
        files = importlib.metadata.distribution(distribution).files or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for entry in files:
        name = os.path.basename(str(entry))
        if name == soname:
            return str(entry.locate())
    return None


def _preload(distribution: str, soname: str) -> None:
    # The modules' rpaths point into site-packages; loading the wheel's library first,
    # globally, also serves layouts where those relative paths do not hold.
    path = _wheel_library(distribution, soname)
    if path and os.path.exists(path):
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)


def _import(name: str, needs: str) -> ModuleType:
    try:
        return importlib.import_module(f"stagec.csrc.{name}")
    except ImportError as error:
        raise MissingExtensionError(
            f"stagec.csrc.{name} ({needs}) could not be loaded: {error}; {_REBUILD}"
        ) from error


_cpu: ModuleType | None = None
_cuda: ModuleType | None = None


def cpu() -> ModuleType:
    """The CPU runtime module (MPI, host pool, copy-thread offload)."""
    global _cpu
    if _cpu is None:
        _preload("mpich", "libmpi.so.12")
        _cpu = _import("_cpu", "the MPI runtime")
        atexit.register(_finalize)
    return _cpu


def cuda() -> ModuleType:
    """The GPU runtime module (NCCL, device pools, copy-stream offload)."""
    global _cuda
    if _cuda is None:
        _preload("nvidia-nccl-cu13", "libnccl.so.2")
        _cuda = _import("_cuda", "the CUDA/NCCL runtime, built where nvcc was found")
    return _cuda


def gpu_count() -> int:
    """The number of GPUs the CUDA/NCCL module sees (0 where there is none)."""
    return cuda().gpu_status()[0]


def require_gpu() -> int:
    """The number of GPUs; raises NoGpuError("no GPU: <why>") where there is none."""
    count, reason = cuda().gpu_status()
    if count == 0:
        raise NoGpuError(f"no GPU: {reason}")
    return count


_world = None


def world():
    """The MPI communicator of every rank of the job (one per process)."""
    global _world
    if _world is None:
        _world = cpu().MpiCommunicator()
    return _world


def _finalize() -> None:
    global _world
    _world = None
    if _cpu is not None:
        _cpu.finalize()


@contextmanager
def abort_on_failure(comm=None) -> Iterator[None]:
    """Any exception escaping the block stops every rank of the job.

    The failing rank prints one line naming itself and what it was doing (the
    communicator's `activity`: the collective in flight, or what the runtime set), then
    its traceback, and aborts through `comm` (MPI_Abort / ncclCommAbort); mpiexec then
    stops the other ranks and exits non-zero. Without this, a rank that raised would
    leave the others blocked in their next collective.
    """
    comm = comm if comm is not None else world()
    try:
        yield
    except BaseException as error:  # noqa: BLE001 - every failure must stop the job
        if isinstance(error, SystemExit) and error.code in (None, 0):
            raise
        trace = "".join(traceback.format_exception(error))
        sys.stderr.write(trace)
        comm.abort(
            f"stagec: rank {comm.rank} of {comm.size} failed during {comm.activity}: "
            f"{type(error).__name__}: {error}; stopping every rank"
        )
