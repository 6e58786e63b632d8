"""ASTRA-sim's analytical network YAML and system JSON, read as ASTRA-sim reads them.

Contract: `load_network(path)` and `load_system(path)` accept every key ASTRA-sim's
shipped examples use (examples/network/analytical/*.yml,
examples/system/native_collectives/*.json) and return frozen descriptions in ASTRA-sim's
own units: bandwidth in GB/s as ASTRA-sim reads it (2^30 bytes/s, see
`bandwidth_bytes_per_ns`), latency and endpoint delay in ns, `local-mem-bw` in decimal
GB/s (= bytes/ns), `peak-perf` in TFLOP/s. Any unknown key, ill-typed value or value
stagec does not model raises `ConfigError` naming the file, the key and what would be
right (docs/simulator-network.md lists each knob and each difference from ASTRA-sim).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from stagec.runtime.cost.hardware_description import shown_value

TOPOLOGIES = ("Ring", "FullyConnected", "Switch")
ALGORITHMS = ("ring", "direct", "halvingDoubling", "doubleBinaryTree")
COLLECTIVE_KEYS = {
    "all_reduce": "all-reduce-implementation",
    "all_gather": "all-gather-implementation",
    "reduce_scatter": "reduce-scatter-implementation",
    "all_to_all": "all-to-all-implementation",
}
# Keys ASTRA-sim reads that change nothing the analytical model computes (tracing,
# replay switches, the LogGP bus that only `model-shared-bus: 1` turns on, the boost
# mode that only skips simulating symmetric ranks); accepted with their expected type.
_IGNORED_KEYS = {
    "boost-mode": "0 or 1",
    "trace-enabled": "0 or 1",
    "replay-only": "0 or 1",
    "track-local-mem": "0 or 1",
    "local-mem-trace-filename": "a string",
    "local-reduction-delay": "a number",
    "L": "a number",
    "o": "a number",
    "g": "a number",
    "G": "a number",
}


class ConfigError(ValueError):
    """An ASTRA-sim configuration (or hardware-derived network) stagec cannot model:
    unreadable file, unknown key, wrong type or an unsupported value. The message names
    the file, the key and what would be right; the CLIs exit 2 on it."""


@dataclass(frozen=True)
class Dimension:
    """One network dimension: its building block, NPU count, per-link bandwidth
    (ASTRA-sim "GB/s", read as 2^30 bytes/s) and per-hop latency in ns."""

    topology: str
    npus: int
    bandwidth_gbps: float
    latency_ns: float

    @property
    def bandwidth_bytes_per_ns(self) -> float:
        """ASTRA-sim's `bw_GBps_to_Bpns`: bw * 2^30 / 1e9, computed in double exactly as
        it does, so 1 GiB at 1 GB/s takes 999,999,999 ns (ASTRA-SIM.md, Inputs)."""
        return self.bandwidth_gbps * (1 << 30) / 1_000_000_000

    @property
    def hops_to_any(self) -> int:
        """Hops between two NPUs adjacent in a logical ring on this dimension."""
        return 2 if self.topology == "Switch" else 1

    def hops(self, a: int, b: int) -> int:
        """Hops between coordinates a != b of this dimension: Ring the shorter way round,
        FullyConnected 1, Switch 2 (up to the switch and down)."""
        if self.topology == "Ring":
            gap = abs(a - b)
            return min(gap, self.npus - gap)
        return 1 if self.topology == "FullyConnected" else 2


@dataclass(frozen=True)
class NetworkConfig:
    """The network YAML: one `Dimension` per entry, dimension 0 varying fastest in rank
    addresses."""

    dims: tuple[Dimension, ...]
    source: str = "<network>"

    @property
    def npus(self) -> int:
        return math.prod(d.npus for d in self.dims)


@dataclass(frozen=True)
class SystemConfig:
    """The system JSON, in ASTRA-sim units (module doc)."""

    implementations: Mapping[str, tuple[str, ...]]  # collective kind -> algorithm per dim
    preferred_dataset_splits: int = 1
    active_chunks_per_dimension: int = 1
    endpoint_delay_ns: int = 10
    local_mem_bw_gbps: float = 0.0  # decimal GB/s = bytes/ns; 0 = absent
    collective_optimization: str = "baseline"
    scheduling_policy: str = "LIFO"
    peak_perf_tflops: float = 0.0
    roofline_enabled: bool = False
    source: str = "<system>"


def _fail(source: str, key: str, what: str, value: object = None) -> None:
    shown = "" if value is None else f" (got {shown_value(value)})"
    raise ConfigError(f"{source}: key '{key}' {what}{shown}")


def _number(source: str, key: str, value: object, *, minimum: float, strict: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        _fail(source, key, "must be a number", value)
    if value < minimum or (strict and value == minimum):
        _fail(source, key, f"must be {'>' if strict else '>='} {minimum:g}", value)
    return float(value)


def _whole(source: str, key: str, value: object, *, minimum: int) -> int:
    number = _number(source, key, value, minimum=minimum, strict=False)
    if number != int(number):
        _fail(source, key, "must be a whole number", value)
    return int(number)


def _flag(source: str, key: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    if value in (0, 1):
        return bool(value)
    _fail(source, key, "must be 0 or 1", value)
    raise AssertionError  # unreachable


# --- network YAML ------------------------------------------------------------------


def parse_network(data: object, source: str = "<network>") -> NetworkConfig:
    """Check and convert a decoded network YAML (ASTRA-sim's NetworkParser rules: the
    four lists of equal length, npus_count > 1, bandwidth > 0, latency >= 0)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: a network configuration must be a YAML mapping with keys topology, npus_count, bandwidth, latency")
    keys = ("topology", "npus_count", "bandwidth", "latency")
    for key in data:
        if key not in keys:
            _fail(source, str(key), f"is not an analytical network key (valid keys: {', '.join(keys)})")
    lists = {}
    for key in keys:
        if key not in data:
            _fail(source, key, "is missing (one entry per dimension, e.g. topology: [ Ring ])")
        value = data[key]
        if not isinstance(value, list) or not value:
            _fail(source, key, "must be a non-empty list with one entry per dimension", value)
        lists[key] = value
    dims_count = len(lists["topology"])
    for key in keys[1:]:
        if len(lists[key]) != dims_count:
            _fail(source, key, f"has {len(lists[key])} entries but topology has {dims_count} dimensions", lists[key])
    dims = []
    for i in range(dims_count):
        topology = lists["topology"][i]
        if topology not in TOPOLOGIES:
            _fail(source, f"topology[{i}]", f"must be one of {', '.join(TOPOLOGIES)}", topology)
        npus = _whole(source, f"npus_count[{i}]", lists["npus_count"][i], minimum=2)
        bandwidth = _number(source, f"bandwidth[{i}]", lists["bandwidth"][i], minimum=0, strict=True)
        latency = _number(source, f"latency[{i}]", lists["latency"][i], minimum=0, strict=False)
        dims.append(Dimension(topology, npus, bandwidth, latency))
    return NetworkConfig(tuple(dims), source)


