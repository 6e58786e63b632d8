"""Di-PS: cross-cluster training with a master/slave parameter server (di-ps.md §3-4)."""
