"""The collective communication matcher (stage.md §IV-D2), for every pass that turns a
layout change into collectives (stg-match-collectives, and sharding passes that want a
reshard's price before they choose a layout):

    match_reshard(src, dst, mesh_sizes) -> list[Step]   the cheapest collectives
    reshard_cost(src, dst, mesh_sizes) -> float         their ring-model bytes per rank

matcher.py holds the pull/push search, cost.py the ring cost model; docs/collectives.md
explains both.
"""

from stagec.passes.collectives.cost import UNBOUND_SYMBOL, UNSIZED_AXIS, ring_factor
from stagec.passes.collectives.matcher import MatchError, Step, match_reshard, reshard_cost

__all__ = [
    "UNBOUND_SYMBOL",
    "UNSIZED_AXIS",
    "MatchError",
    "Step",
    "match_reshard",
    "reshard_cost",
    "ring_factor",
]
