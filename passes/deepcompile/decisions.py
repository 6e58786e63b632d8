"""What a DeepCompile pass decided, for `stagec compile` to print (deepcompile.md §3:
each pass of the loop rewrites the graph; the user sees what it chose).

A pass records a decision on the module it rewrote; whoever drives the passes takes
the module's decisions after each pass. Nothing is stored in the IR (the printed
module is the schedule, not its history), and a pass run by stagec-opt records into
a log no one reads:

    record(module, "stg-prefetch", "all-gathers issued earlier", 21)
    record(module, "stg-offload", "optimizer-state bytes offloaded", 8 << 30, unit="bytes")
    ...
    for d in take(module): print(d.text())

A decision is one quantity (a count, bytes, a list of names as `detail`); a pass
records the few that say what it did: gathers moved, groups fused, parameters kept
unsharded, bytes offloaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from weakref import WeakKeyDictionary

from xdsl.dialects.builtin import ModuleOp

__all__ = ["Decision", "record", "take"]


@dataclass(frozen=True)
class Decision:
    """One quantity a pass decided: `value` `unit` of `what` (detail: e.g. names)."""

    pass_name: str
    what: str
    value: int | float
    unit: str = ""
    detail: str = ""

    def text(self) -> str:
        if self.unit == "bytes":
            amount = f"{self.value / 1e9:,.2f} GB" if self.value >= 1e7 else f"{int(self.value):,} B"
        elif isinstance(self.value, float):
            amount = f"{self.value:,.3f}{' ' + self.unit if self.unit else ''}"
        else:
            amount = f"{self.value:,}{' ' + self.unit if self.unit else ''}"
        return f"{self.what}: {amount}" + (f" ({self.detail})" if self.detail else "")

    def to_json(self) -> dict:
        return {"pass": self.pass_name, "what": self.what, "value": self.value, "unit": self.unit,
                "detail": self.detail}


_LOG: WeakKeyDictionary[ModuleOp, list[Decision]] = WeakKeyDictionary()


def record(module: ModuleOp, pass_name: str, what: str, value: int | float, *, unit: str = "",
           detail: str = "") -> Decision:
    """Note a decision of `pass_name` on `module` (module doc)."""
    decision = Decision(pass_name, what, value, unit, detail)
    _LOG.setdefault(module, []).append(decision)
    return decision


def take(module: ModuleOp) -> list[Decision]:
    """The decisions recorded on `module` since the last take, oldest first."""
    return _LOG.pop(module, [])
