"""The interleaved 1F1B schedule (Narayanan et al. 2021 §2.2; Megatron-LM's
`forward_backward_pipelining_with_interleaving`): each rank's order of (kind, chunk,
micro-batch) calls, its warm-up counts, that the orders cannot deadlock, and the
bubble it saves over plain 1F1B.

Megatron's algorithm, as the expected orders below are derived from it by hand:
rank k of pp with v chunks numbers its forward calls and its backward calls j = 0 ..
M*v - 1. Call j runs micro-batch (j // (pp*v)) * pp + j % pp on chunk (j % (pp*v)) // pp,
a backward on chunk v - 1 - that. It runs w = min((pp-k-1)*2 + (v-1)*pp, M*v)
warm-up forwards (all M*v when M == pp), then M*v - w times "forward w+j, backward j",
then the w backwards left.
"""

from __future__ import annotations

import pytest

from stagec.passes.pipeline.schedule import (
    Step,
    in_flight,
    interleaved_one_f_one_b,
    interleaved_warmup,
    one_f_one_b,
    schedule,
)


def order(steps: list[Step]) -> str:
    """`F c m`: the forward of micro-batch m on the rank's chunk c."""
    return " ".join(f"{s.kind}{s.chunk}.{s.micro_batch}" for s in steps)


def test_pp2_v2_m4_orders():
    # pp = 2, v = 2, M = 4: pp*v = 4; forward j = 0..7 runs (chunk, mb)
    #   (0,0) (0,1) (1,0) (1,1) (0,2) (0,3) (1,2) (1,3); backward j: (1,0) (1,1) (0,0) (0,1)
    #   (1,2) (1,3) (0,2) (0,3).  Warm-up: rank 0: (2-0-1)*2 + (2-1)*2 = 4; rank 1: 0 + 2 = 2.
    # rank 0: F j0..3 | (F j4, B j0) .. (F j7, B j3) | B j4..7
    assert order(interleaved_one_f_one_b(0, 2, 2, 4)) == (
        "F0.0 F0.1 F1.0 F1.1 F0.2 B1.0 F0.3 B1.1 F1.2 B0.0 F1.3 B0.1 B1.2 B1.3 B0.2 B0.3"
    )
    # rank 1: F j0..1 | (F j2, B j0) .. (F j7, B j5) | B j6..7
    assert order(interleaved_one_f_one_b(1, 2, 2, 4)) == (
        "F0.0 F0.1 F1.0 B1.0 F1.1 B1.1 F0.2 B0.0 F0.3 B0.1 F1.2 B1.2 F1.3 B1.3 B0.2 B0.3"
    )


def test_pp4_v2_m8_orders():
    # pp = 4, v = 2, M = 8: pp*v = 8, 16 calls per direction. Forward j: j 0-3 chunk 0
    # mb 0-3, j 4-7 chunk 1 mb 0-3, j 8-11 chunk 0 mb 4-7, j 12-15 chunk 1 mb 4-7;
    # backward j: the same micro-batches on chunk 1, 0, 1, 0.
    # Warm-up (pp-k-1)*2 + 4: 10, 8, 6, 4.
    # rank 0: F j0..9 | (F j10, B j0) .. (F j15, B j5) | B j6..15
    assert order(interleaved_one_f_one_b(0, 4, 2, 8)) == (
        "F0.0 F0.1 F0.2 F0.3 F1.0 F1.1 F1.2 F1.3 F0.4 F0.5 "
        "F0.6 B1.0 F0.7 B1.1 F1.4 B1.2 F1.5 B1.3 F1.6 B0.0 F1.7 B0.1 "
        "B0.2 B0.3 B1.4 B1.5 B1.6 B1.7 B0.4 B0.5 B0.6 B0.7"
    )
    # rank 1: F j0..7 | (F j8, B j0) .. (F j15, B j7) | B j8..15
    assert order(interleaved_one_f_one_b(1, 4, 2, 8)) == (
        "F0.0 F0.1 F0.2 F0.3 F1.0 F1.1 F1.2 F1.3 "
        "F0.4 B1.0 F0.5 B1.1 F0.6 B1.2 F0.7 B1.3 F1.4 B0.0 F1.5 B0.1 F1.6 B0.2 F1.7 B0.3 "
        "B1.4 B1.5 B1.6 B1.7 B0.4 B0.5 B0.6 B0.7"
    )
    # rank 3 (the last): F j0..3 | (F j4, B j0) .. (F j15, B j11) | B j12..15
    assert order(interleaved_one_f_one_b(3, 4, 2, 8)) == (
        "F0.0 F0.1 F0.2 F0.3 "
        "F1.0 B1.0 F1.1 B1.1 F1.2 B1.2 F1.3 B1.3 F0.4 B0.0 F0.5 B0.1 F0.6 B0.2 F0.7 B0.3 "
        "F1.4 B1.4 F1.5 B1.5 F1.6 B1.6 F1.7 B1.7 "
        "B0.4 B0.5 B0.6 B0.7"
    )


