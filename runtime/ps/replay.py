"""A single-process re-computation of a finished run's outer steps.

From the run's initial parameters, the pushes the clusters recorded
(`Deployment.record_pushes`) and the master's log of rounds, `replay` recomputes every
round as §4.1 and Algorithm 1 define it — each slave's pseudo-gradients and Gram
matrix, the master's decision, the weighted, clipped Nesterov step — with the same
functions (`runtime/ps/penalty.py`) in the same order, so its result must equal the
slaves' final snapshots bit for bit. Only which pushes formed a round is taken from
the log (that is timing); the decisions are recomputed and compared with the log.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stagec.runtime.ps.deployment import Deployment
from stagec.runtime.ps.penalty import (PenaltyState, decide, outer_step, pseudo_gradient, slave_gram,
                                       weighted_pseudo_gradient)
from stagec.runtime.ps.slave import load_snapshot, snapshot_path
from stagec.runtime.ps.wire import group_by_layer

__all__ = ["ReplayMismatch", "Replayed", "final_parameters", "replay"]


class ReplayMismatch(AssertionError):
    """The log's decision differs from the re-computation's."""


@dataclass
class Replayed:
    params: dict[str, np.ndarray]
    momentum: dict[str, np.ndarray]
    version: int
    rounds: int


def _slave_names(dep: Deployment, groups) -> list[list[str]]:
    return [[n for l, owner in enumerate(dep.plan.slave_of_layer) if owner == s for n in sorted(groups[l])]
            for s in range(dep.plan.num_slaves)]


def replay(dep: Deployment, log: list[dict]) -> Replayed:
    with np.load(dep.path("init.npz")) as init:
        params = {k: init[k] for k in init.files}
    momentum = {k: np.zeros_like(v) for k, v in params.items()}
    names = _slave_names(dep, group_by_layer(params, dep.plan.layers))
    state, version, rounds = PenaltyState(), 0, 0
    for entry in log:
        if entry.get("aborted"):
            continue
        pushes = []
        for p in entry["pushes"]:
            with np.load(dep.path("pushes", f"{p}.npz")) as data:
                pushes.append({k: data[k] for k in data.files})
        deltas = [[[pseudo_gradient(params[n], push[n]) for n in slave] for push in pushes] for slave in names]
        d = decide([slave_gram(x) for x in deltas], entry["tokens"], state, dep.penalty)
        if (list(d.participants) != entry["participants"] or list(d.weights) != entry["weights"]
                or d.scale != entry["scale"]):
            raise ReplayMismatch(f"round {entry['round']}: recomputed participants {d.participants}, weights "
                                 f"{d.weights}, scale {d.scale}; the log says {entry['participants']}, "
                                 f"{entry['weights']}, {entry['scale']}")
        state = d.state
        rounds += 1
        if not entry["committed"]:
            continue
        for slave, slave_deltas in zip(names, deltas):
            for k, n in enumerate(slave):
                g = weighted_pseudo_gradient([slave_deltas[j][k] for j in d.participants], d.weights, d.scale)
                params[n], momentum[n] = outer_step(params[n], momentum[n], g, dep.plan.outer)
        version += 1
        if version != entry["version"]:
            raise ReplayMismatch(f"round {entry['round']} committed version {entry['version']}, expected {version}")
    return Replayed(params, momentum, version, rounds)


def final_parameters(dep: Deployment, version: int) -> tuple[dict, dict]:
    """The slaves' snapshots of `version`, merged."""
    params, momentum = {}, {}
    for s in range(dep.plan.num_slaves):
        if version == 0:
            continue
        p, m = load_snapshot(snapshot_path(dep, s, version))
        params.update(p)
        momentum.update(m)
    return params, momentum
