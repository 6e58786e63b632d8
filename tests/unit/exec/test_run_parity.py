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

import numpy as np
import pytest

from tests.unit.exec.run_testing import config_file, max_relative_error, stagec_run, torch_losses

STEPS, SEQ = 20, 8
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("run")
    tokens = tmp / "tokens.npy"
    np.save(tokens, (np.arange(4096) * 1 + 3) % 32)
    return tmp, config_file(tmp), str(tokens)


def _compare(job, ranks: int, *strategy: str, batch: int, micro_batches: int = 1):
    tmp, config, tokens = job
    expected = torch_losses(config, STEPS, batch=batch, seq=SEQ, micro_batches=micro_batches, tokens=tokens)
    # the reference learns: the comparison is not of near-constant numbers
    assert expected[-1] < 0.8 * expected[0], expected  # measured: 3.44 -> 2.60 (B 1) ... 0.93 (B 4)
    extra = ["--micro-batches", str(micro_batches)] if micro_batches > 1 else []
    got = stagec_run("-n", str(ranks), *strategy, *extra, "--model", config, "--seq", str(SEQ),
                     "--steps", str(STEPS), "--data", tokens, tmp_path=tmp)
    assert got["bindings"]["M"] == micro_batches
    error = max_relative_error(got["losses"], expected)
    assert error <= TOLERANCE, (error, got["losses"], expected)
    return error


def test_one_rank_matches_torch(job):
    _compare(job, 1, batch=1)


def test_dp4_matches_torch(job):
    # B = --micro-batch 1 x dp 4 = 4 sequences per step
    _compare(job, 4, "--dp", "4", batch=4)


def test_fsdp2_matches_torch(job):
    _compare(job, 2, "--fsdp", "2", batch=2)


def test_fsdp2_with_prefetch_matches_torch(job):
    _compare(job, 2, "--fsdp", "2", "--prefetch", batch=2)
