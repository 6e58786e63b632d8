"""The grace window's prediction of a cluster's next push (runtime/ps/arrivals.py),
against hand-computed numbers."""

import pytest

from stagec.runtime.ps.arrivals import Arrivals


def trained(arrivals, cluster, start, seconds):
    arrivals.took_chunk(cluster, start)
    arrivals.requested_push(cluster, start + seconds)


def test_the_jitter_is_a_moving_mean_of_the_changes_between_chunks():
    a = Arrivals()
    trained(a, 0, 0.0, 1.0)
    assert 0 not in a.jitter_s and a.margin(0) == pytest.approx(0.1)  # 10% of 1.0 s until a second chunk
    trained(a, 0, 10.0, 1.2)
    assert a.jitter_s[0] == pytest.approx(0.2)  # the first change
    trained(a, 0, 20.0, 1.1)
    assert a.jitter_s[0] == pytest.approx(0.2 + 0.2 * (0.1 - 0.2))  # 0.18
    assert a.margin(0) == pytest.approx(3 * 0.18)
    trained(a, 0, 30.0, 1.1)  # steady chunks: the margin shrinks, but not under 1%
    for k in range(40):
        trained(a, 0, 40.0 + 10 * k, 1.1)
    assert a.margin(0) == pytest.approx(0.011)


def test_a_cluster_may_arrive_if_its_training_and_push_less_the_margin_end_in_time():
    a = Arrivals()
    trained(a, 0, 0.0, 1.0)
    trained(a, 0, 10.0, 1.0)  # no change: margin 1% = 0.01 s
    a.committed_push(0, 0.05)
    a.took_chunk(0, 20.0)  # due at 21.05
    assert a.may_arrive_by(0, 21.05 - 0.01) and not a.may_arrive_by(0, 21.05 - 0.011)


def test_a_cluster_not_seen_training_may_always_arrive():
    a = Arrivals()
    assert a.may_arrive_by(0, 0.0)  # never seen
    trained(a, 0, 0.0, 1.0)
    assert a.may_arrive_by(0, -100.0)  # between chunks: it may push at any moment
    a.requested_push(0, 5.0)  # a push request without a chunk changes nothing
    assert a.training_s[0] == 1.0
