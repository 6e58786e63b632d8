"""The pseudo-gradient penalty of di-ps.md §4.1 and the outer Nesterov step, against
hand computations (alpha = 0.02, beta = 3, clip norm 1: the Penalty defaults, §4.1)."""

import math

import numpy as np
import pytest
import torch

from stagec.runtime.ps.penalty import (PenaltyState, decide, outer_step, pseudo_gradient, slave_gram,
                                       weighted_pseudo_gradient)
from stagec.runtime.ps.plan import OuterOptimizer, Penalty

PENALTY = Penalty()


def grams_of(*per_slave_norms):
    """1 x 1 (or k x k diagonal) Gram matrices from per-slave norms: one list per slave."""
    return [np.diag(np.square(np.asarray(norms, dtype=np.float64))) for norms in per_slave_norms]


def history():
    """Rounds A-C of the hand computation; returns the state before round D.

    A: G = 3 + 4 = 7, no history: accepted, mu = 7, sigma = 0, no score.
    B: G = 3 + 2 = 5, sigma = 0: accepted without a score;
       mu = .02*5 + .98*7 = 6.96, sigma = sqrt(.02 * (5 - 6.96)^2) = sqrt(.076832).
    C: G = 7: E = (7 - 6.96) / sqrt(.076832) = 0.1443...; E was empty, so nobody is
       excluded and E = (0.1443,); mu = .02*7 + .98*6.96 = 6.9608,
       sigma = sqrt(.98 * .076832 + .02 * (7 - 6.9608)^2) = sqrt(.0753260928).
    """
    s = PenaltyState()
    d = decide(grams_of([3], [4]), [100], s, PENALTY)
    assert d.participants == (0,) and d.state.mu == 7 and d.state.sigma == 0 and d.state.scores == ()
    d = decide(grams_of([3], [2]), [100], d.state, PENALTY)
    assert d.participants == (0,) and d.scores == {}
    assert d.state.mu == pytest.approx(6.96) and d.state.sigma == pytest.approx(math.sqrt(0.076832))
    d = decide(grams_of([3], [4]), [100], d.state, PENALTY)
    assert d.participants == (0,) and d.excluded == ()
    assert d.state.scores == pytest.approx((0.04 / math.sqrt(0.076832),))
    assert d.state.mu == pytest.approx(6.9608) and d.state.sigma == pytest.approx(math.sqrt(0.0753260928))
    return d.state


def test_a_1000x_pseudo_gradient_is_excluded_on_every_slave_and_does_not_move_the_parameters():
    state = history()
    # round D: push 0 is ordinary (Delta = [3, 0] on slave 0, [4] on slave 1: G = 7),
    # push 1 sends the same pseudo-gradient 1000x too large (G = 7000).
    theta = [np.zeros(2, np.float32), np.zeros(1, np.float32)]
    good = [np.array([-3, 0], np.float32), np.array([-4], np.float32)]
    bad = [1000 * g for g in good]
    deltas = [[[pseudo_gradient(theta[s], push[s])] for push in (good, bad)] for s in range(2)]
    grams = [slave_gram(d) for d in deltas]
    d = decide(grams, [100, 100], state, PENALTY)
    # E_D = (7 - 6.9608) / sqrt(.0753260928) = 0.1428 and (7000 - 6.9608) / ... = 25479.6;
    # threshold = 3 * max(1, max(E)) = 3 * max(1, 0.1443) = 3: push 1 is out, push 0 stays.
    assert d.totals == pytest.approx({0: 7.0, 1: 7000.0})
    assert d.scores[1] == pytest.approx((7000 - 6.9608) / math.sqrt(0.0753260928))
    assert d.participants == (0,) and d.excluded == (1,) and d.weights == (1.0,)
    # ||delta|| = sqrt(3^2 + 4^2) = 5 > 1 (G = 7 sums per-slave norms; the clip takes the
    # global L2 norm): scale 1/5; the Nesterov step from zero momentum moves theta by
    # -lr (1 + momentum) g = -0.7 * 1.9 * [3/5, 0 | 4/5] = [-0.798, 0 | -1.064].
    assert d.scale == pytest.approx(1 / 5)
    new = []
    for s in range(2):
        g = weighted_pseudo_gradient([deltas[s][j][0] for j in d.participants], d.weights, d.scale)
        new.append(outer_step(theta[s], np.zeros_like(theta[s]), g, OuterOptimizer())[0])
    np.testing.assert_allclose(new[0], [-0.798, 0.0], rtol=1e-6)
    np.testing.assert_allclose(new[1], [-1.064], rtol=1e-6)
    # the poisoned G did not enter the EMA: mu = .02*7 + .98*6.9608
    assert d.state.mu == pytest.approx(0.02 * 7 + 0.98 * 6.9608)
    assert len(d.state.scores) == 2


