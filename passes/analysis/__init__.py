"""Analyses shared by passes and tools: liveness, memory timelines, accounting."""
