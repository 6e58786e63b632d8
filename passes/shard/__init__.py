"""stg-shard's parts: the strategy's rules (strategy.py), the per-op layout choice
from the op's signature (solver.py; each op declares its signature,
dialects/stg/sharding.py) and the walk over a program (propagate.py)."""
