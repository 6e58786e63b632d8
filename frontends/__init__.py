"""Frontends: where models enter stagec as stg IR (built-in models now; templates and torch import later)."""