def load_network(path: str | Path) -> NetworkConfig:
    """Read an ASTRA-sim analytical network YAML file."""
    import yaml

    text = _read(path)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML: {error}") from None
    return parse_network(data, str(path))


# --- system JSON -------------------------------------------------------------------


def _implementations(source: str, key: str, value: object, dims_count: int | None) -> tuple[str, ...]:
    # ASTRA-sim 2.x reads a list; 1.x configs join the per-dimension names with "_"
    # ("ring_ring"): both mean the same thing.
    if isinstance(value, str):
        names = value.split("_")
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        names = list(value)
    else:
        _fail(source, key, 'must be a list of algorithm names, one per dimension (e.g. ["ring", "direct"])', value)
        raise AssertionError
    if not names or any(not n for n in names):
        _fail(source, key, "must name one algorithm per dimension", value)
    for name in names:
        if name not in ALGORITHMS:
            hint = ""
            if name.startswith(("one", "direct")) or name in ("oneRing", "oneDirect", "oneHalvingDoubling"):
                hint = " (the one* single-ring variants and windowed directN are not modelled by stagec)"
            _fail(source, key, f"names algorithm '{name}'; valid per-dimension algorithms: {', '.join(ALGORITHMS)}{hint}", value)
    if dims_count is not None and len(names) != dims_count:
        _fail(source, key, f"has {len(names)} entries but the network has {dims_count} dimensions (give one per dimension)", value)
    return tuple(names)


