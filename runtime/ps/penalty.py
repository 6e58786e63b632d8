"""The pseudo-gradient penalty and the outer Nesterov step (di-ps.md §4.1, Algorithm 1).

Pure functions over numpy arrays; the slaves, the master and the single-process
re-computation in the tests all call these, so a deployment and its re-computation
round identically.

One outer step, split between the roles as §4.1 splits it:

1. Each slave i computes the pseudo-gradients of its layers, Delta^{i,j} = theta_i -
   theta_i^j for every push j in the round (Algorithm 1, line 12: the *current* global
   parameters minus the cluster's), and sends the master `slave_gram`: the inner
   products <Delta^{i,j}, Delta^{i,k}> over its layers. The diagonal gives the per-slave
   L2 norms ||Delta^{i,j}||; the off-diagonal lets the master compute the norm of the
   token-weighted average without a second round trip.
2. The master (`decide`) forms G^j = sum_i ||Delta^{i,j}||, scores E^j = (G^j - mu_t) /
   sigma_t with the EMA statistics, excludes every cluster whose score exceeds
   beta * max(1, max(E)) (below), weights the rest by their tokens, and computes the
   clip factor min(1, clip / ||delta||).
3. Each slave (`outer_step`) applies g = scale * sum_j w_j Delta^{i,j} with Nesterov.

Decisions this module makes where §4.1 is silent, each a documented choice:

- **The clip norm is global.** ||delta|| is the norm of the whole model's averaged
  pseudo-gradient, sqrt(sum_i ||delta^i||^2), which the master has from the slaves'
  Gram matrices. Clipping each slave's share to norm 1 would let the full update reach
  norm sqrt(n) and would depend on how layers are spread over slaves.
- **The EMA is fed by accepted clusters only**, one value at a time in push order, so
  an outlier does not drag mu and sigma towards itself; E gains only the accepted
  scores (E = E (+) E_t^c, as §4.1 says).
- **The first rounds.** With no history (mu undefined) every cluster is accepted and the
  first accepted G initialises mu (sigma = 0). While sigma is 0 the score is undefined:
  everyone is accepted and no score is recorded. While E is empty, scores are computed
  and recorded but nobody is excluded. Detection therefore starts from the third
  accepted value of G.
- **The threshold is at least beta.** A cluster is excluded when its score exceeds
  beta * max(1, max(E)): §4.1's beta * max(E), but never under beta standard
  deviations. Training shrinks the pseudo-gradients, so G falls round after round, mu
  lags behind it and every recorded score is negative: beta * max(E) would then be
  negative and reject ordinary clusters, and ignoring it (as this module once did)
  let a 1000x push through in a real run (tests/unit/ps_runtime/test_poisoned_cluster.py).
  Where max(E) >= 1 the rule is §4.1's as written.
- **Unusable pushes are left out before the penalty looks at them**, in every mode (the
  penalty on or off): one whose pseudo-gradient holds a NaN or an inf (its Gram
  diagonal is then not finite: a finite float32 tensor's squared norm is finite in
  float64) and one that consumed no tokens (its weight T_j would be 0, and a round of
  only such pushes would divide 0 by 0). Neither enters the EMA, E, the weights or the
  clip norm: a NaN G would make mu and sigma NaN for good (every later score NaN, so
  nobody ever excluded again), and a NaN in the average would reach every global
  parameter. `Decision.rejected` says why each was left out.
- If every cluster of a round is excluded, there is nothing to apply: `decide` returns
  no participants and the round leaves the parameters untouched.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from stagec.runtime.ps.plan import OuterOptimizer, Penalty

__all__ = ["Decision", "PenaltyState", "cluster_totals", "decide", "outer_step", "pseudo_gradient",
           "slave_gram", "weighted_pseudo_gradient"]


@dataclass(frozen=True)
class PenaltyState:
    """The master's EMA statistics and the score history E (stacked score vectors)."""

    mu: float | None = None
    sigma: float = 0.0
    scores: tuple[float, ...] = ()

    def to_json(self) -> dict:
        return {"mu": self.mu, "sigma": self.sigma, "scores": list(self.scores)}

    @staticmethod
    def from_json(data: Mapping) -> PenaltyState:
        return PenaltyState(data["mu"], float(data["sigma"]), tuple(float(s) for s in data["scores"]))


@dataclass(frozen=True)
class Decision:
    """The master's verdict on one round: who participates, with what weight, the clip
    factor for the averaged pseudo-gradient, and the statistics after the round."""

    participants: tuple[int, ...]
    weights: tuple[float, ...]
    scale: float
    excluded: tuple[int, ...]
    totals: Mapping[int, float]
    scores: Mapping[int, float] = field(default_factory=dict)
    state: PenaltyState = PenaltyState()
    rejected: Mapping[int, str] = field(default_factory=dict)  # push -> why it was unusable


def pseudo_gradient(theta: np.ndarray, theta_cluster: np.ndarray) -> np.ndarray:
    """Delta = theta - theta^g (Algorithm 1, line 12)."""
    return np.subtract(theta, theta_cluster, dtype=np.float32)


