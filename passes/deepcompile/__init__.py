"""What the DeepCompile passes (deepcompile.md §4: stg-fully-shard, stg-prefetch,
stg-unshard, stg-offload) share: the profile seen per op of a block (block_profile.py),
and the parameter all-gathers of a scheduled step and the rebuilding of ops with
regions (sites.py)."""
