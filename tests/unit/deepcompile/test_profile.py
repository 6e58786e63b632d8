"""The DeepCompile profile (deepcompile.md Table 1) in the version 2 profile format:
made by the cost model + memory analysis and by the simulator, written and read back,
version 1 files still read, and bad files named by their key."""

from __future__ import annotations

import json

import pytest
from tests.unit.deepcompile.test_prefetch import _fig6
from tests.unit.shard.shard_testing import train_step, transformed

from stagec.runtime.cost.profile import ProfileError, load_profile, parse_profile
from stagec.runtime.cost.profiling import profile_by_cost_model, profile_by_simulation

# Fig. 6's program (tests/lit/passes/stg-prefetch/fig6.mlir derives the bytes): weights
# 3 x 4096 = 12288 persistent, %x 1024 until the first einsum, each gathered buffer
# 8192, each activation 1024. P_mem per position: param, all_gather, wait, einsum,
# release per layer, then the silu.
FIG6_OPS = ["stg.param", "stg.all_gather", "stg.wait", "stg.einsum", "stg.release"] * 3 + ["stg.elementwise"]
FIG6_P_MEM = [13312, 21504, 21504, 22528, 13312] * 3 + [14336]
# T_c on h100-sxm over 2 ranks (docs/cost-model.md): 2.5 us + (bytes per rank) / 360e9 s
T_C_4096 = 2.5 + 4096 / 360e9 * 1e6  # 2.511378 us


def test_cost_model_profile_of_fig6():
    profile = profile_by_cost_model(_fig6(), {})
    assert profile.origin == "cost-model"
    assert [p.op for p in profile.schedule.positions] == FIG6_OPS
    assert [p.mem_before_bytes for p in profile.schedule.positions] == FIG6_P_MEM
    assert dict(profile.all_gathers) == {1: 8192, 6: 8192, 11: 8192}  # B_ag
    assert profile.all_gather_micros(8192, 2) == pytest.approx(T_C_4096)
    assert profile.schedule.positions[1].micros == pytest.approx(T_C_4096)


def test_simulated_profile_of_fig6():
    profile = profile_by_simulation(_fig6(), {})
    positions = profile.schedule.positions
    assert profile.origin == "simulator"
    assert [p.mem_before_bytes for p in positions] == FIG6_P_MEM  # the same memory analysis
    # each gather's simulated time is the simulator's T_c at its shard, and the first
    # einsum starts when the first gather ends (it waits for it)
    t_c = profile.collective_micros("all_gather", 4096, 2)
    assert [positions[p].micros for p in (1, 6, 11)] == [t_c] * 3
    assert positions[3].start_micros == pytest.approx(positions[1].start_micros + t_c)
    starts = [p.start_micros for p in positions]
    assert starts == sorted(starts)


def test_optimizer_state_fragments_of_a_training_step():
    # tiny Llama (H=16, V=32, 2 layers, f64), AdamW, fsdp=2: 3 top-level parameters and
    # 9 per layer = 21 parameter tensors, each with exp_avg, exp_avg_sq and step.
    # model.norm.weight's moments are [H/fsdp] = 8 x 8 bytes = 64, its step 8 bytes.
    _, module = train_step("llama", 1)
    module = transformed(module, "builtin.module(stg-shard{fsdp=2}, stg-match-collectives, stg-fully-shard, "
                                 "stg-schedule)")
    profile = profile_by_cost_model(module, {"B": 4, "S": 4})
    assert len(profile.optimizer_states) == 63
    norm = {f.state: f.bytes for f in profile.optimizer_states if f.param == "model.norm.weight"}
    assert norm == {"exp_avg": 64, "exp_avg_sq": 64, "step": 8}
    layered = [f for f in profile.optimizer_states if f.param == "model.layers.mlp.down_proj.weight"]
    assert sorted((f.state, f.layer) for f in layered) == sorted((s, i) for s in ("exp_avg", "exp_avg_sq", "step")
                                                                  for i in (0, 1))
    # all-gathers: forward 3 + 9 per layer body, backward 3 + 9: 12 + 12 bodies' worth
    # of positions = (3 + 2 x 9) x 2 = 42
    assert len(profile.all_gathers) == 42


def test_profile_round_trips_through_a_file(tmp_path):
    profile = profile_by_simulation(_fig6(), {})
    path = tmp_path / "p.json"
    profile.write(path)
    again = load_profile(path)
    assert again.to_json() == profile.to_json()
    assert again.schedule.p_mem(3) == 22528


def test_a_version_1_file_is_read():
    data = {"version": 1, "hardware": "h100-sxm", "ops": [],
            "collectives": [{"kind": "all_gather", "group_size": 2, "bytes": 4096, "micros": 3.0}]}
    profile = parse_profile(data)
    assert profile.schedule is None and profile.origin is None
    assert profile.all_gather_micros(8192, 2) == 3.0


_POSITION = {"position": 0, "op": "stg.param", "micros": 0, "mem_before_bytes": 0}


@pytest.mark.parametrize(("data", "message"), [
    ({"version": 1, "hardware": "h", "ops": [], "origin": "simulator"},
     "'origin' is a version 2 key: set \"version\": 2"),
    ({"version": 2, "hardware": "h", "ops": [], "origin": "guess"},
     "'origin' is \"guess\", not one of cost-model, simulator, measured"),
    ({"version": 2, "hardware": "h", "ops": [], "schedule": {"function": "f", "positions": []}},
     "'schedule' lacks the key 'bindings'"),
    ({"version": 2, "hardware": "h", "ops": [],
      "schedule": {"function": "f", "bindings": {}, "positions": [{**_POSITION, "mem": 1}]}},
     "schedule.positions[0] has an unknown key 'mem'"),
    ({"version": 2, "hardware": "h", "ops": [],
      "schedule": {"function": "f", "bindings": {}, "positions": [{**_POSITION, "position": 1}]}},
     "schedule.positions[0].position is 1; positions are listed in order from 0, so 0"),
    ({"version": 2, "hardware": "h", "ops": [],
      "schedule": {"function": "f", "bindings": {}, "positions": [{**_POSITION, "mem_before_bytes": -5}]}},
     "schedule.positions[0].mem_before_bytes must be a number >= 0, not -5"),
    ({"version": 2, "hardware": "h", "ops": [], "schedule": {"function": "f", "bindings": {}, "positions": [_POSITION]},
      "all_gathers": [{"position": 1, "bytes": 8}]},
     "all_gathers[0].position is 1, past the schedule's 1 positions"),
    ({"version": 2, "hardware": "h", "ops": [], "optimizer_states": [{"state": "exp_avg", "bytes": 8}]},
     "optimizer_states[0] lacks the key 'param'"),
])
def test_bad_profiles_name_the_key(data, message):
    with pytest.raises(ProfileError) as info:
        parse_profile(json.loads(json.dumps(data)), "p.json")
    assert str(info.value).startswith("p.json: ") and message in str(info.value)
