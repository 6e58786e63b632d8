"""Mamba under tp (issue 17, class 11): stg-shard splits the inner dim DI over tp as
Megatron's Mamba layer does - in_proj column-parallel, the x_proj, dt_proj, A_log, D,
the discretisation and the selective scan per channel, out_proj row-parallel (its
partial sum all-reduced, or reduce-scattered with sp) - and x_proj's [R + 2*DS] output
summed over tp (it contracts DI). The sharded step equals the unsharded one (float64,
tiny Mamba, to 1e-12 relative), and the parameters each rank holds fall by tp.

One difference from Megatron (docs/sharding.md): HF's in_proj stacks the x and z
halves ([x; z] rows), so a rank's block of in_proj's output is not its channels' x and
z; the output is all-gathered over tp before the split (Megatron permutes the
checkpoint's rows per rank instead).

Tiny Mamba (tests/unit/templates/tiny_configs.py): H = 16, DI = expand * H = 32,
DS = 4, R = 3, V = 32, L = 2, embedding tied to the head. A layer holds
    norm 16 + in_proj 2*DI*H 1024 + x_proj (R + 2*DS)*DI 352 + dt_proj DI*R 96
    + dt_proj.bias 32 + A_log DI*DS 128 + D 32 + out_proj H*DI 512 = 2192,
the model 2 * 2192 + embedding V*H 512 + norm_f 16 = 4912. With tp = 2 all but the
norms halve: a layer 16 + 512 + 176 + 48 + 16 + 64 + 16 + 256 = 1104, a rank
2 * 1104 + 512/2 + 16 = 2480.
"""

from __future__ import annotations

import pytest
from tests.unit.shard.shard_testing import assert_same_step, run, state, train_step, transformed
from tests.unit.templates.tiny_configs import TINY

from stagec.dialects import make_context
from stagec.frontends.templates import build_model, load_config
from stagec.passes.analysis.accounting import account
from stagec.passes.diagnostics import PassError
from stagec.passes.stg_autodiff import StgAutodiff
from stagec.tools.pipeline_spec import build_pipeline

B, S, M = 2, 4, 2
STRATEGIES = {"tp2": "tp=2", "tp2+sp": "tp=2 sp=true", "dp2+tp2": "dp=2 tp=2", "tp4": "tp=4"}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_mamba_tp_step_equals_unsharded(strategy):
    config, module = train_step("mamba", M)
    params, inputs = state(config, B, S, M)
    reference = run(module, params, inputs, B, S)
    sharded = transformed(module, f"builtin.module(stg-shard{{{STRATEGIES[strategy]}}})")
    layouts = {op.tensor_name.data: op.result.type.layout_str() for op in sharded.walk() if op.name == "stg.param"}
    p = "backbone.layers.mixer"
    assert layouts[f"{p}.in_proj.weight"] == "[2*DI/tp, H]"  # column-parallel
    assert layouts[f"{p}.out_proj.weight"] == "[H, DI/tp]"  # row-parallel
    assert layouts[f"{p}.A_log"] == "[DI/tp, DS]"  # the scan per channel
    assert_same_step(reference, run(sharded, params, inputs, B, S), rtol=1e-12)


def test_mamba_parameters_per_rank_fall_by_tp():
    module = build_model(load_config(TINY["mamba"]), "f32")
    StgAutodiff(micro_batches=1, optimizer="adamw").apply(make_context(), module)
    build_pipeline("builtin.module(stg-shard{tp=2},stg-match-collectives)", mlir_syntax=True).apply(make_context(), module)
    acc = account(module, {"B": B, "S": S})
    (rank,) = acc.rank_classes
    assert acc.params == 2 * 2192 + 512 + 16 == 4912
    assert rank.params == 2 * 1104 + 256 + 16 == 2480


def test_tp_must_divide_the_inner_dim():
    module = build_model(load_config(TINY["mamba"]), "f32")
    with pytest.raises(PassError, match=r"^tp = 3 does not divide the model's Mamba inner dim DI = 32$"):
        build_pipeline("builtin.module(stg-shard{tp=3})", mlir_syntax=True).apply(make_context(), module)