def test_weights_follow_tokens_and_the_clipped_norm_is_at_most_one():
    # pushes A = [4, 0], B = [0, 4] on one slave with 1000 and 3000 tokens:
    # delta = .25 A + .75 B = [1, 3], ||delta|| = sqrt(10) > 1, so scale = 1/sqrt(10).
    deltas = [[np.array([4, 0], np.float32)], [np.array([0, 4], np.float32)]]
    gram = slave_gram(deltas)
    np.testing.assert_array_equal(gram, [[16, 0], [0, 16]])
    d = decide([gram], [1000, 3000], PenaltyState(), PENALTY)
    assert d.weights == (0.25, 0.75)
    assert d.scale == pytest.approx(1 / math.sqrt(10))
    g = weighted_pseudo_gradient([x[0] for x in deltas], d.weights, d.scale)
    np.testing.assert_allclose(g, np.array([1, 3]) / math.sqrt(10), rtol=1e-6)
    assert float(np.linalg.norm(g)) <= 1 + 1e-6


def test_the_clip_norm_is_global_over_slaves():
    # two slaves, each share of norm 0.8: per-slave clipping would leave both alone, the
    # global norm is sqrt(.64 + .64) = 1.1314, so both are scaled by 1/1.1314 = 0.8839.
    d = decide(grams_of([0.8], [0.8]), [1], PenaltyState(), PENALTY)
    assert d.scale == pytest.approx(1 / math.sqrt(1.28))


def test_a_norm_below_one_is_not_scaled():
    d = decide(grams_of([0.3], [0.4]), [1], PenaltyState(), PENALTY)
    assert d.scale == 1.0


def test_without_the_penalty_nobody_is_excluded_and_nothing_is_clipped():
    # DiLoCo (sync and async): token-weighted average of everything
    off = Penalty(enabled=False)
    d = decide(grams_of([3, 3000], [4, 4000]), [100, 300], history(), off)
    assert d.participants == (0, 1) and d.excluded == () and d.scale == 1.0 and d.weights == (0.25, 0.75)


def test_every_push_of_a_round_excluded_leaves_nothing_to_apply():
    d = decide(grams_of([3000], [4000]), [100], history(), PENALTY)
    assert d.participants == () and d.weights == () and d.excluded == (0,)


def test_the_threshold_is_never_under_beta_standard_deviations():
    # beta * max(E) with max(E) = -0.2 would be -0.6 and reject a cluster at the mean;
    # the threshold is 3 * max(1, -0.2) = 3. G = 9: E = (9 - 7) / 1 = 2 <= 3, kept.
    state = PenaltyState(mu=7.0, sigma=1.0, scores=(-0.5, -0.2))
    d = decide(grams_of([9]), [1], state, PENALTY)
    assert d.participants == (0,) and d.scores == {0: 2.0}
    # G = 10.5: E = 3.5 > 3, excluded
    d = decide(grams_of([10.5]), [1], state, PENALTY)
    assert d.participants == () and d.excluded == (0,) and d.scores == {0: 3.5}


