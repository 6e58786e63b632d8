"""The measured profile: `stagec run --profile FILE` (issue 18 item 4; DeepCompile's
profiling step, deepcompile.md §3 and Fig. 3, on the real ranks).

`RunProfiler(module, bindings, execution)` watches one rank's execution (execution.py
calls `measure` around every op it runs) and writes the version 2 profile
(runtime/cost/profile.py) that `stagec compile --profile FILE` and the DeepCompile
passes read, with the positions the cost model's and the simulator's profiles use
(runtime/cost/profiling.py `ProfiledProgram`: the memory analysis's schedule of the
step function, leaf ops in execution order, loops unrolled):

- `schedule.positions[p].micros`: the wall time of the op at position p on this rank
  (perf_counter around the op's implementation, nested ops of a stg.vjp or a
  stg.group included), the median over the profiled steps (every step after the
  first, which warms up; with one step, that step). A collective's position times
  its issue (csrc calls are asynchronous); its stg.wait times what is left of it.
  On a GPU rank the host waits for the compute stream before and after a timed op
  (device.py `synchronize`), so an op's time is its kernels', not their launch; a
  collective's issue still leaves the NCCL stream running, its wait does not.
  `start_micros` is the sum of the times before it (the rank runs its ops in
  order), so the profiler's own memory scans between ops are not in it.
- `schedule.positions[p].mem_before_bytes`: P_mem(o), in the format's sense (what is
  live while o runs): the bytes of the distinct tensor storages this rank holds just
  before o - its parameter and optimizer-state shards (state.py's entries), every
  SSA value the execution holds (values not yet released; a finished collective's
  result; an in-flight one's buffers, the tensors its completion holds) - plus the
  storages o's results add. Host copies (stg.offload) and the temporaries inside an
  op's kernel are not counted; nor is the allocator's slack. Taken in the last step
  only (the scan is Python over every held value, slow next to a tiny model's ops;
  it runs outside the op's timed interval).
- `ops`: the same times by op key (`op_signature`), each the median of all samples
  of that key, so the cost model can read them too.
- `collectives`: T_c(V), all-gathers over the communicator of the program's first
  all-gather's axes (FSDP's), timed after the training steps on every rank
  (all ranks take part; rank 0's times are kept), on that group's communicator and
  the rank's device (NCCL on device buffers on a GPU rank, the host waiting for each
  call): per-rank sizes 2^16 .. 2^24 bytes
  and the sizes the program itself gathers, each `repeats` (5) times after one
  untimed call, each timed call after a barrier, the median.
- `all_gathers`, `optimizer_states`: from the program's types, as profiling.py.
- `notes`: `peak_live_bytes`, the largest live-bytes sample of the scanned step (the
  maximum of P_mem), `memory_step`, the steps timed (`profiled_steps`), the rank.

Only rank 0 writes the file (to a temporary name, then renamed). Pipelined modules
(several stage programs) have no single schedule: `stagec run` refuses --profile
with --pp before launch.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable, Mapping
from types import MappingProxyType

import torch
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from stagec.runtime.cost.profile import CollectiveSample, PositionSample, Profile, ScheduleProfile, SignatureError, op_signature
from stagec.runtime.cost.profiling import ProfiledProgram
from stagec.runtime.interpreter.errors import InterpreterError
from stagec.runtime.interpreter.values import Token

__all__ = ["CURVE_BYTES", "RunProfiler"]

# per-rank bytes of the T_c(V) sweep: 64 KiB .. 16 MiB
CURVE_BYTES = tuple(1 << k for k in range(16, 25))
HARDWARE = "measured"


class RunProfiler:
    """Per-position times and live bytes of one rank's steps (module doc)."""

    def __init__(self, module: ModuleOp, bindings: Mapping[str, int], execution):
        self.program = ProfiledProgram(module, bindings)
        self.execution = execution
        self.leaves = {op: i for i, op in enumerate(self.program.schedule.leaves)}
        self.length = len(self.program.codes)
        self.samples: list[list[float]] = [[] for _ in range(self.length)]
        self.mem: list[int] = [0] * self.length
        self.peak_live_bytes = 0
        self.profiled_steps: list[int] = []
        self.scanned_step: int | None = None
        self.recording = False
        self.scanning = False  # taking the live bytes (the last step only: the scan is slow)
        self._position = 0
        self._inside = False
        self.curve: dict[tuple[int, int], float] = {}  # (group size, per-rank bytes) -> micros

    # -- the steps -----------------------------------------------------------------------
    def start_step(self, record: bool, scan: bool) -> None:
        """`record`: time this step's ops; `scan`: take the live bytes before each."""
        self._position, self.recording, self.scanning = 0, record, scan

    def end_step(self, step: int) -> None:
        if self._position != self.length:
            raise InterpreterError(f"the profiler counted {self._position} positions in step {step}; the memory "
                                   f"analysis's schedule has {self.length}: the profile cannot place the times")
        if self.recording:
            self.profiled_steps.append(step)
        if self.scanning:
            self.scanned_step = step

    def measure(self, op: Operation, run: Callable[[Operation], None]) -> None:
        """Runs `op`; times it and takes the live bytes when it is a position."""
        if self._inside or op not in self.leaves:
            run(op)
            return
        position = self._position
        if position >= self.length or int(self.program.codes[position]) != self.leaves[op]:
            expected = self.program.leaf_at(position).name if position < self.length else "the end of the step"
            raise InterpreterError(f"the profiler expected {expected} at position {position}, the rank ran {op.name}")
        self._position += 1
        if not self.recording and not self.scanning:
            run(op)
            return
        before, storages = self._live() if self.scanning else (0, set())
        device = self.execution.device
        self._inside = True
        try:
            device.synchronize()
            start = time.perf_counter()
            run(op)
            device.synchronize()
            elapsed = time.perf_counter() - start
        finally:
            self._inside = False
        if self.recording:
            self.samples[position].append(elapsed * 1e6)
        if self.scanning:
            added = 0
            for result in op.results:
                if result in self.execution.values:
                    added += _storage_bytes(self.execution.values[result], self.execution.rank, storages)
            self.mem[position] = before + added
            self.peak_live_bytes = max(self.peak_live_bytes, before + added)

    def _live(self) -> tuple[int, set[int]]:
        """(bytes, storage pointers) of what this rank holds now (module doc)."""
        seen: set[int] = set()
        total = 0
        for tensor, _ in self.execution.state.entries.values():
            total += _add(tensor, seen)
        rank = self.execution.rank
        for value in self.execution.values.values():
            total += _storage_bytes(value, rank, seen)
        return total, seen

    # -- T_c(V) --------------------------------------------------------------------------
    def sweep_all_gather(self, comms, world, *, repeats: int = 5, sizes=CURVE_BYTES) -> None:
        """Times all-gathers over the program's first all-gather's communicator (every
        rank calls this, in step; module doc)."""
        from stagec.dialects.stg.comm import AllGatherOp
        from stagec.runtime.exec.comm import wait

        axes = next((op.axis_names for op in self.program.function.walk() if isinstance(op, AllGatherOp)), None)
        if axes is None:
            return
        group = comms.group(axes)
        if group.size < 2:
            return
        program_sizes = {size // n for size, n in self.program.gathers().values() if n == group.size and size // n}
        for per_rank in sorted(set(sizes) | program_sizes):
            count = max(1, per_rank // 4)
            send = torch.ones(count, dtype=torch.float32, device=comms.device.torch)
            recv = torch.empty(group.size * count, dtype=torch.float32, device=comms.device.torch)
            comms.device.synchronize()  # the buffers are filled before NCCL's stream reads them
            times = []
            for i in range(repeats + 1):
                if world.size > 1:
                    # the barrier is the MPI world's: host memory
                    wait(world.all_reduce(torch.zeros(1, device="cpu"), "sum"))  # start together
                start = time.perf_counter()
                wait(group.comm.all_gather(send, recv))
                if i:  # the first call warms up
                    times.append((time.perf_counter() - start) * 1e6)
            self.curve[(group.size, count * 4)] = statistics.median(times)

    # -- the file ------------------------------------------------------------------------
    def profile(self) -> Profile:
        if not self.profiled_steps or self.scanned_step is None:
            raise InterpreterError("no step was profiled")
        micros = [statistics.median(s) for s in self.samples]
        by_key: dict[str, list[float]] = {}
        for position in range(self.length):
            try:
                key = op_signature(self.program.leaf_at(position), self.program.bindings)
            except SignatureError:
                continue
            by_key.setdefault(key, []).extend(self.samples[position])
        p = self.program
        starts = [0.0]
        for t in micros[:-1]:  # the rank runs its ops one after another
            starts.append(starts[-1] + t)
        positions = tuple(PositionSample(i, p.leaf_at(i).name, micros[i], self.mem[i], starts[i])
                          for i in range(self.length))
        collectives: dict[tuple[str, int], tuple[CollectiveSample, ...]] = {}
        for (n, size), t in sorted(self.curve.items()):
            collectives[("all_gather", n)] = collectives.get(("all_gather", n), ()) + (
                CollectiveSample("all_gather", n, size, t),)
        return Profile(
            HARDWARE, MappingProxyType({k: statistics.median(v) for k, v in by_key.items()}),
            MappingProxyType(collectives), "<measured profile>", "measured",
            ScheduleProfile(p.function.sym_name.data, MappingProxyType(dict(p.bindings)), positions),
            MappingProxyType({q: size for q, (size, _) in p.gathers().items()}), p.state_fragments(),
        )

    def write(self, path: str, rank: int) -> None:
        """The profile as JSON, with `notes` (module doc); temporary name, then rename."""
        data = self.profile().to_json()
        data["notes"] = {"rank": rank, "profiled_steps": self.profiled_steps, "memory_step": self.scanned_step,
                         "peak_live_bytes": self.peak_live_bytes,
                         "micros": "median wall time per position over the profiled steps",
                         "mem_before_bytes": "bytes of the distinct tensor storages the rank holds before the op "
                                             "(state shards, unreleased values, in-flight buffers) plus its results'"}
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump(data, f, indent=1)
            f.write("\n")
        os.replace(tmp, path)


def _add(tensor: torch.Tensor, seen: set[int]) -> int:
    storage = tensor.untyped_storage()
    pointer = storage.data_ptr()
    if pointer in seen or storage.nbytes() == 0:
        return 0
    seen.add(pointer)
    return storage.nbytes()


def _storage_bytes(value, rank: int, seen: set[int]) -> int:
    """Bytes of the storages a held value keeps alive, not in `seen` (added to it)."""
    from stagec.runtime.exec.comm import Pending

    if isinstance(value, torch.Tensor):
        return _add(value, seen)
    if isinstance(value, (list, tuple)) and any(isinstance(v, (list, tuple)) for v in value):
        return sum(_storage_bytes(v, rank, seen) for v in value)  # a group's yielded values
    if isinstance(value, list):  # a PerRank list: this rank's local
        local = value[rank] if rank < len(value) else None
        return _storage_bytes(local, rank, seen) if local is not None else 0
    if isinstance(value, Token):
        return _storage_bytes(value.payload, rank, seen)
    if isinstance(value, Pending):
        whole = getattr(value, "_whole", None)
        if whole is not None:  # one member of a group: the group's buffers
            return _storage_bytes(whole, rank, seen)
        if value._done:
            return _storage_bytes(value._value, rank, seen)
        total = 0
        for cell in (value._finish.__closure__ or ()) if value._finish is not None else ():
            try:
                held = cell.cell_contents
            except ValueError:
                continue
            if isinstance(held, torch.Tensor):
                total += _add(held, seen)
        return total
    return 0
