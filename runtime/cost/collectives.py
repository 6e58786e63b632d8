"""Collective time on an alpha-beta model of one link, ring algorithms.

`bytes` is what Chakra's `comm_size` and the ops' `bytes_moved()` say (CHAKRA.md):
the per-rank shard for an all-gather, the whole local buffer for the others. With n
ranks in the group, bw = link bandwidth x efficiency (bytes/s, each direction) and
alpha = the link's latency per step, a collective takes

    ring_factor(kind, n) * bytes/bw + ring_steps(kind, n) * alpha

with the ring formulas of dialects/stg/ring.py (e.g. an all_reduce 2(n-1)/n * bytes/bw
+ 2(n-1) alpha). A group of one rank moves nothing and costs 0; a send or recv is
between two ranks whatever the group.
"""

from __future__ import annotations

from stagec.dialects.stg.ring import ring_factor, ring_steps
from stagec.runtime.cost.hardware_description import Link

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send", "recv")


class CollectiveError(ValueError):
    """An unknown collective kind or a bad size."""


def comm_micros(kind: str, bytes: int | float, group_size: int, link: Link) -> float:
    """Microseconds of one `kind` collective over `group_size` ranks on `link` (module doc)."""
    if kind.startswith("stg."):
        kind = kind[4:]
    if kind not in COLLECTIVES:
        raise CollectiveError(f"unknown collective '{kind}' (known: {', '.join(COLLECTIVES)})")
    if group_size < 1:
        raise CollectiveError(f"a {kind} needs a group of at least 1 rank, not {group_size}")
    if bytes < 0:
        raise CollectiveError(f"a {kind} cannot move {bytes} bytes")
    n = group_size
    if n == 1 and kind not in ("send", "recv"):
        return 0.0
    beta = 1e6 / link.effective_bandwidth  # microseconds per byte
    return float(ring_factor(kind, n)) * bytes * beta + ring_steps(kind, n) * link.latency_us