def parse_system(data: object, source: str = "<system>", *, dims_count: int | None = None) -> SystemConfig:
    """Check and convert a decoded system JSON; `dims_count` (the network's) checks that
    every implementation list has one algorithm per dimension."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: a system configuration must be a JSON object")
    known = set(COLLECTIVE_KEYS.values()) | set(_IGNORED_KEYS) | {
        "scheduling-policy", "preferred-dataset-splits", "active-chunks-per-dimension",
        "endpoint-delay", "local-mem-bw", "collective-optimization", "peak-perf",
        "roofline-enabled", "model-shared-bus", "intra-dimension-scheduling",
        "inter-dimension-scheduling",
    }
    for key in data:
        if key not in known:
            _fail(source, key, f"is not an ASTRA-sim system key (valid keys: {', '.join(sorted(known))})")
    for key, expected in _IGNORED_KEYS.items():
        if key in data:
            value = data[key]
            if expected == "0 or 1":
                _flag(source, key, value)
            elif expected == "a string" and not isinstance(value, str):
                _fail(source, key, "must be a string", value)
            elif expected == "a number":
                _number(source, key, value, minimum=-math.inf, strict=False)
    implementations = {}
    for kind, key in COLLECTIVE_KEYS.items():
        if key not in data:
            _fail(source, key, 'is missing (one algorithm per network dimension, e.g. ["ring"])')
        implementations[kind] = _implementations(source, key, data[key], dims_count)
    policy = data.get("scheduling-policy", "LIFO")
    if policy not in ("LIFO", "FIFO", "EXPLICIT"):
        _fail(source, "scheduling-policy", "must be LIFO, FIFO or EXPLICIT", policy)
    optimization = data.get("collective-optimization", "baseline")
    if optimization not in ("baseline", "localBWAware"):
        _fail(source, "collective-optimization", "must be baseline or localBWAware", optimization)
    if "model-shared-bus" in data and _flag(source, "model-shared-bus", data["model-shared-bus"]):
        _fail(source, "model-shared-bus", "must be 0: the LogGP shared-bus model is not modelled by stagec", 1)
    for key, only in (("intra-dimension-scheduling", "FIFO"), ("inter-dimension-scheduling", "ascending")):
        if key in data and data[key] not in (only, only.upper(), only.lower()):
            _fail(source, key, f"must be {only}: stagec models only ASTRA-sim's default scheduling here", data[key])
    endpoint = _whole(source, "endpoint-delay", data.get("endpoint-delay", 10), minimum=0)
    if endpoint == 0:
        # ASTRA-sim aborts on a zero-delay event at t = 0 (ASTRA-SIM.md, Known defects).
        _fail(source, "endpoint-delay", "must be >= 1 ns (ASTRA-sim aborts on 0)", 0)
    if "local-mem-bw" not in data:
        _fail(source, "local-mem-bw", "is missing: every reduction costs 3 passes over local memory at this bandwidth (GB/s, e.g. 1600)")
    roofline = _flag(source, "roofline-enabled", data.get("roofline-enabled", 0))
    peak = _number(source, "peak-perf", data.get("peak-perf", 0), minimum=0, strict=False)
    if roofline and peak == 0:
        _fail(source, "peak-perf", "must be > 0 TFLOP/s when roofline-enabled is 1", data.get("peak-perf"))
    return SystemConfig(
        implementations=implementations,
        preferred_dataset_splits=_whole(source, "preferred-dataset-splits", data.get("preferred-dataset-splits", 1), minimum=1),
        active_chunks_per_dimension=_whole(source, "active-chunks-per-dimension", data.get("active-chunks-per-dimension", 1), minimum=1),
        endpoint_delay_ns=endpoint,
        local_mem_bw_gbps=_number(source, "local-mem-bw", data["local-mem-bw"], minimum=0, strict=True),
        collective_optimization=optimization,
        scheduling_policy=policy,
        peak_perf_tflops=peak,
        roofline_enabled=roofline,
        source=source,
    )


def load_system(path: str | Path, *, dims_count: int | None = None) -> SystemConfig:
    """Read an ASTRA-sim system JSON file."""
    text = _read(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"{path}: not valid JSON: {error}") from None
    return parse_system(data, str(path), dims_count=dims_count)


def _read(path: str | Path) -> str:
    try:
        return Path(path).read_text()
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot read it: {error}") from None
