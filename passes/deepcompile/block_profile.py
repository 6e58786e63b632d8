"""The profile (deepcompile.md Table 1) seen per op of one block of a scheduled step.

A DeepCompile pass rewrites one block at a time (the ops of a phase, of a layer body):
its S_0 is the block's ops in order. The profile is per position of the memory
analysis's schedule (runtime/cost/profile.py, version 2), where a layer body's op runs
once per layer and an op with regions (a loop, a nested phase) covers many positions.
So per op of a block:

- `p_mem(op)`: the largest P_mem over every position the op covers (each iteration of
  the loops around it, every op inside it) - the bound that must stay under M for the
  op, in every iteration, to stay under M;
- `micros(op)`: its time summed over the positions it covers, divided by the
  iterations of the loops around the block (one execution of the block's op);
- `b_ag(op)`: the gathered buffer of an all-gather (B_ag), from the profile where it
  has the position, else from the op's type.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from xdsl.ir import Operation

from stagec.runtime.cost.profile import Profile, ProfileError


class BlockProfile:
    """Per-op P_mem, time and B_ag of every op of one step function (module doc)."""

    def __init__(self, module, profile: Profile | None, bindings: Mapping[str, int] | None = None,
                 hardware: str = "h100-sxm"):
        from stagec.runtime.cost.profiling import ProfiledProgram, profile_by_cost_model

        if profile is not None and profile.schedule is None:
            raise ProfileError(f"{profile.source}: the profile has no 'schedule' (per-position memory): "
                               "a DeepCompile pass needs a version 2 profile of the program it runs on")
        if bindings is None:
            bindings = dict(profile.schedule.bindings) if profile is not None else {}
        self.program = ProfiledProgram(module, bindings)
        if profile is None:
            profile = profile_by_cost_model(module, bindings, hardware)
        positions = profile.schedule.positions
        if len(positions) != len(self.program.codes):
            raise ProfileError(
                f"{profile.source}: its schedule has {len(positions)} positions, the program "
                f"{len(self.program.codes)}: profile the program the pass runs on")
        self.profile = profile
        codes = self.program.codes
        n_leaves = len(self.program.schedule.leaves)
        mem = np.asarray([p.mem_before_bytes for p in positions], dtype=np.int64)
        time = np.asarray([p.micros for p in positions], dtype=np.float64)
        self._leaf_mem = np.zeros(n_leaves, dtype=np.int64)
        np.maximum.at(self._leaf_mem, codes, mem)
        self._leaf_time = np.zeros(n_leaves, dtype=np.float64)
        np.add.at(self._leaf_time, codes, time)
        self._leaf_runs = np.bincount(codes, minlength=n_leaves)
        self._leaf_id = {id(op): i for i, op in enumerate(self.program.schedule.leaves)}
        self._gather_bytes = {int(codes[p]): b for p, b in profile.all_gathers.items()}
        self._memo: dict[int, tuple[int, float]] = {}

    @property
    def env(self) -> dict:
        return self.program.env

    def _leaves(self, op: Operation) -> list[int]:
        if id(op) in self._leaf_id:
            return [self._leaf_id[id(op)]]
        return [self._leaf_id[id(o)] for o in op.walk() if id(o) in self._leaf_id]

    def p_mem(self, op: Operation) -> int:
        leaves = self._leaves(op)
        return int(self._leaf_mem[leaves].max()) if leaves else 0

    def micros(self, op: Operation) -> float:
        """One execution's time: the op's total over the step over its runs."""
        leaves = self._leaves(op)
        if not leaves:
            return 0.0
        runs = max(int(self._leaf_runs[leaves].min()), 1)
        return float(self._leaf_time[leaves].sum()) / runs

    def b_ag(self, gather: Operation) -> int:
        leaf = self._leaf_id.get(id(gather))
        if leaf is not None and leaf in self._gather_bytes:
            return self._gather_bytes[leaf]
        return sum(self.program.ev.device_bytes(r.type) for r in gather.results)

    def contains(self, op: Operation) -> bool:
        return bool(self._leaves(op))


def profiled_view(pass_name: str, module, profile: Profile | None, bindings: Mapping[str, int] | None,
                  hardware: str, memory_limit: int) -> tuple[BlockProfile, int]:
    """What a DeepCompile pass starts from: the step's profile (the given one, else the
    cost model's on `hardware`) and its memory limit M in bytes (`memory_limit`, or
    0 for the hardware's HBM capacity); a missing size or a bad profile is a PassError
    naming `pass_name`."""
    from stagec.passes.analysis.liveness import AccountingError
    from stagec.passes.diagnostics import PassError

    try:
        view = BlockProfile(module, profile, bindings, hardware)
    except ProfileError as error:
        raise PassError(str(error)) from None
    except AccountingError as error:
        raise PassError(f"{pass_name} needs every size bound ({error}): run stg-instantiate{{B=.. S=..}} first, "
                        "or give a profile (its schedule.bindings bind them)") from None
    if memory_limit > 0:
        return view, memory_limit
    from stagec.runtime.cost.hardware_description import load_hardware

    return view, int(load_hardware(hardware).memory_capacity)
