"""The simulator: per-rank programs (the scheduled IR, or a Chakra trace directory) run
as events on a compute stream, communication streams and a copy stream, collectives on
an analytical model of hierarchical networks (docs/simulator.md)."""