def slave_gram(deltas: Sequence[Sequence[np.ndarray]]) -> np.ndarray:
    """Inner products <Delta^{i,j}, Delta^{i,k}> over one slave's tensors, in float64.

    `deltas[j]` is push j's list of pseudo-gradient tensors on this slave (same order
    for every push)."""
    k = len(deltas)
    gram = np.zeros((k, k), dtype=np.float64)
    with np.errstate(invalid="ignore"):  # inf * 0: a non-finite push, which `decide` leaves out
        for a in range(k):
            for b in range(a, k):
                value = sum(float(np.dot(x.ravel().astype(np.float64), y.ravel().astype(np.float64)))
                            for x, y in zip(deltas[a], deltas[b], strict=True))
                gram[a, b] = gram[b, a] = value
    return gram


def cluster_totals(grams: Sequence[np.ndarray]) -> np.ndarray:
    """G^j = sum_i ||Delta^{i,j}||_2 over slaves i (§4.1 step 1)."""
    return np.sum([np.sqrt(np.maximum(np.diag(g), 0.0)) for g in grams], axis=0)


def _ema(state: PenaltyState, value: float, alpha: float) -> PenaltyState:
    if state.mu is None:
        return PenaltyState(value, 0.0, state.scores)
    mu = alpha * value + (1 - alpha) * state.mu
    sigma = math.sqrt((1 - alpha) * state.sigma ** 2 + alpha * (value - mu) ** 2)
    return PenaltyState(mu, sigma, state.scores)


def _unusable(totals: np.ndarray, tokens: Sequence[int]) -> dict[int, str]:
    """The pushes no statistic may see (module docstring), with why."""
    why = {}
    for j, (total, count) in enumerate(zip(totals, tokens, strict=True)):
        if not math.isfinite(float(total)):
            why[j] = "its pseudo-gradient is not finite (NaN or inf)"
        elif count <= 0:
            why[j] = f"it consumed {count} tokens"
    return why


def decide(grams: Sequence[np.ndarray], tokens: Sequence[int], state: PenaltyState,
           penalty: Penalty) -> Decision:
    """§4.1 steps 2-3 on the master for one round of k pushes.

    `grams[i]` is slave i's k x k Gram matrix (`slave_gram`), `tokens[j]` the tokens push
    j consumed. With the penalty disabled every push participates, weighted by tokens,
    and nothing is clipped (asynchronous / synchronous DiLoCo)."""
    k = len(tokens)
    totals = cluster_totals(grams) if grams else np.zeros(k)
    rejected = _unusable(totals, tokens)
    candidates = [j for j in range(k) if j not in rejected]
    scores: dict[int, float] = {}
    excluded: list[int] = []
    if penalty.enabled and state.mu is not None and state.sigma > 0:
        scores = {j: (float(totals[j]) - state.mu) / state.sigma for j in candidates}
        if state.scores:
            threshold = penalty.beta * max(1.0, max(state.scores))
            excluded = [j for j in candidates if scores[j] > threshold]
    participants = [j for j in candidates if j not in excluded]
    new_state = state
    if penalty.enabled:
        for j in participants:
            new_state = _ema(new_state, float(totals[j]), penalty.alpha)
        recorded = tuple(scores[j] for j in participants if j in scores)
        new_state = PenaltyState(new_state.mu, new_state.sigma, state.scores + recorded)
    total_tokens = sum(tokens[j] for j in participants)
    weights = tuple(tokens[j] / total_tokens for j in participants) if participants else ()
    scale = 1.0
    if penalty.enabled and participants:
        # only the participants' rows: a left-out push's may hold NaN, and 0 * NaN is NaN
        w, mine = np.asarray(weights), np.ix_(participants, participants)
        norm = math.sqrt(max(sum(float(w @ g[mine] @ w) for g in grams), 0.0))
        if norm > penalty.clip_norm:
            scale = penalty.clip_norm / norm
    return Decision(tuple(participants), weights, scale, tuple(sorted({*excluded, *rejected})),
                    {j: float(totals[j]) for j in range(k)}, scores, new_state, rejected)


def weighted_pseudo_gradient(deltas: Sequence[np.ndarray], weights: Sequence[float],
                             scale: float = 1.0) -> np.ndarray:
    """g = scale * sum_j w_j Delta_j (§4.1 step 3), accumulated in float32 in the given
    order so that every process that calls it gets the same bits."""
    out = np.zeros_like(deltas[0], dtype=np.float32)
    for delta, weight in zip(deltas, weights, strict=True):
        out += np.float32(weight) * delta
    if scale != 1.0:
        out *= np.float32(scale)
    return out


def outer_step(theta: np.ndarray, momentum: np.ndarray, g: np.ndarray,
               outer: OuterOptimizer) -> tuple[np.ndarray, np.ndarray]:
    """DiLoCo's outer Nesterov step (Algorithm 1, line 17), as torch.optim.SGD with
    nesterov=True and no dampening: b = mu b + g; theta = theta - lr (g + mu b).
    Returns new arrays; the inputs are not modified (a failed round leaves them as
    they were)."""
    mu, lr = np.float32(outer.momentum), np.float32(outer.lr)
    new_momentum = mu * momentum + g
    new_theta = theta - lr * (g + mu * new_momentum)
    return new_theta.astype(np.float32, copy=False), new_momentum.astype(np.float32, copy=False)
