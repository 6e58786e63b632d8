"""passes/shard/solver.py `Solver`: the remembered answer is `solve`'s, for every
signature field and layout that changes the answer, and a caller cannot corrupt it."""

import pytest
from xdsl.dialects.builtin import f32

from stagec.dialects.stg.attributes import TensorType
from stagec.dialects.stg.sharding import Linearity, Signature
from stagec.passes.shard.solver import Solver, Unshardable, Weigher, solve
from stagec.passes.shard.strategy import Strategy
from stagec.dialects.symbolic import Expr

STRATEGY = Strategy({"dp": Expr.of(2), "tp": Expr.of(4)})
WEIGH = Weigher({}, STRATEGY.axes)

# a row-parallel projection: x[s, h/tp] . w[h/tp, o] -> y[s, o], partial over tp
X = TensorType(["S", ("H", ["tp"])], f32)
W = TensorType([("H", ["tp"]), "O"], f32)
Y = TensorType(["S", "O"], f32)
MATMUL = Signature(["ab", "bc"], ["ac"], Linearity.MULTILINEAR, slices_locally=True)


def test_a_remembered_answer_is_solves():
    solver = Solver(STRATEGY, WEIGH)
    first = solver(MATMUL, [X, W], [Y], [False, True])
    again = solver(MATMUL, [X, W], [Y], [False, True])
    expected = solve(MATMUL, [X, W], [Y], STRATEGY, [False, True], WEIGH)
    assert first.operands == again.operands == expected.operands
    assert first.results == again.results == expected.results
    # the contracted h split over tp: the result is a partial sum over tp
    assert expected.results[0].partial_axes == frozenset({"tp"})
    assert len(solver._solutions) == 1


def test_each_input_that_changes_the_answer_is_part_of_the_key():
    solver = Solver(STRATEGY, WEIGH)
    solver(MATMUL, [X, W], [Y], [False, True])
    # contract_sums=False: the same layouts cannot be solved (a split contracted dim)
    no_sums = Signature(["ab", "bc"], ["ac"], Linearity.MULTILINEAR, slices_locally=True, contract_sums=False)
    with pytest.raises(Unshardable, match="a contracted dim would be split"):
        solver(no_sums, [X, W], [Y], [False, True])
    # another operand layout, another answer
    x_whole = TensorType(["S", "H"], f32)
    other = solver(MATMUL, [x_whole, W], [Y], [False, True])
    assert other.operands == solve(MATMUL, [x_whole, W], [Y], STRATEGY, [False, True], WEIGH).operands
    # another anchoring
    solver(MATMUL, [X, W], [Y], [False, False])
    assert len(solver._solutions) == 3


def test_a_caller_changing_its_answer_leaves_the_remembered_one_alone():
    solver = Solver(STRATEGY, WEIGH)
    first = solver(MATMUL, [X, W], [Y], [False, True])
    first.operands[0] = Y
    first.results.clear()
    again = solver(MATMUL, [X, W], [Y], [False, True])
    assert again.operands == solve(MATMUL, [X, W], [Y], STRATEGY, [False, True], WEIGH).operands
    assert len(again.results) == 1
