"""Ring-algorithm costs of the collectives: the one statement of the formulas the
collective matcher minimises (passes/collectives/cost.py) and the cost model times
(runtime/cost/collectives.py).

On a ring of n ranks (NCCL's ring algorithms), with `in` the bytes of the op's local
input on one rank (the shard, for an all_gather):

    op              bytes one rank sends     latency steps
    all_gather      (n-1)   * in             n-1    every rank receives the n-1 other shards
    reduce_scatter  (n-1)/n * in             n-1    a ring reduction of n blocks
    all_reduce     2(n-1)/n * in            2(n-1)  a reduce_scatter, then an all_gather
    all_to_all      (n-1)/n * in             n-1    each rank keeps 1/n and sends the rest
    broadcast               in               n-1    a pipelined ring
    send / recv             in               1
    local_slice     0                        0      nothing moves (stage.md Fig. 6, "Slice*")

These are the bandwidth-optimal costs NCCL's rings approach for large messages
(Thakur et al. 2005; Patarasuk & Yuan 2009); tree and hierarchical algorithms are
not modelled. all_reduce costs exactly a reduce_scatter plus an all_gather.
"""

from __future__ import annotations

from fractions import Fraction

from xdsl.ir import Operation

__all__ = ["ring_factor", "ring_steps"]


def _kind(op: str | type[Operation]) -> str:
    """"all_gather" for AllGatherOp, "stg.all_gather" or "all_gather"."""
    name = op if isinstance(op, str) else op.name
    return name.removeprefix("stg.")


def ring_factor(op: str | type[Operation], n: int) -> Fraction:
    """Bytes one rank sends for `op` on a group of n ranks, as a multiple of its local
    input's bytes (the table in the module doc)."""
    kind = _kind(op)
    if kind == "all_gather":
        return Fraction(n - 1)
    if kind in ("reduce_scatter", "all_to_all"):
        return Fraction(n - 1, n)
    if kind == "all_reduce":
        return Fraction(2 * (n - 1), n)
    if kind in ("broadcast", "send", "recv"):
        return Fraction(1)
    if kind == "local_slice":
        return Fraction(0)
    raise ValueError(f"no ring cost for {op if isinstance(op, str) else op.name}")


def ring_steps(op: str | type[Operation], n: int) -> int:
    """Latency steps (link round trips) of `op` on a group of n ranks."""
    kind = _kind(op)
    if kind == "all_reduce":
        return 2 * (n - 1)
    if kind in ("all_gather", "reduce_scatter", "all_to_all", "broadcast"):
        return n - 1
    if kind in ("send", "recv"):
        return 1
    if kind == "local_slice":
        return 0
    raise ValueError(f"no ring cost for {op if isinstance(op, str) else op.name}")
