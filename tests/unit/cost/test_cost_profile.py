"""Profiles: op signatures, a measured time overriding exactly the op it was measured
for, the T_c(V) collective curve, and clear errors for bad profile files."""

import json

import pytest
from xdsl.parser import Parser

from stagec.dialects import make_context
from stagec.dialects.stg.cost import CostInterface
from stagec.dialects.stg.training import VjpOp
from stagec.runtime.cost import CostModel, ProfileError, load_profile, op_signature

A = "!stg.tensor<[M, K], bf16>"
B = "!stg.tensor<[K, N], bf16>"
C = "!stg.tensor<[M, N], bf16>"
MODULE = f"""
builtin.module {{
  func.func @f(%a : {A}, %b : {B}, %a2 : !stg.tensor<[M2, K], bf16>, %x : {C}) {{
    %c = stg.einsum "mk,kn->mn" %a, %b : {A}, {B} -> {C}
    %c2 = stg.einsum "mk,kn->mn" %a2, %b : !stg.tensor<[M2, K], bf16>, {B} -> !stg.tensor<[M2, N], bf16>
    %s = stg.elementwise scale %x by 0.5 : {C} -> {C}
    %s2 = stg.elementwise scale %x by 0.25 : {C} -> {C}
    %g = stg.elementwise gelu %x : {C} -> {C}
    %da = stg.vjp(%a, %b) wrt [0] cotangents(%x : {C}) {{
    ^bb0(%u : {A}, %v : {B}):
      %e = stg.einsum "mk,kn->mn" %u, %v : {A}, {B} -> {C}
      stg.yield %e : {C}
    }} : ({A}, {B}) -> ({A})
    func.return
  }}
}}
"""
BINDINGS = {"M": 4096, "K": 4096, "N": 4096, "M2": 2048}
EINSUM_KEY = 'stg.einsum{equation="mk,kn->mn"}(bf16[4096,4096], bf16[4096,4096]) -> (bf16[4096,4096])'


@pytest.fixture(scope="module")
def ops():
    module = Parser(make_context(), MODULE).parse_module()
    module.verify()
    body = [op for op in module.walk() if isinstance(op, CostInterface) and not isinstance(op.parent_op(), VjpOp)]
    return dict(zip(["einsum", "einsum_2048", "scale", "scale2", "gelu", "vjp"], body, strict=True))


def test_signatures(ops):
    assert op_signature(ops["einsum"], BINDINGS) == EINSUM_KEY
    assert op_signature(ops["einsum_2048"], BINDINGS) == EINSUM_KEY.replace(
        "(bf16[4096,4096], bf16", "(bf16[2048,4096], bf16"
    ).replace("-> (bf16[4096,4096])", "-> (bf16[2048,4096])")
    # the scale factor does not change the time: one key for both
    assert op_signature(ops["scale"], BINDINGS) == op_signature(ops["scale2"], BINDINGS) == (
        "stg.elementwise{kind=scale}(bf16[4096,4096]) -> (bf16[4096,4096])"
    )
    assert op_signature(ops["vjp"], BINDINGS) == (
        "stg.vjp{wrt=[0]}(bf16[4096,4096], bf16[4096,4096], bf16[4096,4096]) -> (bf16[4096,4096]) {"
        + EINSUM_KEY + "}"
    )


