"""ASTRA-sim configuration loading: the shipped-example shapes load, everything else is a
ConfigError naming the file, the key and what would be right."""

import json
from pathlib import Path

import pytest

from stagec.runtime.sim.astra_config import ConfigError, load_network, load_system, parse_network, parse_system
from stagec.runtime.sim.network import NetworkModel

DATA = Path(__file__).parent / "data"
NETWORK = {"topology": ["Ring"], "npus_count": [8], "bandwidth": [50.0], "latency": [500.0]}


def system(**changes):
    data = json.loads((DATA / "ring_4chunks.json").read_text())
    data.update(changes)
    return data


def test_shipped_shapes_load():
    net = load_network(DATA / "hgx_h100_8npus.yml")
    assert [(d.topology, d.npus, d.bandwidth_gbps, d.latency_ns) for d in net.dims] == [("Switch", 8, 400.0, 936.25)]
    sys = load_system(DATA / "ring_4chunks.json", dims_count=1)
    assert (sys.preferred_dataset_splits, sys.active_chunks_per_dimension, sys.endpoint_delay_ns) == (4, 1, 10)
    assert (sys.local_mem_bw_gbps, sys.peak_perf_tflops, sys.roofline_enabled) == (1600.0, 900.0, True)
    assert sys.collective_optimization == "localBWAware"


def test_underscore_joined_implementations_are_per_dimension():
    sys = load_system(DATA / "ring_ring_baseline.json", dims_count=2)
    assert sys.implementations["all_reduce"] == ("ring", "ring")


@pytest.mark.parametrize("change, message", [
    ({"topology": ["Torus"]}, "key 'topology[0]' must be one of Ring, FullyConnected, Switch"),
    ({"npus_count": [1]}, "key 'npus_count[0]' must be >= 2"),
    ({"bandwidth": [0]}, "key 'bandwidth[0]' must be > 0"),
    ({"latency": ["fast"]}, "key 'latency[0]' must be a number"),
    ({"latency": [1, 2]}, "key 'latency' has 2 entries but topology has 1 dimensions"),
    ({"links": [1]}, "key 'links' is not an analytical network key"),
])
def test_network_errors(change, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_network({**NETWORK, **change}, "net.yml")


@pytest.mark.parametrize("change, message", [
    ({"all-reduce-implementation": ["ring", "ring"]}, "has 2 entries but the network has 1 dimensions"),
    ({"all-reduce-implementation": ["tree"]}, "names algorithm 'tree'"),
    ({"all-reduce-implementation": ["oneRing"]}, "one\\* single-ring variants"),
    ({"preferred-dataset-splits": 0}, "'preferred-dataset-splits' must be >= 1"),
    ({"preferred-dataset-splits": 2.5}, "must be a whole number"),
    ({"endpoint-delay": 0}, "ASTRA-sim aborts on 0"),
    ({"collective-optimization": "fast"}, "must be baseline or localBWAware"),
    ({"scheduling-policy": "RANDOM"}, "must be LIFO, FIFO or EXPLICIT"),
    ({"model-shared-bus": 1}, "LogGP shared-bus model is not modelled"),
    ({"roofline-enabled": 2}, "must be 0 or 1"),
    ({"warp-speed": 9}, "'warp-speed' is not an ASTRA-sim system key"),
])
def test_system_errors(change, message):
    with pytest.raises(ConfigError, match=f"sys.json: key .*{message}"):
        parse_system(system(**change), "sys.json", dims_count=1)


def test_missing_local_memory_bandwidth_is_an_error():
    data = system()
    del data["local-mem-bw"]
    with pytest.raises(ConfigError, match="'local-mem-bw' is missing"):
        parse_system(data, "sys.json")


def test_file_errors(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        load_network(tmp_path / "absent.yml")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(ConfigError, match="bad.json: not valid JSON"):
        load_system(bad)


def test_aware_rejects_several_dimensions():
    with pytest.raises(ConfigError, match="one dimension only"):
        NetworkModel.from_astra(str(DATA / "switch4_switch2.yml"), str(DATA / "ring_ring_baseline.json"),
                                congestion="aware")
