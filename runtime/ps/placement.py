"""Where Di-PS puts its parameter servers and in what order clusters push to them.

Three decisions, each a pure function of numbers (di-ps.md §3.1):

- `ps_cluster_scores` / `choose_ps_cluster`: the cluster whose CPU servers host the
  master and slave PSs, i* = argmax_i B_i^T p, with B_i the i-th column of the bandwidth
  matrix and p the clusters' throughputs (ties go to the lowest index);
- `assign_layers`: which slave PS owns each layer, balanced by bytes with LPT greedy
  (largest layer first, each to the least-loaded slave);
- `push_schedule`: the master's layer-wise schedule of Fig. 5, steps in which every
  cluster sends at most one layer and no slave receives from two clusters, in the
  fewest steps there can be (`push_steps_bound`).

`build_plan` puts them together with the rest of a configuration into a `Plan`.
"""

from __future__ import annotations

from collections.abc import Sequence

from stagec.runtime.ps.plan import Cluster, Layer, Plan, Transfer


def ps_cluster_scores(bandwidth: Sequence[Sequence[float]], throughputs: Sequence[float]) -> list[float]:
    """B_i^T p for every candidate cluster i: sum_j B[j][i] * p[j] (§3.1: B_i is the
    i-th *column* of B). For a symmetric B this is the i-th row's product as well."""
    n = len(throughputs)
    return [sum(bandwidth[j][i] * throughputs[j] for j in range(n)) for i in range(n)]


def choose_ps_cluster(bandwidth: Sequence[Sequence[float]], throughputs: Sequence[float]) -> int:
    """i* = argmax_i B_i^T p (§3.1); the lowest index among equal scores."""
    scores = ps_cluster_scores(bandwidth, throughputs)
    return max(range(len(scores)), key=lambda i: (scores[i], -i))


def assign_layers(layer_bytes: Sequence[int], num_slaves: int) -> tuple[int, ...]:
    """The slave of each layer, by LPT greedy: layers in decreasing size (the earlier
    layer first among equal sizes) each go to the slave with the fewest bytes so far
    (the lowest index among equals). Graham's bound: the largest load is at most
    (4/3 - 1/(3n)) times the best possible."""
    if num_slaves < 1:
        raise ValueError(f"need at least one slave PS (got {num_slaves})")
    loads = [0] * num_slaves
    owner = [0] * len(layer_bytes)
    for layer in sorted(range(len(layer_bytes)), key=lambda i: (-layer_bytes[i], i)):
        slave = min(range(num_slaves), key=lambda s: (loads[s], s))
        owner[layer] = slave
        loads[slave] += layer_bytes[layer]
    return tuple(owner)


def slave_loads(layer_bytes: Sequence[int], slave_of_layer: Sequence[int], num_slaves: int) -> list[int]:
    """Bytes each slave PS owns."""
    loads = [0] * num_slaves
    for nbytes, slave in zip(layer_bytes, slave_of_layer):
        loads[slave] += nbytes
    return loads


def push_steps_bound(num_clusters: int, slave_of_layer: Sequence[int]) -> int:
    """The fewest push steps that move every layer of every cluster to its slave.

    Each step a cluster sends at most one layer and a slave receives at most one.
    With L layers, k clusters and m_s layers on slave s:
    - a cluster sends L layers, one per step: at least L steps;
    - slave s receives its m_s layers from each of the k clusters, one per step: at
      least k * m_s steps.
    So T >= max(L, k * max_s m_s). `push_schedule` meets it, so it is the minimum.
    (This is König's theorem for the bipartite multigraph clusters x slaves, whose
    largest degree is that max.) With layers balanced over n slaves, max_s m_s =
    ceil(L / n) and T = max(L, k * ceil(L / n)): the slaves are the bottleneck when
    k * ceil(L/n) > L (Fig. 5a, more clusters than slaves), the clusters' own sending
    otherwise (Fig. 5b)."""
    if not slave_of_layer or num_clusters == 0:
        return 0
    counts: dict[int, int] = {}
    for slave in slave_of_layer:
        counts[slave] = counts.get(slave, 0) + 1
    return max(len(slave_of_layer), num_clusters * max(counts.values()))


def push_schedule(num_clusters: int, slave_of_layer: Sequence[int]) -> tuple[tuple[Transfer, ...], ...]:
    """The staggered push schedule of Fig. 5 in `push_steps_bound` steps.

    Lay the layers out in a cyclic order of T = push_steps_bound slots, grouped by
    slave (slave 0's layers, then slave 1's, ...), the T - L spare slots at the end.
    Cluster c sends, at step t, the layer in slot (t - c * m) mod T, with m = max_s m_s
    the most layers any slave owns: each cluster starts m slots after the previous one.

    Why no slave receives from two clusters in one step: clusters c < c' look at slots
    d * m apart (mod T), d = c' - c in 1..k-1, and m <= d * m <= (k-1) * m <= T - m, so
    the two slots are at least m apart either way round the cycle; one slave's layers
    fill at most m consecutive slots, so the two slots hold different slaves' layers.
    Every cluster visits every slot once in T steps, so it sends every layer once."""
    total = push_steps_bound(num_clusters, slave_of_layer)
    if total == 0:
        return ()
    order = sorted(range(len(slave_of_layer)), key=lambda layer: (slave_of_layer[layer], layer))
    counts: dict[int, int] = {}
    for slave in slave_of_layer:
        counts[slave] = counts.get(slave, 0) + 1
    stagger = max(counts.values())
    steps = []
    for t in range(total):
        step = []
        for c in range(num_clusters):
            slot = (t - c * stagger) % total
            if slot < len(order):
                layer = order[slot]
                step.append(Transfer(cluster=c, layer=layer, slave=slave_of_layer[layer]))
        steps.append(tuple(step))
    return tuple(steps)


def effective_throughput(cluster: Cluster) -> float:
    """Tokens per second with the emulated delay (§5.1: extra delay as a fraction of an
    iteration): what sets how often a cluster talks to the PSs, the p_j of §3.1."""
    return cluster.throughput / (1.0 + cluster.extra_delay)


def build_plan(
    clusters: Sequence[Cluster],
    bandwidth: Sequence[Sequence[float]],
    num_slaves: int,
    layers: Sequence[Layer],
    *,
    inner_steps: int,
    grace_window_s: float,
    **settings,
) -> Plan:
    """A Plan: the PS cluster by §3.1's cost model, layers balanced over the slaves,
    the push schedule of Fig. 5; `settings` are Plan's other fields as they are."""
    throughputs = [effective_throughput(c) for c in clusters]
    ps_cluster = choose_ps_cluster(bandwidth, throughputs)
    slave_of_layer = assign_layers([layer.nbytes for layer in layers], num_slaves)
    return Plan(
        clusters=tuple(clusters),
        bandwidth=tuple(tuple(float(b) for b in row) for row in bandwidth),
        ps_cluster=ps_cluster,
        num_slaves=num_slaves,
        layers=tuple(layers),
        slave_of_layer=slave_of_layer,
        push_schedule=push_schedule(len(clusters), slave_of_layer),
        inner_steps=inner_steps,
        grace_window_s=grace_window_s,
        **settings,
    )