def _write(tmp_path, data, name="profile.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_a_profile_entry_overrides_exactly_the_matching_op(ops, tmp_path):
    path = _write(tmp_path, {"version": 1, "hardware": "h100-sxm", "ops": [
        {"op": "stg.einsum", "key": EINSUM_KEY, "micros": 250.0, "count": 20},
    ]})
    plain = CostModel("h100-sxm")
    profiled = CostModel("h100-sxm", load_profile(path))
    measured = profiled.op_cost(ops["einsum"], BINDINGS)
    roofline = plain.op_cost(ops["einsum"], BINDINGS)
    assert (measured.micros, measured.source) == (250.0, "profile")
    # FLOPs and bytes stay the model's: ASTRA-sim's roofline reads them
    assert (measured.num_ops, measured.tensor_size) == (roofline.num_ops, roofline.tensor_size)
    # a differently-shaped einsum and other ops keep the roofline
    for name in ("einsum_2048", "gelu", "vjp"):
        assert profiled.op_cost(ops[name], BINDINGS) == plain.op_cost(ops[name], BINDINGS)
        assert profiled.op_cost(ops[name], BINDINGS).source == "roofline"
    # another binding of the same op is another shape
    assert profiled.op_cost(ops["einsum"], {**BINDINGS, "M": 1024}).source == "roofline"


def test_profile_given_as_a_path(ops, tmp_path):
    path = _write(tmp_path, {"version": 1, "hardware": "h100-sxm", "ops": [
        {"op": "stg.elementwise", "key": op_signature(ops["gelu"], BINDINGS), "micros": 30.0},
    ]})
    assert CostModel("h100-sxm", path).op_cost(ops["gelu"], BINDINGS).micros == 30.0


def test_collective_curve(tmp_path):
    path = _write(tmp_path, {"version": 1, "hardware": "h100-sxm", "ops": [], "collectives": [
        {"kind": "all_gather", "group_size": 8, "bytes": 1_000_000, "micros": 30.0},
        {"kind": "all_gather", "group_size": 8, "bytes": 3_000_000, "micros": 50.0},
    ]})
    model = CostModel("h100-sxm", path)
    assert model.collective_micros("all_gather", 1_000_000, 8) == 30.0
    assert model.collective_micros("all_gather", 2_000_000, 8) == 40.0  # linear between samples
    # outside the measured range, or another group size: the alpha-beta model
    assert model.collective_micros("all_gather", 4_000_000, 8) == CostModel("h100-sxm").collective_micros(
        "all_gather", 4_000_000, 8
    )
    assert model.collective_micros("all_gather", 2_000_000, 4) != 40.0


def test_profile_round_trips(tmp_path):
    data = {"version": 1, "hardware": "a100-80gb",
            "ops": [{"op": "stg.einsum", "key": EINSUM_KEY, "micros": 1.5}],
            "collectives": [{"kind": "all_reduce", "group_size": 2, "bytes": 10, "micros": 3.0}]}
    profile = load_profile(_write(tmp_path, data))
    assert profile.to_json() == {**data, "version": 2}  # a version 1 file is written back as version 2
    assert profile.hardware == "a100-80gb"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"version": 3, "hardware": "h", "ops": []}, "'version' is 3; this stagec reads versions 1, 2"),
        ({"hardware": "h", "ops": []}, "the top level lacks the key 'version' (required: version, hardware, ops)"),
        ({"version": 1, "hardware": "h", "ops": [], "op_times": []}, "unknown key 'op_times'"),
        ({"version": 1, "hardware": "h", "ops": {}}, "'ops' must be a list"),
        ({"version": 1, "hardware": "h", "ops": [{"op": "stg.einsum", "key": EINSUM_KEY}]},
         "ops[0] lacks the key 'micros'"),
        ({"version": 1, "hardware": "h", "ops": [{"op": "stg.einsum", "key": EINSUM_KEY, "micros": -1}]},
         "ops[0].micros must be a number >= 0, not -1"),
        ({"version": 1, "hardware": "h", "ops": [{"op": "stg.einsum", "key": EINSUM_KEY, "micro": 1}]},
         "ops[0] has an unknown key 'micro' (valid keys: op, key, micros, count, mem_before_bytes, notes)"),
        ({"version": 1, "hardware": "h", "ops": [{"op": "stg.norm", "key": EINSUM_KEY, "micros": 1}]},
         "is not a key of a 'stg.norm' op"),
        ({"version": 1, "hardware": "h", "ops": [{"op": "stg.einsum", "key": EINSUM_KEY, "micros": 1},
                                                 {"op": "stg.einsum", "key": EINSUM_KEY, "micros": 2}]},
         "ops[1] repeats the key of an earlier entry with a different time (1.0 vs 2 us)"),
        ({"version": 1, "hardware": "h", "ops": [],
          "collectives": [{"kind": "gather", "group_size": 2, "bytes": 1, "micros": 1}]},
         "collectives[0].kind is \"gather\", not one of all_reduce"),
    ],
)
def test_bad_profiles(tmp_path, data, message):
    path = _write(tmp_path, data)
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    assert str(info.value).startswith(f"{path}: ")
    assert message in str(info.value)


def test_unreadable_profiles(tmp_path):
    with pytest.raises(ProfileError, match="no such profile file"):
        load_profile(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("[1,")
    with pytest.raises(ProfileError, match="broken.json: not valid JSON"):
        load_profile(broken)


def test_a_profile_from_other_hardware_warns(tmp_path):
    path = _write(tmp_path, {"version": 1, "hardware": "a100-80gb", "ops": []})
    with pytest.warns(UserWarning, match="recorded on 'a100-80gb' but the model costs 'h100-sxm'"):
        CostModel("h100-sxm", path)
