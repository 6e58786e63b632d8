"""The profile DeepCompile's passes read (deepcompile.md §3, Fig. 3; Table 1), made
without a GPU, in the version 2 profile format (profile.py):

- `profile_by_cost_model`: each position's time from the cost model (the roofline on a
  hardware description), P_mem(o) from the memory analysis, B_ag(o) and B_os(os_i)
  from the program's types, T_c(V) from the alpha-beta model;
- `profile_by_simulation`: the same memory, with each position's start and time from
  the simulator (runtime/sim: compute, communication and copies overlapping on their
  engines, so an all-gather's time includes its wait for the link), and T_c(V) from
  the simulator's network model.

A measured profile from the runtime's profiler (coming) writes the same format.

Positions are those of the memory analysis's schedule (passes/analysis/liveness.py) of
the program's step function: leaf ops in execution order, loop bodies unrolled; a
pass reads a profile of the program it runs on. The T_c(V) curve samples every
all-gather group size of the program at powers of two from 1 KiB to 4 GiB per rank,
plus the sizes the program gathers (interpolated in between, profile.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from math import prod
from types import MappingProxyType

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from stagec.runtime.cost.profile import (
    CollectiveSample,
    PositionSample,
    Profile,
    ScheduleProfile,
    StateFragment,
)

__all__ = ["CURVE_BYTES", "ProfiledProgram", "profile_by_cost_model", "profile_by_simulation"]

# per-rank bytes at which T_c(V) is sampled: 1 KiB .. 4 GiB
CURVE_BYTES = tuple(1 << k for k in range(10, 33))


class ProfiledProgram:
    """The step function of `module` under `bindings`, its schedule and memory."""

    def __init__(self, module: ModuleOp, bindings: Mapping[str, int]):
        from stagec.passes.analysis.accounting import find_function, module_bindings
        from stagec.passes.analysis.calls import stage_programs
        from stagec.passes.analysis.liveness import Evaluator, Schedule
        from stagec.passes.analysis.memory import analyze_memory

        if stage_programs(module):
            raise ValueError("a profile covers one step function; this module has pipeline stages")
        self.env = dict(module_bindings(module, bindings))
        self.bindings = {k: int(v) for k, v in bindings.items()}
        self.function = find_function(module)
        self.ev = Evaluator(self.env)
        self.memory = analyze_memory(self.function, self.ev)
        self.schedule = Schedule(self.function, self.ev)
        self.codes = self.schedule.leaf_codes()
        self.totals = self.memory.timeline.totals()

    def leaf_at(self, position: int) -> Operation:
        return self.schedule.leaves[int(self.codes[position])]

    def gathers(self) -> dict[int, tuple[int, int]]:
        """position -> (B_ag, group size) of each all-gather (or group of them)."""
        from stagec.dialects.stg.comm import AllGatherOp
        from stagec.dialects.stg.schedule import GroupOp

        out = {}
        for position in range(len(self.codes)):
            leaf = self.leaf_at(position)
            if isinstance(leaf, AllGatherOp):
                out[position] = (self.ev.device_bytes(leaf.results[0].type), self._group_size(leaf))
            elif isinstance(leaf, GroupOp) and leaf.collective_kind() is AllGatherOp:
                size = sum(self.ev.device_bytes(r.type) for r in leaf.outputs)
                out[position] = (size, self._group_size(leaf.members()[0]))
        return out

    def _group_size(self, op) -> int:
        return prod(int(self.env[a]) for a in op.axis_names)

    def state_fragments(self) -> tuple[StateFragment, ...]:
        """B_os: each optimizer state of each parameter (per layer of a stack)."""
        fragments = []
        for st in self.memory.states:
            if st.kind != "optimizer_states" or not st.bytes:
                continue
            each = st.bytes // st.multiplicity
            layers = [None] if st.multiplicity == 1 else list(range(st.multiplicity))
            fragments += [StateFragment(st.state, st.param or "", layer, each) for layer in layers]
        return tuple(fragments)

    def build(self, hardware: str, origin: str, micros, starts, curve) -> Profile:
        positions = tuple(
            PositionSample(p, self.leaf_at(p).name, float(micros[p]), int(self.totals[p]),
                           None if starts is None else float(starts[p]))
            for p in range(len(self.codes))
        )
        gathers = self.gathers()
        collectives = {}
        for n in sorted({n for _, n in gathers.values()}):
            sizes = sorted(set(CURVE_BYTES) | {size // n for size, _ in gathers.values() if size // n})
            collectives[("all_gather", n)] = tuple(
                CollectiveSample("all_gather", n, s, float(curve(s, n))) for s in sizes)
        return Profile(
            hardware, MappingProxyType({}), MappingProxyType(collectives), f"<{origin} profile>", origin,
            ScheduleProfile(self.function.sym_name.data, MappingProxyType(dict(self.bindings)), positions),
            MappingProxyType({p: size for p, (size, _) in gathers.items()}), self.state_fragments(),
        )


def _cost_model(hardware, cost):
    from stagec.runtime.cost.model import CostModel

    return cost if cost is not None else CostModel(hardware)


def profile_by_cost_model(module: ModuleOp, bindings: Mapping[str, int], hardware: str = "h100-sxm", *,
                          cost=None) -> Profile:
    """Each position's roofline time, P_mem, B_ag, B_os and the alpha-beta T_c(V)."""
    from stagec.dialects.stg.cost import CostInterface

    program = ProfiledProgram(module, bindings)
    model = _cost_model(hardware, cost)
    by_leaf: dict[int, float] = {}
    micros = []
    for position in range(len(program.codes)):
        code = int(program.codes[position])
        if code not in by_leaf:
            leaf = program.schedule.leaves[code]
            by_leaf[code] = model.op_cost(leaf, program.env).micros if isinstance(leaf, CostInterface) else 0.0
        micros.append(by_leaf[code])
    return program.build(model.hardware.name, "cost-model", micros, None,
                         lambda size, n: model.collective_micros("all_gather", size, n))


