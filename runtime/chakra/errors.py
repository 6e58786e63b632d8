"""The Chakra emitter's errors (runtime/chakra/emit.py, staging.py)."""

from __future__ import annotations

__all__ = ["EmitError", "OutputError"]


class EmitError(ValueError):
    """IR the emitter cannot expand (a reshard left, a size that does not evaluate)."""


class OutputError(EmitError):
    """The output cannot be written where it was asked for: a previous job's traces in
    the directory, or the system's reason for a path (disk full, file too large,
    permission). Nothing of the new output is left behind."""
