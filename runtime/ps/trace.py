"""A Di-PS plan as Chakra traces (issue 19 item 6): one outer round in which every cluster
takes part, for `stagec simulate` (or ASTRA-sim) to time before anyone rents clusters.

Ranks: clusters 0..k-1 (plan order), slave PSs k..k+n-1, the master k+n. Each rank's
nodes form one chain, in this order (di-ps.md §3.2; the IR's round, dialects/ps):

- cluster c: COMP, its H inner steps, H * tokens_per_step / throughput * (1 + extra_delay)
  seconds; SEND push request -> master; RECV go <- master; per layer in its push steps:
  RECV ready <- slave, SEND the layer -> slave; SEND prepare -> master, RECV ack <- master,
  SEND commit -> master (the two-stage commit); RECV pull notice <- master; per layer in
  the pull steps: SEND ready -> slave, RECV the layer <- slave.
- slave s: per transfer to it in schedule order: (for a cluster's first, RECV go <- master)
  SEND ready -> cluster, RECV the layer <- cluster; RECV update <- master; COMP the
  update, its bytes / `slave_update_bytes_per_s`; SEND done -> master; per pull transfer:
  RECV ready <- cluster, SEND the layer -> cluster.
- master: per cluster in the order their inner steps end: RECV request, SEND go to it
  and to every slave it pushes to; per cluster in the order of its last push step:
  RECV prepare, SEND ack, RECV commit; COMP the grace window (it closes `grace` after
  the last commit, Algorithm 1 lines 8-10); SEND update -> every slave, RECV done <-
  every slave; SEND pull notice -> every cluster.

The `ready` message is the slave taking the next layer, so a slave receives from one
cluster at a time in the schedule's order (Fig. 5); in a pull, the cluster's `ready`
takes the next layer, so a cluster receives from one slave at a time: a simulated
message has its own link per slave, while the cluster's link to the PS cluster, B[p][c],
is one (without it, a cluster pulled from all its slaves at once, 414 GB in 146 s over
production9's 1.25 GB/s links, 2.3x what they carry). Control messages are
`control_bytes` each. Messages between a cluster and the PS cluster p cross B[p][c];
the master and slaves talk over B[p][p]. These go into `<prefix>.links.json`
(runtime/sim/links.py), beside `<prefix>.<rank>.et`, `comm_group.json` (no collectives:
`{}`) and `<prefix>.ranks.json` (every rank its own class).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass

from stagec.runtime.chakra.staging import Staging
from stagec.runtime.chakra.schema import Node, NodeType
from stagec.runtime.chakra.wire import TraceWriter, write_comm_groups
from stagec.runtime.ps.plan import Plan
from stagec.runtime.sim.links import LINKS_FILE, LinkNetwork, write_links

# Tags: one per message kind, a layer's data messages offset by its index.
TAG_REQUEST, TAG_GO, TAG_PREPARE, TAG_ACK, TAG_COMMIT, TAG_UPDATE, TAG_DONE, TAG_NOTICE = range(1, 9)
TAG_READY, TAG_PUSH, TAG_PULL, TAG_GO_SLAVE, TAG_PULL_READY = 1 << 20, 2 << 20, 3 << 20, 4 << 20, 5 << 20
# Table 2 (di-ps.md §5.4): an update of a 100B model (400 GB in f32) on 16 slaves takes 110 s.
TABLE2_UPDATE_BYTES_PER_S = 400e9 / 16 / 110


class TraceError(ValueError):
    """A plan that cannot be traced (e.g. no tokens_per_step), or a write that failed."""


@dataclass(frozen=True)
class TraceOptions:
    """What a plan does not say: the size of a control message, how fast a slave
    applies the outer step, per-link latency, the files' prefix."""

    control_bytes: int = 256
    slave_update_bytes_per_s: float = TABLE2_UPDATE_BYTES_PER_S
    latency_ns: float = 0.0
    prefix: str = "dips"


@dataclass(frozen=True)
class Ranks:
    clusters: int
    slaves: int

    def cluster(self, c: int) -> int:
        return c

    def slave(self, s: int) -> int:
        return self.clusters + s

    @property
    def master(self) -> int:
        return self.clusters + self.slaves

    @property
    def world(self) -> int:
        return self.clusters + self.slaves + 1


_MAX_NS = 2.0**63


