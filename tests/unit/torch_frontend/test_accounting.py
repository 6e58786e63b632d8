"""Imported models give the built-in template's parameter count and per-iteration FLOPs
(and, as it happens, its peak memory) per rank under TP=8 and FSDP=8 - the same
accounting `stagec stats` runs (stg-autodiff, stg-shard, stg-match-collectives,
passes/analysis/accounting.py) - and its per-rank Chakra trace node counts.

The models are built at Llama-3-8B, Llama-3-70B and Mixtral-8x7B dimensions with 2
layers instead of 32 / 80 / 32: parameters and FLOPs are a per-layer part times L plus an L-free part, the
same in both programs (one stg.repeat L body each), so agreement at L = 2 is agreement
at any L. bench/import_llama70b.py imports the full 80 layers and compares the trace
counts there too (bench/results/import_llama70b*.json: equal under TP=8 and FSDP=8).
"""

from __future__ import annotations

import dataclasses

import pytest
from tests.unit.torch_frontend.llama_torch import make_model

from stagec.dialects import make_context
from stagec.frontends.templates import build_model, load_config
from stagec.frontends.torch.models import config_symbols, import_forward
from stagec.passes.analysis.accounting import account
from stagec.passes.schedule.pipeline import schedule
from stagec.passes.stg_autodiff import StgAutodiff
from stagec.passes.stg_match_collectives import StgMatchCollectives
from stagec.passes.stg_shard import StgShard

LAYERS = 2
STRATEGIES = {"tp8": {"tp": 8}, "fsdp8": {"fsdp": 8}}
SEQ = 4096


def training_step(module, strategy):
    StgAutodiff(optimizer="adamw").apply(make_context(), module)
    StgShard(**strategy).apply(make_context(), module)
    StgMatchCollectives().apply(make_context(), module)
    return module


def per_rank(module, strategy):
    batch = 8 if any(a in strategy for a in ("fsdp", "dp", "ep")) else 1
    result = account(training_step(module, strategy), {"B": batch, "S": SEQ, "M": 1})
    (rank_class,) = result.rank_classes[:1]
    return result.params, rank_class.flops.total, rank_class.memory.peak_bytes


def _plain(config):
    import torch

    with torch.device("meta"):
        model = make_model(config).to(torch.bfloat16).eval()
    return import_forward(model, config.vocab_size, config.name, config_symbols(config))


def _hf(config):
    pytest.importorskip("transformers")
    from stagec.frontends.torch.models import build_torch_model

    return build_torch_model(config, "hf", "bf16")


CASES = [("plain", "llama3-8b"), ("hf", "llama3-8b"), ("plain", "llama3-70b"), ("hf", "llama3-70b"), ("hf", "mixtral-8x7b")]
_cache: dict = {}


def imported(frontend: str, name: str):
    key = (frontend, name)
    if key not in _cache:
        config = dataclasses.replace(load_config(name), num_hidden_layers=LAYERS)
        _cache[key] = (config, (_plain if frontend == "plain" else _hf)(config))
    return _cache[key]


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
@pytest.mark.parametrize("frontend,name", CASES)
def test_params_and_flops_match_the_template(frontend, name, strategy):
    config, module = imported(frontend, name)
    want = per_rank(build_model(config), STRATEGIES[strategy])
    got = per_rank(module.clone(), STRATEGIES[strategy])
    assert got[0] == want[0]  # parameters: exactly the template's
    assert abs(got[1] - want[1]) <= 0.01 * want[1], (got[1], want[1])  # FLOPs per rank within 1%
    assert abs(got[2] - want[2]) <= 0.01 * want[2], (got[2], want[2])  # peak memory per rank within 1%


def test_imported_program_reads_like_the_template():
    """Op for op the template's program (up to the order of independent ops)."""
    config, module = imported("hf", "llama3-8b")
    template = build_model(config)
    assert sorted(op.name for op in module.walk()) == sorted(op.name for op in template.walk())
    params = lambda m: sorted((op.tensor_name.data, str(op.result.type)) for op in m.walk() if op.name == "stg.param")  # noqa: E731
    assert params(module) == params(template)
    assert module.attributes["stg.config"] == template.attributes["stg.config"]


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
@pytest.mark.parametrize("frontend,name", [*CASES, ("hf", "gpt3-5b")])
def test_trace_operator_counts_match_the_template(frontend, name, strategy):
    """Per-rank Chakra node counts by category (runtime/chakra/emit.py) within 1%."""
    emit = pytest.importorskip("stagec.runtime.chakra.emit")
    config, module = imported(frontend, name)
    batch = 8 if "fsdp" in STRATEGIES[strategy] else 1
    bindings = {"B": batch, "S": SEQ, "M": 1}
    counts = []
    for m in (build_model(config), module.clone()):
        programs, _ = emit.build_programs(schedule(training_step(m, STRATEGIES[strategy])), bindings)
        counts.append([(len(p), p.counts(), p.totals()["flops"]) for p in programs])
    (want, got) = counts
    assert len(got) == len(want)
    for (n_got, by_got, f_got), (n_want, by_want, f_want) in zip(got, want):
        assert abs(n_got - n_want) <= 0.01 * n_want, (n_got, n_want)
        assert set(by_got) == set(by_want)
        for category, n in by_want.items():
            assert abs(by_got[category] - n) <= 0.01 * n, (category, by_got[category], n)
        assert abs(f_got - f_want) <= 0.01 * f_want


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_gpt2_style_model_matches_the_template(strategy):
    """HF's GPT2LMHeadModel at GPT-3 5B dims: Conv1D weights [in, out], the fused c_attn
    (declared [H, 3, N*D] so that TP splits each of q, k, v by heads), learned
    positions, the tied head."""
    config, module = imported("hf", "gpt3-5b")
    assert per_rank(module.clone(), STRATEGIES[strategy]) == per_rank(build_model(config), STRATEGIES[strategy])


@pytest.mark.parametrize("strategy", [{"ep": 8}, {"dp": 2, "tp": 4, "sp": True}], ids=["ep8", "dp2-tp4-sp"])
def test_mixtral_matches_the_template_under_expert_and_mixed_parallelism(strategy):
    config, module = imported("hf", "mixtral-8x7b")
    assert per_rank(module.clone(), strategy) == per_rank(build_model(config), strategy)
