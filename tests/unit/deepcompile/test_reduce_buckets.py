"""stg-reduce-buckets, DeepCompile's and ZeRO-3's reduce buckets: the buckets made on
Llama-3.2-1B against DeepSpeed's flush rule by hand, the bucketed step computing the
unsharded one (interpreter, float64), and properties over any bucket size."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.shard.shard_testing import assert_same_step, run, state, train_step, transformed

from stagec.dialects import make_context
from stagec.dialects.stg.comm import ReduceScatterOp
from stagec.dialects.stg.memory import WaitOp
from stagec.dialects.stg.schedule import GroupOp
from stagec.frontends.templates import build_model, load_config
from stagec.passes.analysis.accounting import module_bindings
from stagec.passes.analysis.liveness import Evaluator, element_bytes
from stagec.passes.deepcompile.decisions import take
from stagec.passes.stg_autodiff import StgAutodiff
from stagec.passes.stg_reduce_buckets import StgReduceBuckets, reduce_buckets

SCHEDULED = ("builtin.module(stg-shard{fsdp=2}, stg-match-collectives, stg-fully-shard, stg-schedule, "
             "stg-defer-gradient-waits)")
B = S = 4


@pytest.fixture(scope="module")
def llama_1b():
    module = build_model(load_config("llama3.2-1b"), "bf16")
    StgAutodiff(micro_batches=1, recompute=True).apply(make_context(), module)
    return transformed(module, SCHEDULED.replace("fsdp=2", "fsdp=4"))


def test_buckets_follow_deepspeeds_flush_rule_on_llama_1b(llama_1b):
    # Llama-3.2-1B (H 2048, F 8192, 32 heads and 8 KV heads of 64, V 128,256), the
    # gradients in the order the backward reduces them:
    #   root block (the backward phase): embedding V x H = 262,668,288, final norm 2,048;
    #   layer body: down, up, gate 16,777,216 each, post-attention norm 2,048, o 4,194,304,
    #   v, k 1,048,576 each, q 4,194,304, input norm 2,048 (60,821,504 in all).
    # ReduceBucket::shouldFlush: the bucket holds something and offset + numel > size.
    # 5e8: the root's two fit one (262,670,336), the body's nine another.
    module = llama_1b.clone()
    result = reduce_buckets(module, bindings={"B": 4, "S": 256})
    assert result.sizes == [262_670_336, 60_821_504] and result.gradients == 11
    assert [d.value for d in take(module)] == [2, 11]
    # 2e7: the embedding alone (larger than the bucket: it grows), then the norm; down;
    # up; gate + norm = 16,779,264 (+ o would be 20,973,568); o, v, k, q, norm = 10,487,808
    module = llama_1b.clone()
    result = reduce_buckets(module, StgReduceBuckets(bucket_elements=20_000_000), bindings={"B": 4, "S": 256})
    assert result.sizes == [262_668_288, 2_048, 16_777_216, 16_777_216, 16_779_264, 10_487_808]
    groups = [op for op in module.walk() if isinstance(op, GroupOp) and op.collective_kind() is ReduceScatterOp]
    assert sorted(len(g.members()) for g in groups) == [1, 1, 1, 1, 2, 5]  # a bucket is a group


@pytest.mark.parametrize(("model", "micro_batches", "recompute"),
                         [("llama", 1, True), ("llama-tied", 2, False), ("mixtral-nodrop", 4, True)])
@pytest.mark.parametrize("double_buffer", [True, False])
def test_bucketed_step_equals_unsharded(model, micro_batches, recompute, double_buffer):
    config, module = train_step(model, micro_batches, recompute=recompute)
    params, inputs = state(config, B, S, micro_batches)
    reference = run(module, params, inputs, B, S)
    sharded = transformed(module, SCHEDULED)
    # 300 elements: a few gradients of the tiny models (H 16, F 24) per bucket
    result = reduce_buckets(sharded, StgReduceBuckets(bucket_elements=300, double_buffer=double_buffer),
                            bindings={"B": B, "S": S})
    sharded.verify()
    assert result.buckets < result.gradients  # some buckets hold several
    assert_same_step(reference, run(sharded, params, inputs, B, S), rtol=1e-12)


def _reductions(module) -> list[ReduceScatterOp]:
    return [op for op in module.walk() if isinstance(op, ReduceScatterOp)]


@pytest.fixture(scope="module")
def tiny_scheduled():
    _, module = train_step("llama", 2, recompute=True)
    return transformed(module, SCHEDULED)


@settings(max_examples=20, deadline=None)
@given(elements=st.integers(1, 5_000), double_buffer=st.booleans())
def test_every_gradient_is_in_one_bucket_waited_for_after_its_issue(tiny_scheduled, elements, double_buffer):
    module = tiny_scheduled.clone()
    before = _reductions(module)
    ev = Evaluator(module_bindings(module, {"B": B, "S": S}))
    total = sum(ev.device_bytes(r.input.type) // element_bytes(r.input.type.element_type) for r in before)
    result = reduce_buckets(module, StgReduceBuckets(bucket_elements=elements, double_buffer=double_buffer),
                            bindings={"B": B, "S": S})
    module.verify()  # every wait is dominated by its bucket's issue
    assert len(_reductions(module)) == len(before) == result.gradients
    assert sum(result.sizes) == total
    members = _bucket_members(module)
    assert len(members) == result.buckets and sum(members) == result.gradients
    # a bucket holds more than the limit only as one gradient larger than it
    assert all(size <= elements or n == 1 for size, n in zip(result.sizes, members))
    # a second run keeps every bucket as it is
    again = module.clone()
    reduce_buckets(again, StgReduceBuckets(bucket_elements=elements, double_buffer=double_buffer),
                   bindings={"B": B, "S": S})
    assert str(again) == str(module)
    # each wait stands after its issue in the same block
    for wait in (op for op in module.walk() if isinstance(op, WaitOp)):
        issue = wait.operands[0].owner
        assert issue.parent_block() is wait.parent_block()
        assert issue.parent_block().get_operation_index(issue) < wait.parent_block().get_operation_index(wait)


def _bucket_members(module) -> list[int]:
    """Members per bucket (every bucket is a group), in the order reduce_buckets lists
    them (blocks, then issue order)."""
    from stagec.passes.schedule.grouping import blocks_outside_groups

    counts = []
    for block in blocks_outside_groups(module):
        for op in block.ops:
            if isinstance(op, GroupOp) and op.collective_kind() is ReduceScatterOp:
                counts.append(len(op.members()))
    return counts


def test_stagec_compile_defaults_to_the_pass_bucket():
    # the CLI keeps its own copy of the default so that `--help` does not import the pass
    from stagec.passes.stg_reduce_buckets import DEEPSPEED_REDUCE_BUCKET_SIZE
    from stagec.tools import stagec_compile

    assert stagec_compile.DEEPSPEED_REDUCE_BUCKET_SIZE == DEEPSPEED_REDUCE_BUCKET_SIZE == 500_000_000
    assert stagec_compile.CompileSettings().reduce_bucket == DEEPSPEED_REDUCE_BUCKET_SIZE
