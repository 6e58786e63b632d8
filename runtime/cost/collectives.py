"""Collective time on an alpha-beta model of one link, ring algorithms.

`bytes` is what Chakra's `comm_size` and the ops' `bytes_moved()` say (CHAKRA.md):
the per-rank shard for an all-gather, the whole local buffer for the others. With n
ranks in the group, bw = link bandwidth x efficiency (bytes/s, each direction) and
alpha = the link's latency per step:

    all_reduce       2(n-1)/n * bytes/bw + 2(n-1) alpha   (reduce-scatter then all-gather)
    reduce_scatter    (n-1)/n * bytes/bw +  (n-1) alpha
    all_gather        (n-1)   * bytes/bw +  (n-1) alpha   (bytes = the shard; n*bytes out)
    all_to_all        (n-1)/n * bytes/bw +  (n-1) alpha   (pairwise exchange of bytes/n blocks)
    broadcast               bytes/bw    +  (n-1) alpha   (pipelined ring)
    send / recv             bytes/bw    +        alpha

A group of one rank moves nothing and costs 0. These are the bandwidth-optimal ring
costs NCCL's rings approach for large messages (Thakur et al. 2005; Patarasuk & Yuan
2009); tree and hierarchical algorithms are not modelled.
"""

from __future__ import annotations

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
    alpha = link.latency_us
    if kind == "all_reduce":
        return 2 * (n - 1) / n * bytes * beta + 2 * (n - 1) * alpha
    if kind in ("reduce_scatter", "all_to_all"):
        return (n - 1) / n * bytes * beta + (n - 1) * alpha
    if kind == "all_gather":
        return (n - 1) * bytes * beta + (n - 1) * alpha
    if kind == "broadcast":
        return bytes * beta + (n - 1) * alpha
    return bytes * beta + alpha  # send / recv