def inner_seconds(plan: Plan, c: int) -> float:
    """H inner steps of cluster c: H * tokens_per_step / throughput * (1 + extra_delay)."""
    cluster = plan.clusters[c]
    return plan.inner_steps * plan.tokens_per_step / cluster.throughput * (1.0 + cluster.extra_delay)


class _Chain:
    """One rank's nodes, each depending on the one before."""

    def __init__(self, rank: int):
        self.rank = rank
        self.nodes: list[Node] = []

    def add(self, name: str, kind: NodeType, *, micros: int = 0, attrs: dict | None = None) -> None:
        deps = [self.nodes[-1].id] if self.nodes else []
        self.nodes.append(Node(len(self.nodes), name, kind, data_deps=deps, duration_micros=micros,
                               attrs=attrs or {}))

    def comp(self, name: str, seconds: float) -> None:
        # The simulator times a COMP node in int64 nanoseconds (runtime/sim/from_chakra.py).
        if not seconds * 1e9 < _MAX_NS:
            raise TraceError(f"'{name}' takes {seconds:.3g} s, longer than a trace can time ({_MAX_NS / 1e9 / 3.156e7:.0f} "
                             "years): give throughputs, delays, tokens_per_step and --update-rate of a real deployment")
        self.add(name, NodeType.COMP_NODE, micros=max(1, round(seconds * 1e6)))

    def send(self, name: str, dst: int, tag: int, size: int) -> None:
        self.add(name, NodeType.COMM_SEND_NODE,
                 attrs={"comm_src": self.rank, "comm_dst": dst, "comm_tag": tag, "comm_size": size})

    def recv(self, name: str, src: int, tag: int, size: int) -> None:
        self.add(name, NodeType.COMM_RECV_NODE,
                 attrs={"comm_src": src, "comm_dst": self.rank, "comm_tag": tag, "comm_size": size})


