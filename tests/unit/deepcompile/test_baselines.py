"""The ZeRO-3 and FSDP2 baselines (stg-zero3, stg-fsdp2) and stg-unroll-layers: what
they decide on Llama-3.2-1B, that the rewritten steps compute the unsharded step, and
that the unrolled schedules are faster where the frameworks' prefetch crosses layers."""

from __future__ import annotations

import pytest
from tests.unit.shard.shard_testing import assert_same_step, run, state, train_step, transformed

from stagec.dialects import make_context
from stagec.dialects.stg.structure import RepeatOp
from stagec.frontends.templates import build_model, load_config
from stagec.passes.deepcompile.decisions import take
from stagec.passes.stg_autodiff import StgAutodiff
from stagec.passes.stg_fsdp2 import StgFsdp2, fsdp2
from stagec.passes.stg_zero3 import zero3
from stagec.runtime.cost.hardware_description import load_hardware
from stagec.runtime.sim.network import NetworkModel
from stagec.runtime.sim.simulate import simulate_module

FULLY_SHARDED = "builtin.module(stg-shard{fsdp=4}, stg-match-collectives, stg-fully-shard, stg-schedule)"
UNROLLED = "builtin.module(stg-shard{fsdp=4}, stg-match-collectives, stg-fully-shard, stg-unroll-layers, stg-schedule)"
BINDINGS = {"B": 4, "S": 256, "M": 1}

# Llama-3.2-1B's layer, elements of each gathered weight (H = 2048, 32 heads and 8 KV
# heads of 64, F = 8192): q, o 2048 x 2048 = 4,194,304; k, v 512 x 2048 = 1,048,576;
# the norms 2048; gate, up, down 8192 x 2048 = 16,777,216.
# DeepSpeed's bucket (5e7 elements) after the input norm's fetch: q, k, v, o, norm, gate
# and up sum to 44,042,240 < 5e7, so down joins too: the whole rest of the layer.


@pytest.fixture(scope="module")
def llama_1b():
    module = build_model(load_config("llama3.2-1b"), "bf16")
    StgAutodiff(micro_batches=1, recompute=True).apply(make_context(), module)
    return module


def test_zero3_prefetches_a_bucket_after_each_fetch(llama_1b):
    module = transformed(llama_1b, FULLY_SHARDED)
    result = zero3(module, bindings=BINDINGS)
    layer = ["model.layers.self_attn.q_proj.weight", "model.layers.self_attn.k_proj.weight",
             "model.layers.self_attn.v_proj.weight", "model.layers.self_attn.o_proj.weight",
             "model.layers.post_attention_layernorm.weight", "model.layers.mlp.gate_proj.weight",
             "model.layers.mlp.up_proj.weight", "model.layers.mlp.down_proj.weight"]
    # per graph (forward body, backward's recompute body): the layer's 8 after the input
    # norm; in the forward and backward blocks, the final norm after the (tied) embedding
    assert result.groups == [layer, ["model.norm.weight"], layer, ["model.norm.weight"]]
    assert result.prefetched == 18 and result.coalesced_groups == 2
    assert [d.value for d in take(module)] == [18, 2]


def test_fsdp2_groups_a_layer_per_graph(llama_1b):
    module = transformed(llama_1b, FULLY_SHARDED)
    result = fsdp2(module)
    # structured layer loop: a group per body - the forward layer (9 weights), the
    # recompute's layer - and the root (embedding, final norm) once, gathered before the
    # forward and kept into the backward (FSDP2 does not reshard the root after the
    # forward); the next layer is in the next iteration: no prefetch inside the loop
    assert result.groups == 3 and result.gathers_grouped == 9 + 9 + 2 and result.prefetched == 0
    assert result.root_kept == 2 and result.members[-1] == ["model.embed_tokens.weight", "model.norm.weight"]


