"""What a Di-PS deployment is: the clusters, the parameter servers and the schedule.

A `Plan` is the data the `ps` dialect's program carries (`dialects/ps`), in the form the
PS runtime (`runtime/ps`) and the simulator's trace emitter read. `stagec ps plan` builds
one from a description of clusters and a model; `plan_from_module` / `module_from_plan`
(dialects/ps) convert between it and the IR, so the IR stays the single source of truth.

Units: bytes, seconds, bytes per second, tokens per second.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


# A slave PS is a process (and a trace rank, and a line of the summary): the paper runs
# 16 (§5.4). Far more is a slip of the keyboard; 10^20 crashed the placement's lists.
MAX_SLAVES = 65536


@dataclass(frozen=True)
class Cluster:
    """A training cluster (di-ps.md §3.1): its throughput p_j and, for emulated
    testbeds (§5.1), an extra delay per inner step as a fraction of an iteration."""

    name: str
    throughput: float
    extra_delay: float = 0.0


@dataclass(frozen=True)
class Layer:
    """One unit of push and pull: the parameters whose names start with `prefix`
    (a torch module path such as `layers.3`, `embed_tokens`, `lm_head`)."""

    prefix: str
    nbytes: int


@dataclass(frozen=True)
class Transfer:
    """One layer of one cluster moved to or from one slave PS in one push step."""

    cluster: int
    layer: int
    slave: int


@dataclass(frozen=True)
class OuterOptimizer:
    """The slaves' outer Nesterov step (Algorithm 1, line 17; DiLoCo's defaults)."""

    lr: float = 0.7
    momentum: float = 0.9


@dataclass(frozen=True)
class Penalty:
    """The pseudo-gradient penalty of §4.1: EMA factor alpha, outlier threshold beta,
    and the norm the token-weighted pseudo-gradient is clipped to."""

    alpha: float = 0.02
    beta: float = 3.0
    clip_norm: float = 1.0
    enabled: bool = True


@dataclass(frozen=True)
class Plan:
    """A Di-PS deployment.

    `bandwidth[i][j]` is B_ij, the bandwidth between the CPU servers of cluster i and
    the NPU servers of cluster j (§3.1); `ps_cluster` is argmax_i B_i^T p.
    `slave_of_layer[l]` is the slave PS that owns layer l. `push_schedule` is the
    master's layer-wise schedule (Fig. 5): each step is a set of transfers in which no
    two clusters use the same slave.
    """

    clusters: tuple[Cluster, ...]
    bandwidth: tuple[tuple[float, ...], ...]
    ps_cluster: int
    num_slaves: int
    layers: tuple[Layer, ...]
    slave_of_layer: tuple[int, ...]
    push_schedule: tuple[tuple[Transfer, ...], ...]
    inner_steps: int
    grace_window_s: float
    heartbeat_s: float = 1.0
    missed_heartbeats: int = 3
    outer: OuterOptimizer = OuterOptimizer()
    penalty: Penalty = Penalty()
    # Added for `stagec ps plan` and the simulation (issue 19, items 1 and 6).
    snapshot_every: int = 1  # outer steps between a slave's snapshots (§4; 0: none)
    snapshots_kept: int = 2  # snapshots each slave keeps, the newest ones (§4)
    # Tokens one inner step of a cluster consumes (0: not given). The simulation needs
    # it: a step takes tokens_per_step / throughput * (1 + extra_delay) seconds.
    tokens_per_step: int = 0
    # The model the layers come from, as the CONFIG gave it (runtime/ps/config.py's
    # ModelSpec): a named config or config.json path (e.g. "llama3.2-1b"; "" for none),
    # the HF config keys that override it, and the dtype the parameters move in. With
    # them a ps program alone rebuilds its model (runtime/ps/run_model.py).
    model: str = ""
    model_overrides: Mapping[str, Any] = field(default_factory=dict)
    model_dtype: str = "f32"
