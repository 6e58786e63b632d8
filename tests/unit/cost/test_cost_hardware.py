"""Hardware descriptions: the shipped files load with their datasheet numbers, a user's
file loads by path, and bad files fail with errors that name the file, the key and
what is wrong."""

import json

import pytest

from stagec.runtime.cost import Hardware, HardwareError, load_hardware, shipped_hardware
from stagec.runtime.cost.hardware_description import HARDWARE_DIR


def test_shipped_names():
    assert shipped_hardware() == ("a100-80gb", "h100-sxm", "h200")


@pytest.mark.parametrize("name", ["h100-sxm", "a100-80gb", "h200"])
def test_each_shipped_file_loads(name):
    hw = load_hardware(name)
    assert isinstance(hw, Hardware) and hw.name == name
    assert hw.gpus_per_node == 8
    assert set(hw.notes) >= {"peak_flops_per_s", "efficiency"}  # every number has a source
    # tensor cores beat CUDA cores, NVLink beats the network
    assert hw.matmul_flops["bf16"] > hw.vector_flops["bf16"]
    assert hw.intra_node.bandwidth > hw.inter_node.bandwidth
    with pytest.raises(TypeError):
        hw.matmul_flops["bf16"] = 1.0  # frozen


def test_datasheet_numbers():
    # dense (no sparsity) tensor-core peaks and HBM bandwidth from the vendor datasheets
    h100, a100, h200 = (load_hardware(n) for n in ("h100-sxm", "a100-80gb", "h200"))
    assert h100.matmul_flops["bf16"] == 989.4e12 and h100.matmul_flops["fp8"] == 1978.9e12
    assert h100.memory_bandwidth == 3.35e12 and h100.memory_capacity == 80 * 10**9
    assert a100.matmul_flops["bf16"] == 312e12 and "fp8" not in a100.matmul_flops
    assert a100.memory_bandwidth == 2.039e12
    assert h200.memory_bandwidth == 4.8e12 and h200.memory_capacity == 141 * 10**9
    # NVLink per direction: 900 GB/s (H100) and 600 GB/s (A100) bidirectional
    assert (h100.intra_node.bandwidth, a100.intra_node.bandwidth) == (450e9, 300e9)
    assert h100.inter_node.bandwidth == 400e9 / 8  # 400 Gb/s NDR


def test_a_users_file_loads_by_path(tmp_path):
    data = json.loads((HARDWARE_DIR / "h100-sxm.json").read_text())
    data["name"] = "my-h100"
    data["efficiency"]["matmul"] = 0.5
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(data))
    hw = load_hardware(path)
    assert hw.name == "my-h100" and hw.efficiency.matmul == 0.5 and hw.source == str(path)
    assert load_hardware(str(path)) == hw


def test_unknown_name_lists_the_shipped_ones():
    with pytest.raises(HardwareError, match=r"unknown hardware 'b200': give one of a100-80gb, h100-sxm, h200"):
        load_hardware("b200")


def test_missing_file():
    with pytest.raises(HardwareError, match=r"nowhere/hw.json: no such hardware description file"):
        load_hardware("nowhere/hw.json")


def _bad(tmp_path, mutate):
    data = json.loads((HARDWARE_DIR / "h100-sxm.json").read_text())
    mutate(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(HardwareError) as info:
        load_hardware(path)
    assert str(path) in str(info.value)
    return str(info.value)


def test_not_json(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{ nope")
    with pytest.raises(HardwareError, match=r"broken.json: not valid JSON"):
        load_hardware(path)


def test_missing_key(tmp_path):
    message = _bad(tmp_path, lambda d: d["memory"].pop("bandwidth_bytes_per_s"))
    assert "key 'memory.bandwidth_bytes_per_s' is missing (required keys: capacity_bytes, bandwidth_bytes_per_s)" in message


def test_unknown_key_lists_the_valid_ones(tmp_path):
    message = _bad(tmp_path, lambda d: d["peak_flops_per_s"]["matmul"].update(int4=1e15))
    assert "key 'peak_flops_per_s.matmul.int4' is not a hardware description key here" in message
    assert "valid keys: f64, f32, tf32, bf16, f16, fp8" in message


def test_missing_required_dtype(tmp_path):
    message = _bad(tmp_path, lambda d: d["peak_flops_per_s"]["vector"].pop("bf16"))
    assert "key 'peak_flops_per_s.vector.bf16' is missing" in message


def test_wrong_kind_of_value(tmp_path):
    message = _bad(tmp_path, lambda d: d["intra_node"].update(bandwidth_bytes_per_s="450 GB/s"))
    assert 'key \'intra_node.bandwidth_bytes_per_s\' must be a positive number (got "450 GB/s")' in message


def test_efficiency_above_one(tmp_path):
    message = _bad(tmp_path, lambda d: d["efficiency"].update(matmul=75))
    assert "key 'efficiency.matmul' must be a fraction of peak in (0, 1] (got 75)" in message


def test_fractional_count(tmp_path):
    message = _bad(tmp_path, lambda d: d.update(gpus_per_node=7.5))
    assert "key 'gpus_per_node' must be a whole number (got 7.5)" in message
