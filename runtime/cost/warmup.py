"""The profile of the first training iterations, before the optimizer's states exist
(deepcompile.md §3, Fig. 3: the outer loop).

PyTorch's Adam allocates its moments (`exp_avg`, `exp_avg_sq`, `step`; SGD its
`momentum`) at the first optimizer step, so the iterations DeepCompile profiles
before it have that much more free memory; its outer loop runs a few training
iterations and re-profiles once they exist. The memory analysis counts every
optimizer state as resident from the start (the steady state), so the profile of
the first round is the steady-state profile less those states at every position.
The master weights (fp32 copies) exist from the start: mixed-precision frameworks
make them when the model is wrapped.
"""

from __future__ import annotations

from dataclasses import replace

from stagec.runtime.cost.profile import Profile

__all__ = ["LAZY_STATES", "before_first_step", "lazy_state_bytes"]

LAZY_STATES = frozenset({"exp_avg", "exp_avg_sq", "step", "momentum"})


def lazy_state_bytes(profile: Profile) -> int:
    """B_os summed over the states an optimizer allocates at its first step."""
    return sum(f.bytes for f in profile.optimizer_states if f.state in LAZY_STATES)


def before_first_step(profile: Profile) -> Profile:
    """`profile` as the iterations before the first optimizer step see it: P_mem less
    the lazily allocated states at every position (module doc). A profile without a
    schedule or states is returned as it is."""
    lazy = lazy_state_bytes(profile)
    if profile.schedule is None or not lazy:
        return profile
    positions = tuple(replace(p, mem_before_bytes=max(p.mem_before_bytes - lazy, 0))
                      for p in profile.schedule.positions)
    return replace(profile, schedule=replace(profile.schedule, positions=positions),
                   source=f"{profile.source} before the first optimizer step",
                   origin=profile.origin)
