"""stg-pipeline: graph-level distribution into pipeline stages (stage.md §IV-D3).

(Work in progress.)
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from stagec.passes.diagnostics import PassError


@dataclass(frozen=True)
class StgPipeline(ModulePass):
    """Splits @train_step into pipeline stages with send/recv on the cut edges and a
    micro-batch schedule per stage (options: pp, schedule, balance)."""

    name = "stg-pipeline"

    pp: int = 1
    schedule: str = "1f1b"
    balance: str = "layers"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise PassError("stg-pipeline is not implemented yet")