def test_unrolled_fsdp2_prefetches_the_next_layer(llama_1b):
    module = transformed(llama_1b, UNROLLED)
    assert not any(isinstance(op, RepeatOp) and op.parent_op().kind.data != "optimizer" for op in module.walk())
    result = fsdp2(module)
    # 16 layers in the forward and 16 in the backward, plus the root group once (kept
    # from the forward into the backward); every layer group after the first of its
    # phase is issued at the previous group's first wait
    assert result.groups == 16 + 16 + 1 and result.prefetched == 15 + 15 and result.root_kept == 2


@pytest.mark.scale
def test_unrolled_baselines_beat_the_per_body_ones(llama_1b):
    # Llama-3.2-1B on 4 H100s (one NVLink node), fsdp=4, 4 x 256 tokens. The fully-sharded
    # step without any prefetch is the same whether unrolled or not (the same schedule);
    # ZeRO-3's queue and FSDP2's next group cross layers only when unrolled.
    network = NetworkModel.from_hardware(load_hardware("h100-sxm"), 4)
    structured = transformed(llama_1b, FULLY_SHARDED)
    unrolled = transformed(llama_1b, UNROLLED)
    base_s = simulate_module(structured, network, BINDINGS, fork=False).iteration_ns
    base_u = simulate_module(unrolled, network, BINDINGS, fork=False).iteration_ns
    assert base_s == base_u  # measured: 30.89 ms both
    times = {}
    for name, form in (("structured", structured), ("unrolled", unrolled)):
        for baseline, rewrite in (("zero3", lambda m: zero3(m, bindings=BINDINGS)), ("fsdp2", fsdp2)):
            module = form.clone()
            rewrite(module)
            module.verify()
            times[name, baseline] = simulate_module(module, network, BINDINGS, fork=False).iteration_ns
    # measured: ZeRO-3 29.16 -> 26.64 ms, FSDP2 28.95 -> 24.72 ms
    assert times["unrolled", "zero3"] < times["structured", "zero3"] < base_s
    assert times["unrolled", "fsdp2"] < times["structured", "fsdp2"] < base_s


@pytest.mark.parametrize("micro_batches", [1, 2])
@pytest.mark.parametrize("rewrite", ["zero3", "fsdp2", "unrolled-fsdp2"])
def test_baseline_step_equals_unsharded(micro_batches, rewrite):
    config, module = train_step("llama", micro_batches, recompute=True)
    b = s = 4
    params, inputs = state(config, b, s, micro_batches)
    reference = run(module, params, inputs, b, s)
    pipeline = "builtin.module(stg-shard{fsdp=2}, stg-match-collectives, stg-fully-shard, " + \
        ("stg-unroll-layers, " if rewrite.startswith("unrolled") else "") + "stg-schedule)"
    sharded = transformed(module, pipeline)
    if rewrite == "zero3":
        assert zero3(sharded, bindings={"B": b, "S": s, "M": micro_batches}).prefetched > 0
    else:
        result = fsdp2(sharded, StgFsdp2())
        assert result.groups > 0 and result.root_kept > 0  # the root kept into the backward
    sharded.verify()
    assert_same_step(reference, run(sharded, params, inputs, b, s), rtol=1e-12)


@pytest.mark.parametrize("recompute", [False, True])
def test_unrolled_step_equals_unsharded(recompute):
    """stg-unroll-layers with and without recompute: without it the forward phase yields
    several stacked activations, each unrolled in turn (a regression: the second one
    left the first one's pieces on the phase it replaced, `stagec compile` crashed)."""
    config, module = train_step("llama", 1, recompute=recompute)
    b = s = 4
    params, inputs = state(config, b, s, 1)
    reference = run(module, params, inputs, b, s)
    unrolled = transformed(module, "builtin.module(stg-shard{fsdp=2}, stg-match-collectives, stg-fully-shard, "
                                   "stg-unroll-layers, stg-schedule)")
    unrolled.verify()
    assert not any(op.name == "stg.repeat" and "forward" in str(op.parent_op()) for op in unrolled.walk())
    assert_same_step(reference, run(unrolled, params, inputs, b, s), rtol=1e-12)