def profile_by_simulation(module: ModuleOp, bindings: Mapping[str, int], hardware: str = "h100-sxm", *,
                          cost=None, network=None) -> Profile:
    """Each position's simulated start and time (the first actor: rank 0 and the ranks
    that behave as it does), P_mem, B_ag, B_os, and T_c(V) from the network model over
    the first `n` ranks."""
    from stagec.runtime.chakra.emit import build_programs
    from stagec.runtime.cost.hardware_description import load_hardware
    from stagec.runtime.sim.engine import simulate
    from stagec.runtime.sim.from_ir import build_actors
    from stagec.runtime.sim.network import NetworkModel

    program = ProfiledProgram(module, bindings)
    model = _cost_model(hardware, cost)
    programs, space = build_programs(module, bindings, cost=model)
    if network is None:
        network = NetworkModel.from_hardware(load_hardware(model.hardware.name), max(space.world, 1))
    actors = build_actors(programs, space, network)
    times = simulate(actors)
    actor = next(a for a in actors if 0 in a.ranks) if any(0 in a.ranks for a in actors) else actors[0]
    t = times[actors.index(actor)]
    length = len(program.codes)
    first = [None] * length
    busy = [0] * length
    sim = actor.program
    if sim.positions != length:
        raise ValueError(f"the emitter numbered {sim.positions} positions, the memory analysis {length}: "
                         "the profile cannot place the simulated times")
    for node, position in enumerate(sim.position):
        if 0 <= position < length and t.end[node] >= 0:
            start = t.start[node]
            first[position] = start if first[position] is None else min(first[position], start)
            busy[position] += t.end[node] - start
    starts, last = [], 0
    for position in range(length):  # an op without a node starts with the node before it
        last = first[position] if first[position] is not None else last
        starts.append(last / 1000.0)
    micros = [b / 1000.0 for b in busy]
    return program.build(model.hardware.name, "simulator", micros, starts,
                         lambda size, n: network.collective_ns("all_gather", size, list(range(n))) / 1000.0)