def test_a_1000x_push_is_excluded_while_the_pseudo_gradients_shrink():
    """Training shrinks the pseudo-gradients, so every recorded score is negative (what a
    real run showed, tests/unit/ps_runtime/test_poisoned_cluster.py). Hand computation:

    A: G = 2: mu = 2, sigma = 0.
    B: G = 1.9: no score; mu = .02*1.9 + .98*2 = 1.998, sigma = sqrt(.02 * (1.9 - 1.998)^2)
       = sqrt(.00019208) = 0.013859.
    C: G = 1.8: E = (1.8 - 1.998) / 0.013859 = -14.286 (E was empty: nobody excluded);
       mu = .02*1.8 + .98*1.998 = 1.99404,
       sigma = sqrt(.98 * .00019208 + .02 * (1.8 - 1.99404)^2) = sqrt(.0009412688) = 0.030680.
    D: G = 1.7 and 1700 (the same push 1000x): E = (1.7 - 1.99404) / 0.030680 = -9.584 and
       (1700 - 1.99404) / 0.030680 = 55346; threshold 3 * max(1, -14.286) = 3: the 1000x
       push is out, the ordinary one stays.
    """
    s = PenaltyState()
    for g in (2.0, 1.9, 1.8):
        d = decide(grams_of([g]), [100], s, PENALTY)
        assert d.participants == (0,)
        s = d.state
    assert s.scores == pytest.approx(((1.8 - 1.998) / math.sqrt(0.00019208),))
    assert s.mu == pytest.approx(1.99404) and s.sigma == pytest.approx(math.sqrt(0.0009412688))
    d = decide(grams_of([1.7, 1700.0]), [100, 100], s, PENALTY)
    assert d.scores[0] == pytest.approx((1.7 - 1.99404) / math.sqrt(0.0009412688))
    assert d.scores[1] == pytest.approx((1700 - 1.99404) / math.sqrt(0.0009412688))
    assert d.participants == (0,) and d.excluded == (1,)


def test_outer_step_is_torchs_sgd_with_nesterov():
    # DiLoCo's outer optimizer: torch.optim.SGD(lr=0.7, momentum=0.9, nesterov=True)
    rng = np.random.default_rng(0)
    theta = rng.standard_normal(5).astype(np.float32)
    p = torch.nn.Parameter(torch.from_numpy(theta.copy()))
    sgd = torch.optim.SGD([p], lr=0.7, momentum=0.9, nesterov=True)
    buf = np.zeros_like(theta)
    for _ in range(3):
        g = rng.standard_normal(5).astype(np.float32)
        p.grad = torch.from_numpy(g.copy())
        sgd.step()
        theta, buf = outer_step(theta, buf, g, OuterOptimizer(lr=0.7, momentum=0.9))
    np.testing.assert_allclose(theta, p.detach().numpy(), rtol=1e-6, atol=1e-6)


def test_outer_step_leaves_its_inputs_alone():
    theta, buf = np.ones(3, np.float32), np.zeros(3, np.float32)
    outer_step(theta, buf, np.ones(3, np.float32), OuterOptimizer())
    np.testing.assert_array_equal(theta, 1) and np.testing.assert_array_equal(buf, 0)


