"""balance=cost: where a large head moves layers off the last stage.

The tiny Llama with 8 layers and a 256-word vocabulary: per token, the head's GEMMs
alone (2*H*V forward, 4*H*V backward = 24576 FLOPs at H = 16) weigh about two
layers. The expected cut is derived here by trying every cut into contiguous runs of
at least one layer, with the FLOPs the ops report (stg.cost's CostInterface through
region_cost, B = 1, S = seq_len), and keeping the one whose busiest stage does least,
earlier stages taking more layers on a tie.
"""

from __future__ import annotations

import itertools

import pytest
from tests.unit.pipeline.pipeline_testing import TINY, pipelined, train_step
from xdsl.dialects import func

from stagec.dialects import stg
from stagec.dialects.stg.cost import region_cost
from stagec.passes.pipeline.step import find_train_step

CONFIG = {**TINY["llama"], "num_hidden_layers": 8, "vocab_size": 256}
SEQ = 6


def costs(module):
    """FLOPs (forward + backward, per micro-batch) of the embedding side, one layer,
    and the head side."""
    step = find_train_step(module)
    env = {**{k: v.value.data for k, v in module.attributes["stg.config"].data.items()}, "B": 1, "S": SEQ}

    def flops(ops) -> int:
        return int(region_cost(ops)[0].evaluate_fraction(env))

    forward = [o for o in step.forward.body.block.ops if not isinstance(o, stg.YieldOp)]
    backward = [o for o in step.backward.body.block.ops if not isinstance(o, stg.YieldOp)]
    (stack,) = step.stacks
    f, b = forward.index(stack.forward), backward.index(stack.backward)
    layer = flops(stack.forward.body.block.ops) + flops(stack.backward.body.block.ops)
    return flops(forward[:f]) + flops(backward[b + 1 :]), layer, flops(forward[f + 1 :]) + flops(backward[:b])


def best_cut(first: int, layer: int, last: int, layers: int, pp: int) -> list[int]:
    best = None
    for cuts in itertools.combinations(range(1, layers), pp - 1):
        counts = [b - a for a, b in zip((0, *cuts), (*cuts, layers))]
        loads = [c * layer + (first if k == 0 else 0) + (last if k == pp - 1 else 0) for k, c in enumerate(counts)]
        key = (max(loads), [-c for c in counts])
        if best is None or key < best[0]:
            best = (key, counts)
    return best[1]


def stage_layers(module) -> list[tuple[str, str]]:
    """(count, offset) of each stage's forward layer slice."""
    out = []
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data.endswith("_forward"):
            (repeat,) = [o for o in op.walk() if isinstance(o, stg.RepeatOp)]
            out.append((str(repeat.count_expr), str(repeat.offset_expr)))
    return out


@pytest.mark.parametrize("pp, expected", [(2, [5, 3]), (3, [3, 4, 1]), (4, [2, 3, 2, 1])])
def test_cost_balance_moves_layers_off_the_head_stage(pp, expected):
    module = train_step(CONFIG)
    first, layer, last = costs(module)
    assert 6 * 16 * 256 * SEQ < last < 3 * layer  # the head weighs about two layers
    assert best_cut(first, layer, last, 8, pp) == expected
    staged = pipelined(module, pp=pp, balance="cost", seq_len=SEQ)
    offsets = [sum(expected[:k]) for k in range(pp)]
    assert stage_layers(staged) == [(str(c), str(o)) for c, o in zip(expected, offsets)]


def test_layer_balance_splits_evenly():
    staged = pipelined(train_step(CONFIG), pp=4)
    assert stage_layers(staged) == [("L/4", "0"), ("L/4", "L/4"), ("L/4", "L/2"), ("L/4", "3*L/4")]
