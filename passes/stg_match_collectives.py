"""stg-match-collectives: every stg.reshard becomes the cheapest sequence of
collectives that turns the producer's layout into the consumer's (stage.md §IV-D2).

(Being written: the pass is registered first; the matcher follows.)
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass


@dataclass(frozen=True)
class StgMatchCollectives(ModulePass):
    """Replace every stg.reshard by collectives, by pull/push matching (stage.md §IV-D2)."""

    name = "stg-match-collectives"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise NotImplementedError("stg-match-collectives is being written")
