"""The timeline loads in Perfetto's own trace processor (PyPI `perfetto`), and the slice
count per rank equals the node count.

The `perfetto` package runs the `trace_processor_shell` binary, which it downloads from
Google's storage on first use (or takes from $STAGEC_TRACE_PROCESSOR). This machine kind
reaches only package registries, and no registry carries the binary, so here the test is
skipped with that reason; where the binary can be had it runs (tests/unit/sim/
test_simulate.py checks the same counts on the JSON itself everywhere).
"""

from __future__ import annotations

import os

import pytest

from stagec.runtime.cost.hardware_description import load_hardware
from stagec.runtime.sim.network import NetworkModel
from stagec.runtime.sim.simulate import simulate_module
from tests.unit.sim.test_simulate import JOBS, job


def _trace_processor(path: str):
    api = pytest.importorskip("perfetto.trace_processor", reason="the PyPI perfetto package is not installed")
    config = api.TraceProcessorConfig(bin_path=os.environ.get("STAGEC_TRACE_PROCESSOR"), load_timeout=60)
    try:
        return api.TraceProcessor(trace=path, config=config)
    except Exception as error:  # noqa: BLE001 - the download of trace_processor_shell failing
        pytest.skip(f"Perfetto's trace_processor_shell is not available here ({type(error).__name__}: "
                    f"{str(error)[:120]}); set STAGEC_TRACE_PROCESSOR to a trace_processor_shell binary")


def test_the_timeline_loads_in_perfettos_trace_processor_with_one_slice_per_node(tmp_path):
    module, bindings, world = job(JOBS["dp2 tp2 pp2"])
    network = NetworkModel.from_hardware(load_hardware("h100-sxm"), world)
    path = str(tmp_path / "timeline.json")
    report = simulate_module(module, network, bindings, timeline=path, timeline_ranks="all")
    tp = _trace_processor(path)
    try:
        rows = tp.query(
            "select process.pid as pid, count(slice.id) as slices from slice "
            "join thread_track on slice.track_id = thread_track.id join thread using (utid) "
            "join process using (upid) group by process.pid order by process.pid"
        ).as_pandas_dataframe()
    finally:
        tp.close()
    nodes = {r: a.nodes for a in report.actors for r in a.ranks}
    assert dict(zip(rows["pid"], rows["slices"])) == nodes
