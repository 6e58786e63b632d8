"""csrc's modules import and work in one process; the CUDA/NCCL module reports "no GPU".

On a machine without a GPU (CI, the developers' machines) the CUDA/NCCL module must still
import (it was compiled and linked against libnccl.so.2) and every request for a GPU must
raise NoGpuError with "no GPU" in its message, never crash.
"""

from __future__ import annotations

import numpy as np
import pytest

import stagec.csrc as csrc


def test_cpu_module_is_a_world_of_one_rank_without_mpiexec():
    comm = csrc.world()
    assert (comm.rank, comm.size, comm.backend) == (0, 1, "mpi")
    # One rank: an all-gather is a copy, a sum over ranks is the value itself.
    x = np.arange(5, dtype=np.float32)
    out = np.zeros(5, dtype=np.float32)
    comm.all_gather(x, out).wait()
    assert out.tolist() == [0, 1, 2, 3, 4]
    comm.all_reduce(out, "avg").wait()
    assert out.tolist() == [0, 1, 2, 3, 4]


def test_cuda_module_imports_and_reports_no_gpu():
    cuda = csrc.cuda()
    # NCCL's version as the header encodes it: major * 10000 + minor * 100 + patch (2.x).
    assert 20000 < cuda.nccl_version() < 30000
    count, reason = cuda.gpu_status()
    if count > 0:
        assert reason == "" and csrc.require_gpu() == count
        return
    assert csrc.gpu_count() == 0
    with pytest.raises(csrc.NoGpuError, match="^no GPU: "):
        csrc.require_gpu()
    with pytest.raises(csrc.NoGpuError, match="^no GPU"):
        cuda.device_pool(0)
    with pytest.raises(csrc.NoGpuError, match="^no GPU"):
        cuda.CudaOffloader(0)
    with pytest.raises(csrc.NoGpuError, match="^no GPU"):
        cuda.unique_id()


def test_pool_hands_back_a_released_block():
    pool = csrc.cpu().host_pool()
    # 1000 float32 = 4000 bytes, rounded up to the 512-byte quantum: 8 * 512 = 4096.
    first = pool.acquire((10, 100), "float32")
    assert first.shape == (10, 100) and first.dtype == np.float32
    address = first.ctypes.data
    assert pool.stats()["in_use_bytes"] == 4096
    del first  # dropping the array releases its block to the pool
    assert pool.stats() == {"in_use_bytes": 0, "cached_bytes": 4096, "peak_in_use_bytes": 4096,
                            "allocations": 1, "reuses": 0}
    # 900 float64 = 7200 bytes -> 15 * 512 = 7680; the cached 4096 block is too small.
    other = pool.acquire((900,), "float64")
    # 1000 float32 again: 4096, served by the cached block at the same address.
    again = pool.acquire((1000,), "float32")
    assert again.ctypes.data == address
    assert pool.stats()["allocations"] == 2 and pool.stats()["reuses"] == 1
    assert pool.stats()["in_use_bytes"] == 7680 + 4096
    del other, again
    pool.trim()
    assert pool.stats()["cached_bytes"] == 0


def test_offload_then_reload_restores_the_bytes():
    offloader = csrc.cpu().HostOffloader()
    x = np.linspace(-1, 1, 3001, dtype=np.float32)
    original = x.copy()
    copy, work = offloader.offload(x)
    # A reload issued before the offload is waited runs after it (one copy thread, in
    # order): the schedule may issue both back to back.
    restored = np.empty_like(x)
    reload = offloader.reload(copy, restored)
    reload.wait()
    work.wait()
    assert np.array_equal(restored, original)
    assert copy.nbytes == 3001 * 4
    assert np.array_equal(copy.to_numpy("float32"), original)
    with pytest.raises(csrc.CommError, match="reload of 12004 bytes into a tensor of 4 bytes"):
        offloader.reload(copy, np.zeros(1, dtype=np.float32))


def test_bad_calls_fail_with_a_clear_message():
    comm = csrc.world()
    with pytest.raises(csrc.CommError, match=r"rank 0 of 1 \(mpi\): all_gather #\d+: input is "
                                             r"float32 but output is float64"):
        comm.all_gather(np.zeros(2, np.float32), np.zeros(2, np.float64))
    with pytest.raises(ValueError, match="unknown reduction 'mean'"):
        comm.all_reduce(np.zeros(2), "mean")
    with pytest.raises(csrc.CommError, match="avg needs a floating dtype, got int32"):
        comm.all_reduce(np.zeros(2, np.int32), "avg")
    with pytest.raises(csrc.CommError, match="avg of float16 is not supported on MPI"):
        comm.all_reduce(np.zeros(2, np.float16), "avg")
    with pytest.raises(ValueError, match="unsupported element type"):
        comm.all_reduce(np.zeros(2, np.complex64))
    handle = comm.all_reduce(np.zeros(2))
    handle.wait()
    with pytest.raises(csrc.CommError, match="wait on a handle already waited: all_reduce"):
        handle.wait()


def test_gpu_smoke_says_no_gpu_and_writes_nothing(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    if csrc.gpu_count() > 0:
        pytest.skip("a GPU is here: bench/gpu_smoke.py runs for real (see its docstring)")
    script = Path(__file__).resolve().parents[3] / "bench" / "gpu_smoke.py"
    out = tmp_path / "gpu.json"
    done = subprocess.run([sys.executable, str(script), "--json", str(out)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.startswith("gpu_smoke: no GPU: ") and done.stderr.count("\n") == 1, done.stderr
    assert not out.exists()
