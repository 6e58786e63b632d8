"""Issue 5's scale benchmarks as tests (bench/trace_scale.py): marked `scale`, run with
`pytest -m scale tests/unit/chakra/test_emit_scale.py` (minutes, 6.3 GB of traces)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).parents[3] / "bench" / "trace_scale.py"


def _bench():
    spec = importlib.util.spec_from_file_location("trace_scale", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.scale
def test_llama70b_tp8_sp_16_micro_batches_under_20_seconds(tmp_path):
    result = _bench().run_case("tp8", str(tmp_path), check=True)
    assert result["ranks"] == 8
    assert result["check_ok"], result.get("check_error")
    assert result["wall_s"] < 20, result


@pytest.mark.scale
def test_llama70b_on_32768_gpus_under_5_minutes_and_1_gb(tmp_path):
    result = _bench().run_case("32k", str(tmp_path), check=True)
    assert result["ranks"] == 32768
    assert result["wall_s"] < 300, result
    assert result["peak_rss_mb"] < 1024, result
    assert result["check_ok"], result.get("check_error")
