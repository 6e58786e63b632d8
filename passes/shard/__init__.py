"""stg-shard's parts: the strategy's rules (strategy.py), op signatures
(signatures.py), the per-op layout choice (solver.py) and the walk over a program
(propagate.py)."""
