"""stg-autodiff: reverse-mode differentiation (in progress)."""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass


@dataclass(frozen=True)
class StgAutodiff(ModulePass):
    """Differentiates @forward into a training step: forward, backward and optimizer phases."""

    name = "stg-autodiff"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise NotImplementedError("stg-autodiff is being built")
