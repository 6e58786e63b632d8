"""The cost model over whole training steps built from model templates: every op with
a cost gets one, and the FLOPs it reports are accounting.py's (stg.vjp included)."""

import pytest

from stagec.dialects import make_context
from stagec.dialects.stg.comm import CommOp
from stagec.dialects.stg.cost import CostInterface
from stagec.dialects.stg.training import VjpOp
from stagec.frontends.templates import build_model, load_config
from stagec.passes.analysis.accounting import account, module_bindings
from stagec.passes.analysis.liveness import Evaluator
from stagec.passes.analysis.memory import repeat_multiplicity
from stagec.passes.stg_autodiff import StgAutodiff
from stagec.passes.stg_shard import StgShard
from stagec.runtime.cost import CostModel


def costed_ops(module):
    """Every op with a cost, not counting the bodies of stg.vjp (the vjp costs them)."""
    return [op for op in module.walk() if isinstance(op, CostInterface) and not isinstance(op.parent_op(), VjpOp)]


def test_llama_step_flops_match_accounting():
    module = build_model(load_config("llama3-8b"), "bf16")
    StgAutodiff(optimizer="adamw").apply(make_context(), module)
    bindings = {"B": 1, "S": 4096}
    env = module_bindings(module, bindings)
    model = CostModel("h100-sxm")
    ev = Evaluator(env)
    total_flops, total_micros = 0, 0.0
    for op in costed_ops(module):
        cost = model.op_cost(op, env)
        assert cost.micros >= 0 and cost.source == "roofline"
        times = repeat_multiplicity(op, ev)
        total_flops += times * cost.num_ops
        total_micros += times * cost.micros
    assert total_flops == account(module, bindings).rank_classes[0].flops.total
    # ~6 x 8e9 parameters x 4096 tokens = 2e14 FLOPs; at 742 TFLOP/s that alone is
    # 0.27 s, and the memory-bound ops and the optimizer add to it
    assert 0.27e6 < total_micros < 1.0e6


def test_sharded_step_costs_its_collectives():
    module = build_model(load_config("llama3-8b"), "bf16")
    StgAutodiff(optimizer="adamw").apply(make_context(), module)
    StgShard(dp=2, tp=8).apply(make_context(), module)
    env = module_bindings(module, {"B": 2, "S": 4096})
    model = CostModel("h100-sxm")
    comm = [op for op in costed_ops(module) if isinstance(op, CommOp)]
    assert comm, "stg-shard inserts collectives"
    for op in comm:
        cost = model.op_cost(op, env)
        assert cost.num_ops == 0 and cost.source == "alpha_beta"
        assert (cost.micros > 0) == (cost.tensor_size > 0)


@pytest.mark.parametrize("name", ["gpt3-5b", "mixtral-8x7b", "deepseek-v2-lite", "mamba-130m"])
def test_every_template_op_has_a_cost(name):
    module = build_model(load_config(name), "bf16")
    StgAutodiff(optimizer="adamw").apply(make_context(), module)
    env = module_bindings(module, {"B": 1, "S": 1024})
    model = CostModel("a100-80gb")
    for op in costed_ops(module):
        assert model.op_cost(op, env).micros >= 0


def test_an_unmatched_reshard_costs_what_its_matched_collectives_cost():
    from stagec.passes.stg_match_collectives import StgMatchCollectives

    module = build_model(load_config("llama3-8b"), "bf16")
    StgAutodiff(optimizer="adamw").apply(make_context(), module)
    StgShard(dp=2, tp=8).apply(make_context(), module)
    env = module_bindings(module, {"B": 2, "S": 4096})
    ev = Evaluator(env)

    def comm_micros(m):
        model = CostModel("h100-sxm")
        ops = [op for op in costed_ops(m) if isinstance(op, CommOp)]
        return {op.name for op in ops}, sum(repeat_multiplicity(op, ev) * model.op_cost(op, env).micros for op in ops)

    matched = module.clone()
    StgMatchCollectives().apply(make_context(), matched)
    names, unmatched_micros = comm_micros(module)
    matched_names, matched_micros = comm_micros(matched)
    assert "stg.reshard" in names and "stg.reshard" not in matched_names
    assert unmatched_micros == pytest.approx(matched_micros) and matched_micros > 0
