"""Prefill and decode steps run by the reference interpreter in float64: a prefill of
S prompt tokens, then a decode step of token S over the cache it wrote, gives the
same next-token logits as one prefill of all S + 1 tokens (the cache holds exactly
what attention needs; MLA's absorbed decode equals its expanded prefill)."""

from __future__ import annotations

import pytest
import torch
from tests.unit.templates.tiny_configs import TINY
from tests.unit.templates.torch_models import reference_model, stg_state

from stagec.frontends.templates import build_model, example_inputs, load_config, rope_angles
from stagec.runtime import interpreter

B, S = 2, 5

# every attention template; MoE configs get capacity for every token so that routing
# the S + 1 tokens of one prefill drops none (the capacity C depends on B * S)
NAMES = ["gpt", "llama", "mixtral", "deepseek-moe", "mla", "mla-qlora"]


def _config(name):
    raw = dict(TINY[name])
    if "num_experts_per_tok" in raw:
        raw["capacity_factor"] = raw["num_local_experts"] / raw["num_experts_per_tok"]
    return load_config(raw)


def _inputs(config, ids, start):
    batch, length = ids.shape
    inputs = {"input_ids": ids}
    if config.family == "gpt":
        inputs["position_ids"] = torch.arange(start, start + length).expand(batch, length).contiguous()
    if config.rotary_dim is not None:
        inputs["rope.angles"] = rope_angles(start + length, config.rotary_dim, config.rope_theta)[start:]
    return inputs


@pytest.mark.parametrize("name", NAMES)
def test_decode_after_prefill_equals_a_longer_prefill(name):
    config = _config(name)
    params = stg_state(reference_model(config))
    ids = example_inputs(config, B, S + 1, "f64")["input_ids"]

    whole = interpreter.StateStore(params=params, inputs=_inputs(config, ids, 0))
    (expected,) = interpreter.Interpreter(build_model(config, "f64", "prefill"),
                                          bindings={"B": B, "S": S + 1, "T": S + 1}).run("prefill", whole)

    store = interpreter.StateStore(params=params, inputs=_inputs(config, ids[:, :S], 0))
    # the prefill's cache is sized for the context of S + 1 tokens, the decode step's token to come
    (first,) = interpreter.Interpreter(build_model(config, "f64", "prefill"),
                                       bindings={"B": B, "S": S, "T": S + 1}).run("prefill", store)
    store.inputs = _inputs(config, ids[:, S:], S)
    (logits,) = interpreter.Interpreter(build_model(config, "f64", "decode"),
                                        bindings={"B": B, "S": 1, "T": S + 1}).run("decode", store)

    assert expected.shape == logits.shape == (B, 1, config.vocab_size)
    torch.testing.assert_close(logits, expected, rtol=1e-10, atol=1e-12)
    # and the prefill's own next-token logits are not the decode step's
    assert not torch.allclose(first, logits)
