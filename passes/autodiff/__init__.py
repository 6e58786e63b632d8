"""stg-autodiff's machinery: per-op backward rules, reverse mode over blocks and loops, the optimizer step."""
