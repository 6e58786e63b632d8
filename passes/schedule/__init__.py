"""Rules the scheduling passes share (docs/scheduled-ir.md)."""
