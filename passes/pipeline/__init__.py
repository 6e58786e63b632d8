"""stg-pipeline's parts: stage partition, schedules, the per-stage program builder."""
