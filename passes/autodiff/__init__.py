"""stg-autodiff's machinery: reverse mode over blocks and loops (each op's backward rule is
declared on the op, dialects/stg/vjp.py), the optimizer step."""