@pytest.mark.parametrize("poison", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("with_history", [True, False])
def test_a_non_finite_pseudo_gradient_is_left_out_and_poisons_nothing(poison, with_history):
    """Push 1 holds a NaN or an inf. Old code: G^1 = NaN passed the score test (NaN > 3
    is false) and made mu and sigma NaN for good; an inf was excluded but its row made
    the clip norm 0 * inf = NaN, so the other push went unclipped; without history
    either reached the parameters. Hand computation: push 0 alone, Delta = [3, 0]
    (slave 0) and [4] (slave 1): ||delta|| = 5, scale 1/5; theta moves by
    -lr (1 + momentum) g = -0.7 * 1.9 * [3/5, 0 | 4/5] = [-0.798, 0 | -1.064]."""
    state = history() if with_history else PenaltyState()
    theta = [np.zeros(2, np.float32), np.zeros(1, np.float32)]
    good = [np.array([-3, 0], np.float32), np.array([-4], np.float32)]
    bad = [np.array([-3, poison], np.float32), np.array([-4], np.float32)]
    deltas = [[[pseudo_gradient(theta[s], push[s])] for push in (good, bad)] for s in range(2)]
    d = decide([slave_gram(x) for x in deltas], [100, 100], state, PENALTY)
    assert d.participants == (0,) and d.weights == (1.0,) and d.excluded == (1,)
    assert "not finite" in d.rejected[1] and 1 not in d.scores
    assert d.scale == pytest.approx(1 / 5)
    if with_history:  # the EMA saw G = 7 only: mu = .02*7 + .98*6.9608
        assert d.state.mu == pytest.approx(0.02 * 7 + 0.98 * 6.9608)
    else:  # the first accepted G sets mu
        assert d.state.mu == 7 and d.state.sigma == 0
    assert all(math.isfinite(s) for s in d.state.scores) and math.isfinite(d.state.sigma)
    for s, expected in enumerate(([-0.798, 0.0], [-1.064])):
        g = weighted_pseudo_gradient([deltas[s][j][0] for j in d.participants], d.weights, d.scale)
        np.testing.assert_allclose(outer_step(theta[s], np.zeros_like(theta[s]), g, OuterOptimizer())[0],
                                   expected, rtol=1e-6)


def test_a_non_finite_pseudo_gradient_is_left_out_with_the_penalty_off_too():
    # DiLoCo has no penalty, but a NaN averaged in would reach every global parameter
    gram = slave_gram([[np.array([1.0], np.float32)], [np.array([np.nan], np.float32)]])
    d = decide([gram], [100, 300], PenaltyState(), Penalty(enabled=False))
    assert d.participants == (0,) and d.weights == (1.0,) and d.excluded == (1,) and d.scale == 1.0


def test_a_round_of_only_non_finite_pushes_applies_nothing_and_keeps_the_statistics():
    state = history()
    d = decide(grams_of([np.nan]), [100], state, PENALTY)
    assert d.participants == () and d.excluded == (0,) and d.state == state


def test_a_push_that_consumed_no_tokens_is_left_out():
    # old code: a round of such pushes divided 0 by 0 (ZeroDivisionError on the master)
    d = decide(grams_of([0.5]), [0], PenaltyState(), PENALTY)
    assert d.participants == () and d.excluded == (0,) and "0 tokens" in d.rejected[0]
    assert d.state == PenaltyState()
    # beside a push that did consume tokens: that one alone, weight 1 (its T_j / sum T_j)
    d = decide(grams_of([0.5, 0.7]), [0, 300], PenaltyState(), PENALTY)
    assert d.participants == (1,) and d.weights == (1.0,) and d.state.mu == 0.7


def test_all_zero_pseudo_gradients_leave_the_parameters_to_the_momentum():
    """G = 0 every round: mu = 0, sigma stays 0 (so no score is ever recorded), the
    norm 0 is not clipped, and g = 0: the Nesterov step moves theta by lr * mu * b only."""
    s = PenaltyState()
    for _ in range(3):
        d = decide([slave_gram([[np.zeros(3, np.float32)]])], [100], s, PENALTY)
        assert d.participants == (0,) and d.scale == 1.0 and d.scores == {}
        s = d.state
    assert s == PenaltyState(0.0, 0.0, ())
    g = weighted_pseudo_gradient([np.zeros(3, np.float32)], d.weights, d.scale)
    theta, b = outer_step(np.ones(3, np.float32), np.full(3, 0.5, np.float32), g, OuterOptimizer())
    # b = 0.9 * 0.5 = 0.45; theta = 1 - 0.7 * (0 + 0.9 * 0.45) = 0.7165
    np.testing.assert_allclose(b, 0.45, rtol=1e-6)
    np.testing.assert_allclose(theta, 0.7165, rtol=1e-6)


def test_a_norm_of_exactly_one_is_not_scaled():
    # min(1, 1 / ||delta||) = 1 at ||delta|| = 1: over two slaves, 0.6^2 + 0.8^2 = 1
    # (0.6 and 0.8 are not exact in binary; 0.5^2 * 4 is)
    d = decide(grams_of([0.5, 0.5], [0.5, 0.5]), [1, 1], PenaltyState(), PENALTY)
    assert d.scale == 1.0
    d = decide([slave_gram([[np.array([0.5, 0.5, 0.5, 0.5], np.float32)]])], [1], PenaltyState(), PENALTY)
    assert d.scale == 1.0
