"""The analytical network model: how long a collective or a message takes, in integer
nanoseconds, exactly as ASTRA-sim's analytical backend computes it (../shared/ASTRA-SIM.md;
docs/simulator-network.md derives every rule from ASTRA-sim's source).

Contract: a `NetworkModel` is built from an ASTRA-sim network YAML + system JSON
(`from_astra`) or from a stagec hardware description (`from_hardware`). It answers
`collective_ns(kind, size, ranks)`, the time from when every member has issued a
collective to when the last member finishes it, and `p2p_ns(src, dst, size)`, one
message with no contention. It holds no simulation state: the event-driven engine
(runtime/sim/engine.py) decides when things start, serialises one communication node per
rank, and matches sends with receives. Inputs the model cannot compute faithfully raise
`CollectiveError` (a `ValueError`) instead of looping or guessing.

The model per collective (ASTRA-sim's Sys::generate_collective and its algorithms):
- the comm_size S is cut into chunks of C = floor(S / preferred-dataset-splits) bytes,
  raised to the system's NPU count except for all-gather; ceil(S / C) chunks, each C;
- a whole-system collective runs each chunk through phases, one per network dimension
  (all-gather from the last dimension down; all-reduce with localBWAware as
  reduce-scatter up, all-reduce on the last dimension, all-gather down); a phase on a
  dimension is a 1-D ring / direct / halving-doubling over that dimension's NPUs;
  a dimension runs `active-chunks-per-dimension` chunk-phases at once, first come first
  served;
- a sub-group (fewer members than the system) runs one 1-D ring over its members in the
  given order, each hop a point-to-point message, 10 ns per receive.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .astra_config import (
    COLLECTIVE_KEYS,
    ConfigError,
    Dimension,
    NetworkConfig,
    SystemConfig,
    load_network,
    load_system,
)

KINDS = tuple(COLLECTIVE_KEYS)
CONGESTION = ("unaware", "aware")
# A sub-group's ring is ASTRA-sim's RingTopology::Dimension::Local, whose packets take
# MemBus's "Fast" path: a fixed 10 cycles whatever endpoint-delay says (MemBus.cc).
SUBGROUP_ENDPOINT_DELAY_NS = 10


class CollectiveError(ValueError):
    """A collective (or message) the model cannot time as ASTRA-sim would, because
    ASTRA-sim itself hangs, aborts or has no closed form there; the message says which
    and what to change."""


@dataclass(frozen=True)
class Roofline:
    """ASTRA-sim's roofline for COMP nodes without a measured duration: peak compute
    (`peak-perf`) and local memory bandwidth (`local-mem-bw`), used only when
    `roofline-enabled` is set."""

    peak_perf: float  # FLOP/ns (= TFLOP/s x 1000)
    local_mem_bw: float  # bytes/ns (= decimal GB/s)
    enabled: bool

    def compute_ns(self, num_ops: int, tensor_size: int) -> int:
        """max(num_ops / peak, tensor_size / bandwidth) truncated to ns, in the double
        arithmetic of ASTRA-sim's Workload::issue_comp (perf = min(bw * intensity,
        peak); time = ops / perf). ASTRA-sim skips a node with tensor_size 0 and has no
        defined time for num_ops 0 (0 / 0): both take 0 ns here."""
        if tensor_size == 0 or num_ops == 0:
            return 0
        intensity = float(num_ops) / float(tensor_size)
        perf = min(self.local_mem_bw * 1e9 * intensity, self.peak_perf * 1e9)
        return int(float(num_ops) / perf * 1e9)


@dataclass(frozen=True)
class _Phase:
    """One chunk's step on one dimension: the algorithm, the collective type it runs
    there and the bytes it starts with."""

    dim: int
    algorithm: str
    kind: str
    size: int


class NetworkModel:
    """A hierarchical network and the system knobs that time collectives on it."""

    def __init__(self, network: NetworkConfig, system: SystemConfig, *, congestion: str = "unaware",
                 roofline: Roofline | None = None):
        if congestion not in CONGESTION:
            raise ConfigError(f"congestion must be one of {', '.join(CONGESTION)} (got {congestion!r})")
        if congestion == "aware" and len(network.dims) > 1:
            raise ConfigError(
                f"{network.source}: the congestion-aware backend models one dimension only "
                f"(ASTRA-sim rejects {len(network.dims)}-dimensional networks there); use congestion 'unaware'"
            )
        for kind, names in system.implementations.items():
            if len(names) != len(network.dims):
                raise ConfigError(
                    f"{system.source}: key '{COLLECTIVE_KEYS[kind]}' has {len(names)} entries but the "
                    f"network has {len(network.dims)} dimensions (give one per dimension)"
                )
        self.network = network
        self.system = system
        self.congestion = congestion
        self.dims = network.dims
        self.world = network.npus
        self.roofline = roofline
        self._strides = tuple(math.prod(d.npus for d in self.dims[:i]) for i in range(len(self.dims)))
        self._cache: dict[tuple[str, int, tuple[int, ...]], int] = {}
        self._rings: dict[tuple, list[int]] = {}  # _subgroup_finish by what it depends on

    # --- construction ------------------------------------------------------------

    @classmethod
    def from_astra(cls, network_yaml: str, system_json: str, *, congestion: str = "unaware") -> "NetworkModel":
        """ASTRA-sim's own inputs, as its analytical backend reads them."""
        network = load_network(network_yaml)
        system = load_system(system_json, dims_count=len(network.dims))
        roofline = Roofline(system.peak_perf_tflops * 1000.0, system.local_mem_bw_gbps, system.roofline_enabled)
        return cls(network, system, congestion=congestion, roofline=roofline)

    @classmethod
    def from_hardware(cls, hardware, world: int) -> "NetworkModel":
        """A stagec hardware description (runtime/cost/hardware_description.py): a Switch
        of `gpus_per_node` GPUs over the intra-node link, then a Switch across nodes over
        the inter-node link; bandwidth x efficiency; the link's latency charged once per
        message (half per Switch hop). System knobs: docs/simulator-network.md."""
        if isinstance(hardware, (str, Path)):
            from stagec.runtime.cost.hardware_description import load_hardware

            hardware = load_hardware(hardware)
        if not isinstance(world, int) or world < 1:
            raise ConfigError(f"{hardware.source}: world must be a positive number of GPUs (got {world!r})")
        per_node = hardware.gpus_per_node
        if world > per_node and world % per_node:
            raise ConfigError(
                f"{hardware.source}: {world} GPUs do not fill whole nodes of {per_node} "
                f"(gpus_per_node); give a multiple of {per_node}"
            )

        def switch(npus: int, link) -> Dimension:
            # Dividing by 2^30 is exact in binary floating point, so ASTRA-sim's
            # bw * 2^30 / 1e9 gives back bytes/s / 1e9 exactly.
            return Dimension("Switch", npus, link.bandwidth * link.efficiency / (1 << 30), link.latency_us * 1000.0 / 2)

        dims = []
        if world > 1:
            dims.append(switch(min(world, per_node), hardware.intra_node))
        if world > per_node:
            dims.append(switch(world // per_node, hardware.inter_node))
        network = NetworkConfig(tuple(dims), hardware.source)
        system = SystemConfig(
            implementations={kind: ("ring",) * len(dims) for kind in KINDS},
            preferred_dataset_splits=1,
            active_chunks_per_dimension=1,
            endpoint_delay_ns=10,
            local_mem_bw_gbps=hardware.memory_bandwidth * hardware.efficiency.memory / 1e9,
            collective_optimization="localBWAware",
            source=hardware.source,
        )
        return cls(network, system)

    # --- addresses and messages --------------------------------------------------

    def address(self, rank: int) -> tuple[int, ...]:
        """The rank's coordinate in each dimension, dimension 0 varying fastest."""
        return tuple((rank // stride) % dim.npus for stride, dim in zip(self._strides, self.dims))

    def p2p_ns(self, src: int, dst: int, size: int) -> int:
        """One message of `size` bytes from src to dst with no contention. Unaware:
        floor(hops * latency + size / B), charged in the first dimension where the two
        addresses differ. Aware: store and forward, hops x floor(latency + size / B)."""
        self._check_rank(src)
        self._check_rank(dst)
        if src == dst:
            raise CollectiveError(f"a message from rank {src} to itself has no network time (ASTRA-sim asserts src != dst)")
        if size < 0:
            raise CollectiveError(f"message size must be >= 0 bytes (got {size})")
        a, b = self.address(src), self.address(dst)
        dim_index = next(i for i in range(len(self.dims)) if a[i] != b[i])
        dim = self.dims[dim_index]
        return self._link_ns(dim, dim.hops(a[dim_index], b[dim_index]), size)

    def _link_ns(self, dim: Dimension, hops: int, size: int) -> int:
        bpns = dim.bandwidth_bytes_per_ns
        if self.congestion == "aware":
            return hops * int(dim.latency_ns + size / bpns)
        return int(hops * dim.latency_ns + size / bpns)

    def _reduction_ns(self, size: int) -> int:
        # PacketBundle: mem_write + 2 x mem_read, each floor(bytes / local-mem-bw).
        return 3 * int(size / self.system.local_mem_bw_gbps)

    # --- collectives -------------------------------------------------------------

    def collective_ns(self, kind: str, size: int, ranks: Sequence[int]) -> int:
        """Time from when every member of `ranks` has issued the collective to when the
        last one finishes it. `size` is the Chakra comm_size in bytes (for all_gather:
        each rank's shard); `ranks` the group in comm_group.json order."""
        key = (kind, size, tuple(ranks))
        cached = self._cache.get(key)
        if cached is None:
            cached = max(self.collective_finish_ns(kind, size, ranks))
            self._cache[key] = cached
        return cached

    def collective_finish_ns(self, kind: str, size: int, ranks: Sequence[int],
                             starts: Sequence[int] | None = None) -> list[int]:
        """When each member finishes, member by member, if member i issues it at
        `starts[i]` (default all 0). Uneven starts are modelled for sub-groups (a late
        rank delays the ranks after it in the ring, not itself); a whole-system
        collective starts when its last member issues it."""
        if kind not in KINDS:
            raise CollectiveError(f"unknown collective kind '{kind}' (valid: {', '.join(KINDS)})")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise CollectiveError(f"collective size must be a whole number of bytes >= 0 (got {size!r})")
        members = list(ranks)
        for rank in members:
            self._check_rank(rank)
        if len(set(members)) != len(members):
            raise CollectiveError(f"collective group {members} names a rank twice")
        starts = [0] * len(members) if starts is None else list(starts)
        if len(starts) != len(members):
            raise CollectiveError(f"{len(starts)} start times for {len(members)} members")
        if len(members) < 2:
            return starts[:]  # nothing to exchange
        chunk = self._chunk_size(kind, size)
        if chunk is None:
            return starts[:]
        chunks = -(-size // chunk)
        if len(members) == self.world:
            start = max(starts)
            return [start + self._whole_system_ns(kind, chunk, chunks)] * len(members)
        return self._subgroup_finish(kind, chunk, chunks, members, starts)

    def _chunk_size(self, kind: str, size: int) -> int | None:
        """Sys::determine_chunk_size: floor(S / splits), raised to the system's NPU count
        except for all-gather. None when there is nothing to send."""
        splits = self.system.preferred_dataset_splits
        chunk = size // splits
        if kind == "all_gather":
            if chunk == 0:
                raise CollectiveError(
                    f"all_gather of {size} bytes with preferred-dataset-splits {splits} makes a "
                    f"0-byte chunk, on which ASTRA-sim loops forever; give a comm_size >= {splits} "
                    "or fewer splits"
                )
            return chunk
        if size == 0:
            return None
        return max(chunk, self.world)

    # whole system: phases per dimension, flow shop over dimensions

    def _phases(self, kind: str, chunk: int) -> list[_Phase]:
        algorithms = self.system.implementations[kind]
        n_dims = len(self.dims)
        phases: list[_Phase] = []
        remain = chunk

        def add(dim: int, phase_kind: str) -> None:
            nonlocal remain
            phase = _Phase(dim, algorithms[dim], phase_kind, remain)
            phases.append(phase)
            remain = self._final_size(phase)

        if kind != "all_reduce" or self.system.collective_optimization == "baseline":
            order = range(n_dims - 1, -1, -1) if kind == "all_gather" else range(n_dims)
            for dim in order:
                add(dim, kind)
        else:  # localBWAware: reduce-scatter up, all-reduce on the last, all-gather down
            for dim in range(n_dims - 1):
                add(dim, "reduce_scatter")
            add(n_dims - 1, "all_reduce")
            for dim in range(n_dims - 2, -1, -1):
                add(dim, "all_gather")
        return phases

    def _final_size(self, phase: _Phase) -> int:
        n = self.dims[phase.dim].npus
        if phase.kind == "all_gather":
            return phase.size * n
        if phase.kind == "reduce_scatter":
            return phase.size // n
        return phase.size

    def _whole_system_ns(self, kind: str, chunk: int, chunks: int) -> int:
        phases = self._phases(kind, chunk)
        durations = [self._phase_ns(p) for p in phases]
        return _flow_shop(
            [p.dim for p in phases], durations, chunks, self.system.active_chunks_per_dimension, len(self.dims)
        )

    def _phase_ns(self, phase: _Phase) -> int:
        dim = self.dims[phase.dim]
        ep = self.system.endpoint_delay_ns
        if phase.algorithm == "ring":
            return self._ring_phase_ns(dim, phase.kind, phase.size, ep)
        if phase.algorithm == "direct":
            return self._direct_phase_ns(dim, phase.kind, phase.size, ep)
        if phase.algorithm == "halvingDoubling":
            return self._halving_doubling_ns(dim, phase.kind, phase.size, ep)
        raise CollectiveError(
            f"{self.system.source}: {phase.algorithm} ({COLLECTIVE_KEYS[phase.kind]} on dimension "
            f"{phase.dim}) is not modelled by stagec; use ring, direct or halvingDoubling"
        )

    def _ring_phase_ns(self, dim: Dimension, kind: str, size: int, ep: int) -> int:
        """Ring.cc: one send per step to the next NPU; every receive costs ep and, for
        the first n-1 receives of a reduce-scatter or all-reduce, a reduction R(m);
        plus ep before the first send: ep + L (d + ep) + n_red R(m)."""
        n = dim.npus
        message = size if kind == "all_gather" else size // n
        steps = {"all_reduce": 2 * (n - 1), "all_to_all": n * (n - 1) // 2}.get(kind, n - 1)
        reducing = n - 1 if kind in ("all_reduce", "reduce_scatter") else 0
        d = self._link_ns(dim, dim.hops(0, 1), message)
        return ep + steps * (d + ep) + reducing * self._reduction_ns(message)

    def _direct_phase_ns(self, dim: Dimension, kind: str, size: int, ep: int) -> int:
        """AllToAll.cc (direct): every NPU sends its n-1 messages at once after ep; each
        receive costs ep (+ R(m) when reducing); an all-reduce waits for every first-round
        message before sending the second round."""
        n = dim.npus
        message = size if kind == "all_gather" else size // n
        reduce_ns = self._reduction_ns(message) if kind in ("all_reduce", "reduce_scatter") else 0
        rounds = self._direct_round_ns(dim, message)  # delay to the NPU at offset 1..n-1
        if kind != "all_reduce":
            return 2 * ep + max(rounds) + reduce_ns
        # The first-round receives fire at ep + d_j; each frees a packet ep + R later;
        # the second round leaves in batches as freed packets meet "all received".
        arrivals = [ep + d for d in rounds]
        last_arrival = max(arrivals)
        sends, free, pending = [], 0, n - 1
        for ready in sorted(a + ep + reduce_ns for a in arrivals):
            free += 1
            if ready >= last_arrival and pending:
                batch = min(free, pending)
                sends.extend([ready] * batch)
                free -= batch
                pending -= batch
        return max(t + d + ep for t, d in zip(sends, rounds))

    def _direct_round_ns(self, dim: Dimension, message: int) -> list[int]:
        n = dim.npus
        if self.congestion == "aware":
            bpns = dim.bandwidth_bytes_per_ns
            if dim.topology == "Switch":
                # n-1 messages share the NPU's uplink, then fan out: the last one leaves
                # after n-2 serialisations and takes two store-and-forward links.
                one = (n - 2) * int(message / bpns) + 2 * int(dim.latency_ns + message / bpns)
                return [one] * (n - 1)
            if dim.topology == "FullyConnected":
                return [int(dim.latency_ns + message / bpns)] * (n - 1)
            raise CollectiveError(
                "direct on a congestion-aware Ring dimension shares links in ways with no closed "
                "form; use congestion 'unaware' or a Switch / FullyConnected dimension"
            )
        return [self._link_ns(dim, dim.hops(0, offset), message) for offset in range(1, n)]

    def _halving_doubling_ns(self, dim: Dimension, kind: str, size: int, ep: int) -> int:
        """HalvingDoubling.cc: log2(n) rounds (2 log2(n) for all-reduce), round k a
        pairwise exchange at ring offset 2^k (all-gather: n/2 down to 1) of a message
        that halves (reduce-scatter) or doubles (all-gather); each receive costs ep, and
        the receives that insert a reducing packet cost R of that packet's size."""
        n = dim.npus
        p = n.bit_length() - 1
        if n != 1 << p:
            raise CollectiveError(
                f"halvingDoubling on a dimension of {n} NPUs: ASTRA-sim's log2 rounds need a "
                "power of two; use ring or direct there"
            )
        if kind == "all_to_all":
            raise CollectiveError(
                "halvingDoubling all-to-all: ASTRA-sim exits 1 on it (unknown communication type); "
                "use ring or direct for all-to-all-implementation"
            )
        if self.congestion == "aware" and dim.topology == "Ring" and n > 2:
            raise CollectiveError(
                "halvingDoubling on a congestion-aware Ring dimension shares links in ways with "
                "no closed form; use congestion 'unaware'"
            )
        if kind == "all_gather":
            rounds = [(size << k, n >> (k + 1)) for k in range(p)]
            reduced: list[int] = []
        else:
            rounds = [(size >> (k + 1), 1 << k) for k in range(p)]
            if kind == "all_reduce":
                base = size >> (p + 1)
                rounds += [(base << (j + 1), n >> (j + 1)) for j in range(p)]
            # Packets 1..p-1 are the reducing ones (packet 0 and packet p are the
            # "zero-latency" packets of each half); each costs R of its own size.
            reduced = [rounds[i][0] for i in range(1, p)]
        total = ep
        for message, offset in rounds:
            total += self._link_ns(dim, dim.hops(0, offset), message) + ep
        return total + sum(self._reduction_ns(m) for m in reduced)

    # sub-groups: one ring over the members

    def _subgroup_finish(self, kind: str, chunk: int, chunks: int, members: list[int], starts: list[int]) -> list[int]:
        """CommunicatorGroup::get_collective_plan: a group smaller than the system is a
        1-D ring over its members in order (ring algorithm whatever the system JSON
        says); chunk c on a member starts when chunk c - a finished there."""
        n = len(members)
        message = chunk if kind == "all_gather" else chunk // n
        steps = {"all_reduce": 2 * (n - 1), "all_to_all": n * (n - 1) // 2}.get(kind, n - 1)
        reducing = n - 1 if kind in ("all_reduce", "reduce_scatter") else 0
        reduce_ns = self._reduction_ns(message) if reducing else 0
        hop = [self.p2p_ns(members[i - 1], members[i], message) for i in range(n)]  # into member i
        # The ring sees its members only through these hop times: the many groups of a
        # large job that sit alike on the network (every dp group of 1,024 ranks) share
        # one computation, which is O(steps x members) per chunk.
        key = (kind, chunk, chunks, tuple(hop), tuple(starts))
        known = self._rings.get(key)
        if known is None:
            known = self._rings[key] = self._ring_finish(chunks, hop, starts, steps, reducing, reduce_ns)
        return list(known)

    def _ring_finish(self, chunks: int, hop: list[int], starts: list[int], steps: int, reducing: int,
                     reduce_ns: int) -> list[int]:
        n = len(hop)
        active = self.system.active_chunks_per_dimension
        finished: list[list[int]] = []
        for c in range(chunks):
            begin = starts if c < active else finished[c - active]
            finished.append(_ring_steps(begin, hop, steps, reducing, reduce_ns, SUBGROUP_ENDPOINT_DELAY_NS))
        return [max(finished[c][i] for c in range(chunks)) for i in range(n)]

    # --- reporting ---------------------------------------------------------------

    def describe(self) -> str:
        """One line per dimension, for the CLI's summary."""
        lines = []
        for i, dim in enumerate(self.dims):
            algorithms = ", ".join(f"{kind} {self.system.implementations[kind][i]}" for kind in KINDS)
            lines.append(
                f"dim {i}: {dim.topology} x{dim.npus}, {dim.bandwidth_gbps:g} GB/s (2^30 B/s) per link, "
                f"{dim.latency_ns:g} ns per hop; {algorithms}"
            )
        system = self.system
        lines.append(
            f"{self.world} NPUs, congestion {self.congestion}; splits {system.preferred_dataset_splits}, "
            f"active chunks {system.active_chunks_per_dimension}, endpoint delay {system.endpoint_delay_ns} ns, "
            f"local memory {system.local_mem_bw_gbps:g} GB/s, {system.collective_optimization}"
        )
        return "\n".join(lines)

    def _check_rank(self, rank: int) -> None:
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < self.world:
            raise CollectiveError(f"rank {rank!r} is not an NPU of this {self.world}-NPU network (0..{self.world - 1})")


def _ring_steps(starts: Sequence[int], hop: Sequence[int], steps: int, reducing: int, reduce_ns: int,
                ep: int) -> list[int]:
    """One ring collective, member by member: member i sends step k to member i+1 once
    it has received step k-1 (+ ep, + R for the first `reducing` receives); a receive
    completes when the message arrives or, if later, when the member posts it (at its
    own send of that step). Returns each member's finish time."""
    n = len(starts)
    if len(set(starts)) == 1 and len(set(hop)) == 1:
        # Members alike (a group with one member per node, started together): every
        # send of a step leaves at the same time, so each step takes hop + ep (+ R) on
        # all of them - the loop below in closed form.
        return [starts[0] + ep + steps * (hop[0] + ep) + min(reducing, steps) * reduce_ns] * n
    send = [s + ep for s in starts]
    finish = list(send)
    for k in range(steps):
        after = [0] * n
        for i in range(n):
            arrival = max(send[i - 1] + hop[i], send[i])
            after[i] = arrival + ep + (reduce_ns if k < reducing else 0)
        send = after
        finish = after
    return finish


def _flow_shop(dims: Sequence[int], durations: Sequence[int], chunks: int, active: int, n_dims: int) -> int:
    """Chunks (identical jobs) through the phases in order; each dimension runs at most
    `active` chunk-phases at once, first come first served (ties in chunk order, as
    ASTRA-sim's ready list holds them). Returns when the last chunk finishes."""
    if not dims:
        return 0
    waiting = [deque() for _ in range(n_dims)]
    running = [0] * n_dims
    events: list[tuple[int, int, int]] = []  # (finish time, chunk, phase)
    done = 0

    def start(dim: int, now: int) -> None:
        while waiting[dim] and running[dim] < active:
            chunk, phase = waiting[dim].popleft()
            running[dim] += 1
            heapq.heappush(events, (now + durations[phase], chunk, phase))

    for chunk in range(chunks):
        waiting[dims[0]].append((chunk, 0))
    start(dims[0], 0)
    while events:
        now, chunk, phase = heapq.heappop(events)
        running[dims[phase]] -= 1
        if phase + 1 < len(dims):
            waiting[dims[phase + 1]].append((chunk, phase + 1))
            start(dims[phase + 1], now)
        else:
            done = now
        start(dims[phase], now)
    return done
