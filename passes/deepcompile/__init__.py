"""What the DeepCompile passes (deepcompile.md §4: stg-fully-shard, stg-prefetch, and
later stg-unshard, stg-offload) share: the profile seen per op of a block."""