def build_nodes(plan: Plan, options: TraceOptions = TraceOptions()) -> list[list[Node]]:
    """Every rank's node chain (module docstring), rank order."""
    if plan.tokens_per_step <= 0:
        raise TraceError("the plan has no tokens_per_step: give `tokens_per_step` in the CONFIG "
                         "(an inner step's time is tokens_per_step / throughput)")
    k, n = len(plan.clusters), plan.num_slaves
    ranks = Ranks(k, n)
    ctl = options.control_bytes
    names = [c.name for c in plan.clusters]
    layers = plan.layers
    chains = [_Chain(r) for r in range(ranks.world)]
    master = chains[ranks.master]
    transfers = [x for step in plan.push_schedule for x in step]  # schedule order
    pushes = {c: [x for x in transfers if x.cluster == c] for c in range(k)}
    arrival = sorted(range(k), key=lambda c: (inner_seconds(plan, c), c))
    last_step = {c: max(t for t, step in enumerate(plan.push_schedule) for x in step if x.cluster == c)
                 for c in range(k)}
    commit_order = sorted(range(k), key=lambda c: (last_step[c], arrival.index(c)))

    for c in range(k):
        chain, m = chains[ranks.cluster(c)], ranks.master
        chain.comp(f"{names[c]}: {plan.inner_steps} inner steps", inner_seconds(plan, c))
        chain.send("push_request", m, TAG_REQUEST, ctl)
        chain.recv("push go", m, TAG_GO, ctl)
        for x in pushes[c]:
            s = ranks.slave(x.slave)
            chain.recv(f"slave {x.slave} ready for {layers[x.layer].prefix}", s, TAG_READY + x.layer, ctl)
            chain.send(f"push {layers[x.layer].prefix}", s, TAG_PUSH + x.layer, layers[x.layer].nbytes)
        chain.send("commit prepare", m, TAG_PREPARE, ctl)
        chain.recv("commit ack", m, TAG_ACK, ctl)
        chain.send("commit", m, TAG_COMMIT, ctl)
        chain.recv("pull_notice", m, TAG_NOTICE, ctl)
        for x in pushes[c]:
            s = ranks.slave(x.slave)
            chain.send(f"ready for pull {layers[x.layer].prefix}", s, TAG_PULL_READY + x.layer, ctl)
            chain.recv(f"pull {layers[x.layer].prefix}", s, TAG_PULL + x.layer, layers[x.layer].nbytes)

    for s in range(n):
        chain, m = chains[ranks.slave(s)], ranks.master
        mine = [x for x in transfers if x.slave == s]
        told: set[int] = set()
        for x in mine:
            c = ranks.cluster(x.cluster)
            if x.cluster not in told:
                told.add(x.cluster)
                chain.recv(f"go for {names[x.cluster]}", m, TAG_GO_SLAVE + x.cluster, ctl)
            chain.send(f"ready for {names[x.cluster]} {layers[x.layer].prefix}", c, TAG_READY + x.layer, ctl)
            chain.recv(f"push {layers[x.layer].prefix} from {names[x.cluster]}", c, TAG_PUSH + x.layer,
                       layers[x.layer].nbytes)
        chain.recv("update", m, TAG_UPDATE, ctl)
        owned = sum(layer.nbytes for layer, owner in zip(layers, plan.slave_of_layer) if owner == s)
        chain.comp("penalty + outer Nesterov step", owned / options.slave_update_bytes_per_s)
        chain.send("update done", m, TAG_DONE, ctl)
        for x in mine:
            c = ranks.cluster(x.cluster)
            chain.recv(f"{names[x.cluster]} ready for pull {layers[x.layer].prefix}", c, TAG_PULL_READY + x.layer, ctl)
            chain.send(f"pull {layers[x.layer].prefix} to {names[x.cluster]}", c, TAG_PULL + x.layer,
                       layers[x.layer].nbytes)

    slaves_of = {c: sorted({x.slave for x in pushes[c]}) for c in range(k)}
    for c in arrival:
        master.recv(f"push_request {names[c]}", ranks.cluster(c), TAG_REQUEST, ctl)
        master.send(f"go {names[c]}", ranks.cluster(c), TAG_GO, ctl)
        for s in slaves_of[c]:
            master.send(f"go {names[c]} to slave {s}", ranks.slave(s), TAG_GO_SLAVE + c, ctl)
    for c in commit_order:
        master.recv(f"commit prepare {names[c]}", ranks.cluster(c), TAG_PREPARE, ctl)
        master.send(f"commit ack {names[c]}", ranks.cluster(c), TAG_ACK, ctl)
        master.recv(f"commit {names[c]}", ranks.cluster(c), TAG_COMMIT, ctl)
    master.comp("grace window", plan.grace_window_s)
    for s in range(n):
        master.send(f"update slave {s}", ranks.slave(s), TAG_UPDATE, ctl)
    for s in range(n):
        master.recv(f"update done slave {s}", ranks.slave(s), TAG_DONE, ctl)
    for c in range(k):
        master.send(f"pull_notice {names[c]}", ranks.cluster(c), TAG_NOTICE, ctl)
    return [chain.nodes for chain in chains]


def link_network(plan: Plan, options: TraceOptions = TraceOptions()) -> LinkNetwork:
    """Both directions between each cluster c and every PS (B[p][c], p the PS cluster),
    and between the master and each slave (B[p][p])."""
    ranks = Ranks(len(plan.clusters), plan.num_slaves)
    p = plan.ps_cluster
    lat = options.latency_ns
    links = []
    servers = [ranks.slave(s) for s in range(plan.num_slaves)] + [ranks.master]
    for c in range(len(plan.clusters)):
        for server in servers:
            links += [(c, server, plan.bandwidth[p][c], lat), (server, c, plan.bandwidth[p][c], lat)]
    for s in range(plan.num_slaves):
        links += [(ranks.slave(s), ranks.master, plan.bandwidth[p][p], lat),
                  (ranks.master, ranks.slave(s), plan.bandwidth[p][p], lat)]
    _check_link_times(plan, options, min(bandwidth for _, _, bandwidth, _ in links))
    return LinkNetwork(ranks.world, links, source=LINKS_FILE.format(prefix=options.prefix))


def _check_link_times(plan: Plan, options: TraceOptions, slowest: float) -> None:
    """The simulator times a message in int64 nanoseconds (runtime/sim/links.py): the
    largest one on the slowest link must fit, or `stagec simulate` overflows."""
    largest = max([layer.nbytes for layer in plan.layers] + [options.control_bytes])
    seconds = (options.latency_ns + largest / slowest * 1e9) / 1e9
    if not seconds * 1e9 < _MAX_NS:
        raise TraceError(f"a {largest:,}-byte message over the slowest link ({slowest:.3g} bytes/s, latency "
                         f"{options.latency_ns / 1e3:.3g} us) takes {seconds:.3g} s, longer than a trace can time "
                         f"({_MAX_NS / 1e9 / 3.156e7:.0f} years): give bandwidths and --latency-us of a real deployment")


