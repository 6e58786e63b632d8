"""What the simulator runs: per-rank programs of nodes with dependencies, and the
actors that run them.

A `SimProgram` is one node stream, shared by every rank that runs it (a rank class
of the scheduled IR, or one rank's Chakra trace). Node i has:

- `kind[i]`: COMP (the compute stream), COLL, SEND, RECV (the rank's communication
  engine) or COPY (the host-device copy engine);
- `deps[i]`: the nodes it waits for, data and control alike (both only order);
- `nanos[i]`: a COMP or COPY node's time; `size[i]`: its bytes (comm_size, or a
  COMP node's tensor_size), `flops[i]`: a COMP node's num_ops (for a roofline);
- `comm[i]`: a communication node's index into `refs` (-1 for others): what it says
  about its communicator or peer, as the source has it (an IR patch, a trace's
  pg_name or comm_src/comm_dst, with the tag); each actor resolves every ref once;
- `label[i]`: an index into `labels`, for timelines; `position[i]`: the position of
  the op that made it in the memory analysis's schedule (-1 when unknown).

An `Actor` is what the engine simulates: one rank, or one representative of ranks
that behave identically (engine.py says when that is exact), with its program and its
resolved communication.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

COMP, COLL, SEND, RECV, COPY = range(5)
KIND_NAMES = ("compute", "collective", "send", "recv", "copy")
COLLECTIVE_KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast")

# The engine a node occupies while it runs: ASTRA-sim's HardwareResource keeps one
# compute node, one communication node and one memory (copy) node in flight per rank.
ENGINE = (0, 1, 1, 1, 2)
ENGINES = ("compute", "communication", "copy")


@dataclass
class SimProgram:
    """One node stream (module docstring)."""

    name: str
    kind: list[int] = field(default_factory=list)
    deps: list[tuple[int, ...]] = field(default_factory=list)
    nanos: list[int] = field(default_factory=list)
    size: list[int] = field(default_factory=list)
    flops: list[int] = field(default_factory=list)
    comm: list[int] = field(default_factory=list)
    refs: list[tuple] = field(default_factory=list)
    label: list[int] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    position: list[int] = field(default_factory=list)
    positions: int = 0  # positions of the memory schedule per iteration (0: no memory analysis)

    def __len__(self) -> int:
        return len(self.kind)

    def add(self, kind: int, deps: Sequence[int], *, nanos: int = 0, size: int = 0, flops: int = 0,
            comm: int = -1, label: int = 0, position: int = -1) -> int:
        self.kind.append(kind)
        self.deps.append(tuple(deps))
        self.nanos.append(nanos)
        self.size.append(size)
        self.flops.append(flops)
        self.comm.append(comm)
        self.label.append(label)
        self.position.append(position)
        return len(self.kind) - 1

    def successors(self) -> list[list[int]]:
        succs: list[list[int]] = [[] for _ in self.kind]
        lists = [succs[d].append for d in range(len(succs))]
        for node, deps in enumerate(self.deps):
            for d in deps:
                lists[d](node)
        return succs


@dataclass
class Collective:
    """A collective node of one actor, resolved: what matches it across actors, who
    takes part, and how long it takes once all have issued it."""

    key: object  # equal on every member actor for the same communicator
    members: frozenset[int]  # actor indices
    nanos: int
    group: str  # for timelines: the communicator's name (comm_group.json key)
    what: tuple[str, int] = ("", 0)  # (collective kind, bytes): equal on every member, or the orders differ
    channel: str = ""  # what the report sums its time under: the mesh axes ("tp", "dp,tp"), or "group N"


@dataclass
class PointToPoint:
    """A send or recv node of one actor, resolved."""

    peer: int  # actor index
    tag: int
    nanos: int  # the message's time (a send's; a recv's is its sender's)
    peer_rank: int
    channel: str = ""  # the mesh axis ("pp"), or "p2p"


@dataclass
class Actor:
    """One simulated rank, or the representative of `ranks` (identical behaviour)."""

    index: int
    program: SimProgram
    ranks: list[int]
    comm: list[Collective | PointToPoint | None] = field(default_factory=list)  # program.refs, resolved
    representative: int | None = None  # the rank whose groups and peers `comm` holds (default: the first)

    @property
    def rank(self) -> int:
        return self.ranks[0] if self.representative is None else self.representative
