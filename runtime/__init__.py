"""Runtimes that execute stg programs: the reference interpreter, simulator and PS runtime (later issues)."""
