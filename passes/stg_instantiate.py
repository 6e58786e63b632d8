"""stg-instantiate: symbols -> integers (in progress)."""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass


@dataclass(frozen=True)
class StgInstantiate(ModulePass):
    """Binds symbols to integers: stg-instantiate{B=8,S=4096}."""

    name = "stg-instantiate"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise NotImplementedError("stg-instantiate is being built")
