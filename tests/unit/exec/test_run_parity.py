"""`stagec run` on real ranks computes what one PyTorch process computes.

A tiny Llama (tests/unit/templates/tiny_configs.py: H 16, 2 layers, 4 heads, 2 KV heads,
V 32) trains 20 AdamW steps in fp32 from the runtime's seeded initial weights, on
windows of a token file whose next token is always the previous one plus 1 (mod V),
so the loss falls far from ln V and a wrong update shows. Each strategy's per-step
losses must equal those of the same model in plain PyTorch (torch_models.py, written
independently of the templates) trained by torch.optim.AdamW in one process on the
same global batch: 1e-5 relative, the issue's bound (measured: ~1e-7, fp32 rounding
of sums in another order).
"""

from __future__ import annotations

import pytest

from tests.unit.exec.run_testing import compare_with_torch, config_file, parity_tokens


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("run")
    return tmp, config_file(tmp), parity_tokens(tmp)


def _compare(job, ranks: int, *strategy: str, batch: int, micro_batches: int = 1):
    tmp, config, tokens = job
    return compare_with_torch(tmp, config, tokens, ranks, *strategy, batch=batch, micro_batches=micro_batches)[0]


def test_one_rank_matches_torch(job):
    _compare(job, 1, batch=1)


def test_dp4_matches_torch(job):
    # B = --micro-batch 1 x dp 4 = 4 sequences per step
    _compare(job, 4, "--dp", "4", batch=4)


def test_fsdp2_matches_torch(job):
    _compare(job, 2, "--fsdp", "2", batch=2)


def test_fsdp2_with_prefetch_matches_torch(job):
    _compare(job, 2, "--fsdp", "2", "--prefetch", "--profiler", "cost-model", batch=2)


def test_tp2_with_sp_matches_torch(job):
    # tp does not split the batch: B = 1; the loss's split-vocab gradient gathers the logits
    _compare(job, 2, "--tp", "2", "--sp", batch=1)


def test_pp2_1f1b_matches_torch(job):
    # 2 stages, 4 micro-batches of 1 sequence: the same 4 sequences per step as one process
    _compare(job, 2, "--pp", "2", "--schedule", "1f1b", batch=1, micro_batches=4)


@pytest.mark.scale
def test_gradient_accumulation_4_with_dp4_matches_torch(job):
    # 4 micro-batches x dp 4 = 16 sequences per step
    _compare(job, 4, "--dp", "4", batch=4, micro_batches=4)


@pytest.mark.scale
def test_fsdp4_with_prefetch_matches_torch(job):
    _compare(job, 4, "--fsdp", "4", "--prefetch", "--profiler", "cost-model", batch=4)


@pytest.mark.scale
def test_ep2_mixtral_matches_torch(job):
    # Tiny Mixtral, 4 experts over ep 2. At capacity_factor 2.0 the capacity
    # C = 2.0 x top_k 2 x tokens / 4 experts = every token: no (token, expert) pair is
    # dropped. (With drops the sharded program applies the capacity to each rank's own
    # tokens, not the global batch's, so it is another model; measured 1e-3 apart.)
    tmp, _, tokens = job
    mixtral = config_file(tmp, "mixtral", capacity_factor=2.0)
    _compare((tmp, mixtral, tokens), 2, "--ep", "2", batch=2)


@pytest.mark.scale
def test_dp2_tp2_pp2_matches_torch(job):
    # 8 ranks: 2 stages, each dp 2 x tp 2; 2 micro-batches of 2 sequences
    _compare(job, 8, "--dp", "2", "--tp", "2", "--pp", "2", batch=2, micro_batches=2)


@pytest.mark.scale
@pytest.mark.parametrize("stage", ["1", "2"])
def test_dp2_zero_matches_torch(job, stage):
    # Megatron's distributed optimizer: gradient shards reduce-scattered, updated shards
    # gathered, one program holding layers of a state in two layouts (state.py)
    _compare(job, 2, "--dp", "2", "--zero", stage, batch=2)


@pytest.mark.scale
def test_cp2_matches_torch(job):
    _compare(job, 2, "--cp", "2", batch=1)
