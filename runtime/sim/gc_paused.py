"""`gc_paused()`: Python's cyclic garbage collector off for the length of a block.

Emission and the event loop allocate millions of small objects (node tuples, events,
dependency lists) that form no reference cycles and mostly live until the block ends.
Each allocation counts towards the collector's thresholds, so it would run over and
over, rescanning every surviving object - the IR and the programs included - to find
nothing: about a third of a large simulation's time (bench/sim_scale.py). Reference
counting still frees everything acyclic at once; cycles made inside the block wait
for the next collection after it.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The collector disabled inside the block, and restored to what it was after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