@pytest.mark.parametrize("pp, v, m, expected", [
    (2, 2, 4, [4, 2]),  # (pp-k-1)*2 + (v-1)*pp
    (4, 2, 8, [10, 8, 6, 4]),
    (4, 3, 8, [14, 12, 10, 8]),  # + (3-1)*4 = 8
    (4, 2, 4, [8, 8, 8, 8]),  # M == pp: all M*v forwards first
    (8, 2, 16, [22, 20, 18, 16, 14, 12, 10, 8]),
    (2, 4, 4, [8, 6]),  # 2 + 6 = 8 <= M*v = 16
])
def test_warmup_counts(pp, v, m, expected):
    assert [interleaved_warmup(k, pp, v, m) for k in range(pp)] == expected
    for k in range(pp):
        steps = interleaved_one_f_one_b(k, pp, v, m)
        assert [s.kind for s in steps[: expected[k]]] == ["F"] * expected[k]
        assert expected[k] == m * v or steps[expected[k] + 1].kind == "B"


@pytest.mark.parametrize("pp, v, m", [(2, 2, 4), (4, 2, 8), (4, 3, 8), (4, 2, 4), (2, 4, 6), (8, 2, 16)])
def test_every_call_once_and_in_micro_batch_order_per_chunk(pp, v, m):
    for k in range(pp):
        steps = schedule("interleaved-1f1b", k, pp, m, v)
        expected = [Step(kind, i, c) for kind in "FB" for c in range(v) for i in range(m)]
        assert sorted(steps) == sorted(expected)
        for c in range(v):
            # a chunk's sends and receives pair by tag in order: micro-batches ascend
            for kind in "FB":
                mbs = [s.micro_batch for s in steps if s.kind == kind and s.chunk == c]
                assert mbs == list(range(m))
            assert all(steps.index(Step("F", i, c)) < steps.index(Step("B", i, c)) for i in range(m))


def test_micro_batches_must_be_a_multiple_of_pp():
    with pytest.raises(ValueError, match="multiple of pp = 4"):
        interleaved_one_f_one_b(0, 4, 2, 6)


def test_one_chunk_warms_up_twice_as_long_as_plain_1f1b():
    # v = 1 through Megatron's interleaved formula: (pp-k-1)*2 = 2 warm-up forwards on
    # rank 0 of pp = 2 (plain 1F1B: pp-k-1 = 1), then (F2, B0) (F3, B1), then B2 B3.
    assert order(interleaved_one_f_one_b(0, 2, 1, 4)) == "F0.0 F0.1 F0.2 B0.0 F0.3 B0.1 B0.2 B0.3"
    assert order(one_f_one_b(0, 2, 4)) == "F0.0 F0.1 B0.0 F0.2 B0.1 F0.3 B0.2 B0.3"


def simulate(pp: int, v: int, m: int, orders, forward: float, backward: float) -> float:
    """Runs each rank's calls in its order, a call starting when the rank is free and
    its inputs are there (the previous virtual stage's forward, the next one's
    backward; messages take no time): the iteration time, or an AssertionError if the
    orders deadlock. `forward`/`backward` are one call's times."""
    done: dict[tuple[str, int, int], float] = {}  # (kind, virtual stage, mb) -> end
    position, clock = [0] * pp, [0.0] * pp
    stages = pp * v
    progress = True
    while progress:
        progress = False
        for k in range(pp):
            if position[k] == len(orders[k]):
                continue
            s = orders[k][position[k]]
            vs = s.chunk * pp + k
            if s.kind == "F":
                needs = [("F", vs - 1, s.micro_batch)] if vs > 0 else []
            else:
                needs = [("F", vs, s.micro_batch)] + ([("B", vs + 1, s.micro_batch)] if vs < stages - 1 else [])
            if all(n in done for n in needs):
                start = max([clock[k]] + [done[n] for n in needs])
                clock[k] = start + (forward if s.kind == "F" else backward)
                done[s.kind, vs, s.micro_batch] = clock[k]
                position[k] += 1
                progress = True
    assert position == [len(o) for o in orders], "the schedule deadlocks"
    return max(clock)


@pytest.mark.parametrize("pp, v, m", [(2, 2, 4), (4, 2, 8), (4, 2, 16), (4, 4, 8), (8, 2, 16)])
def test_interleaving_shrinks_the_bubble_v_fold(pp, v, m):
    # A stage's forward takes 1, its backward 2 (t_f + t_b = 3 per micro-batch); a
    # chunk holds 1/v of the stage's layers. 1F1B: (M + pp - 1) * 3. Interleaved: the
    # bubble (pp - 1) * 3 shrinks v-fold (Narayanan et al. §2.2): (M + (pp-1)/v) * 3.
    plain = simulate(pp, 1, m, [one_f_one_b(k, pp, m) for k in range(pp)], 1.0, 2.0)
    assert plain == (m + pp - 1) * 3
    orders = [interleaved_one_f_one_b(k, pp, v, m) for k in range(pp)]
    interleaved = simulate(pp, v, m, orders, 1.0 / v, 2.0 / v)
    assert interleaved == pytest.approx((m + (pp - 1) / v) * 3)


def test_in_flight_counts_chunk_micro_batches():
    # rank 0 of pp = 2, v = 2, M = 4 warms up with 4 forwards and runs one more before
    # its first backward: 5 (chunk, mb) activations, each half a stage's layers -
    # 2.5 stages' worth against plain 1F1B's 2 (pp - k).
    assert in_flight(interleaved_one_f_one_b(0, 2, 2, 4)) == 5
    assert in_flight(interleaved_one_f_one_b(1, 2, 2, 4)) == 3
    assert in_flight(one_f_one_b(0, 2, 4)) == 2