@dataclass(frozen=True)
class TraceReport:
    directory: str
    prefix: str
    world: int
    nodes: int
    roles: dict  # rank -> "cluster A" / "slave 3" / "master"


def write_traces(plan: Plan, out_dir: str, options: TraceOptions = TraceOptions()) -> TraceReport:
    """Write the plan's traces, links, comm_group.json and ranks file into `out_dir`
    (created if missing). They appear whole or not at all: written into a staging
    directory first (runtime/chakra/staging.py `Staging`), then made the result, replacing
    this prefix's previous traces (ranks beyond this world included), so the directory
    holds one job of that prefix; an interrupt or error leaves the previous ones."""
    chains = build_nodes(plan, options)
    network = link_network(plan, options)
    world = len(chains)
    prefix = options.prefix
    staging = None
    try:
        staging = Staging(out_dir)
        files: dict[int, tuple[int, str]] = {}
        for rank, nodes in enumerate(chains):
            path = os.path.join(staging.path, f"{prefix}.{rank}.et")
            with TraceWriter(path) as writer:
                for node in nodes:
                    writer.write(node)
            files[rank] = (os.path.getsize(path), _digest(path))
        write_comm_groups(os.path.join(staging.path, "comm_group.json"), {})
        write_links(os.path.join(staging.path, LINKS_FILE.format(prefix=prefix)), network)
        _write_rank_classes(os.path.join(staging.path, f"{prefix}.ranks.json"), prefix, chains, files)
        staging.commit(_previous(out_dir, prefix))
    except OSError as error:
        shown = staging.shown(error.filename) if staging is not None else error.filename or out_dir
        if staging is not None:
            staging.discard()
        raise TraceError(f"cannot write {shown}: {error.strerror or error}") from None
    except BaseException:
        if staging is not None:
            staging.discard()
        raise
    k, n = len(plan.clusters), plan.num_slaves
    roles = {c: f"cluster {plan.clusters[c].name}" for c in range(k)}
    roles |= {k + s: f"slave {s}" for s in range(n)}
    roles[k + n] = "master"
    return TraceReport(out_dir, prefix, world, sum(len(c) for c in chains), roles)


def _digest(path: str) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as stream:
        h.update(stream.read())
    return h.hexdigest()


def _previous(out_dir: str, prefix: str) -> list[str]:
    """The files of this prefix's previous traces in `out_dir`, which the new ones
    replace (ranks beyond the new world included), and the shared comm_group.json."""
    names = []
    for name in os.listdir(out_dir) if os.path.isdir(out_dir) else ():
        head, _, tail = name.rpartition(".")
        rank = head[len(prefix) + 1:] if head.startswith(prefix + ".") else ""
        if (tail == "et" and rank.isdigit()) or name in (
                "comm_group.json", f"{prefix}.ranks.json", LINKS_FILE.format(prefix=prefix)):
            names.append(name)
    return names


def _write_rank_classes(path: str, prefix: str, chains: list[list[Node]], files: dict) -> None:
    """`<prefix>.ranks.json` as `stagec trace` writes it (runtime/chakra/emit.py): here
    every rank is a class of its own, its patch points its distinct (send|recv, peer)."""
    classes = []
    for rank, nodes in enumerate(chains):
        points: list[tuple[str, int]] = []
        for node in nodes:
            if node.type == NodeType.COMM_SEND_NODE:
                point = ("send", node.attrs["comm_dst"])
            elif node.type == NodeType.COMM_RECV_NODE:
                point = ("recv", node.attrs["comm_src"])
            else:
                continue
            if point not in points:
                points.append(point)
        classes.append({"ranks": [rank], "patches": [p[0] for p in points],
                        "values": {str(rank): [p[1] for p in points]}})
    doc = {"format": "stagec rank classes", "version": 1, "prefix": prefix, "world": len(chains),
           "classes": classes, "files": {str(r): list(files[r]) for r in sorted(files)}}
    temporary = f"{path}.tmp-{os.getpid()}"
    with open(temporary, "w", encoding="utf-8") as stream:
        stream.write(json.dumps(doc, separators=(",", ":")) + "\n")
    os.replace(temporary, path)
