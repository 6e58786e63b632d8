"""Hardware descriptions: what the cost model knows about one accelerator and its links.

A description is a JSON file (the schema is in docs/cost-model.md); stagec ships
vendor-datasheet descriptions in `hardware/` (h100-sxm, a100-80gb, h200) and reads a
user's own file the same way. Numbers are dense peaks (no sparsity) in base units:
FLOP/s, bytes/s per direction, bytes, microseconds. Each efficiency factor is the
fraction of a peak that real kernels or collectives reach; the file's "notes" say
where every number comes from.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

HARDWARE_DIR = Path(__file__).parent / "hardware"

# Element types the peaks are given for; every table needs the REQUIRED ones.
DTYPES = ("f64", "f32", "tf32", "bf16", "f16", "fp8")
REQUIRED_DTYPES = ("f64", "f32", "bf16", "f16")
EFFICIENCY_KINDS = ("matmul", "attention", "vector", "memory")

_TOP_KEYS = {
    "name": True,
    "description": False,
    "peak_flops_per_s": True,
    "memory": True,
    "gpus_per_node": True,
    "intra_node": True,
    "inter_node": True,
    "host_link": True,
    "efficiency": True,
    "runtime_memory": False,
    "notes": False,
}
_LINK_KEYS = ("name", "bandwidth_bytes_per_s", "latency_us", "efficiency")
_MEMORY_KEYS = ("capacity_bytes", "bandwidth_bytes_per_s")


class HardwareError(ValueError):
    """A hardware description that cannot be loaded: unknown name, unreadable file,
    or a key that is missing, unknown or of the wrong kind. The CLIs exit 2 on it."""


@dataclass(frozen=True)
class Link:
    """One kind of link a GPU talks over: per-direction bandwidth, per-message latency
    (alpha), and the fraction of the bandwidth collectives reach."""

    name: str
    bandwidth: float  # bytes/s, each direction, per GPU
    latency_us: float
    efficiency: float

    @property
    def effective_bandwidth(self) -> float:
        """Bytes/s a transfer really gets: bandwidth x efficiency."""
        return self.bandwidth * self.efficiency


@dataclass(frozen=True)
class Efficiency:
    """Achievable fractions of peak: matmul and attention of the matmul (tensor-core)
    peak, vector of the CUDA-core peak, memory of the HBM bandwidth."""

    matmul: float
    attention: float
    vector: float
    memory: float


@dataclass(frozen=True)
class RuntimeMemory:
    """Device memory a training process holds that no trace shows (docs/memory.md,
    each number's source in the file's notes): the CUDA context with its loaded
    kernels and library handles; the cuBLAS and cuBLASLt workspaces PyTorch allocates
    through its caching allocator, one each per stream; and what NCCL needs per
    channel and connection - `nccl_ring_channels` channels per collective
    communicator and `nccl_p2p_channels_per_peer` per point-to-point peer, each
    holding `nccl_connection_bytes` of buffers."""

    cuda_context_bytes: int = 1_000_000_000
    cublas_workspace_bytes: int = 4096 * 8 * 1024
    cublaslt_workspace_bytes: int = 1024 * 1024
    nccl_ring_channels: int = 24
    nccl_p2p_channels_per_peer: int = 32
    nccl_connection_bytes: int = 10 * 1024 * 1024


_RUNTIME_MEMORY_KEYS = tuple(RuntimeMemory.__dataclass_fields__)


@dataclass(frozen=True)
class Hardware:
    """One accelerator as the cost model sees it (module doc)."""

    name: str
    description: str
    matmul_flops: Mapping[str, float]  # dtype -> FLOP/s on the matmul units (tensor cores)
    vector_flops: Mapping[str, float]  # dtype -> FLOP/s on the vector units (CUDA cores)
    memory_bandwidth: float  # bytes/s
    memory_capacity: int  # bytes
    gpus_per_node: int
    intra_node: Link
    inter_node: Link
    host_link: Link
    efficiency: Efficiency
    notes: Mapping[str, str]
    source: str  # the file it was read from
    runtime_memory: RuntimeMemory = RuntimeMemory()

    def link_for_group(self, group_size: int, *, within_node: bool | None = None) -> Link:
        """The link a collective over `group_size` ranks runs on: NVLink when the group
        fits in a node, else the inter-node network (a ring across nodes runs at the
        speed of its slowest hop). `within_node` overrides the size test when the
        caller knows the placement (see CostModel)."""
        if within_node is None:
            within_node = group_size <= self.gpus_per_node
        return self.intra_node if within_node else self.inter_node


def shipped_hardware() -> tuple[str, ...]:
    """Names of the descriptions that ship with stagec."""
    return tuple(sorted(p.stem for p in HARDWARE_DIR.glob("*.json")))


def load_hardware(name_or_path: str | Path) -> Hardware:
    """A shipped description by name ("h100-sxm") or a user's JSON file by path."""
    text = str(name_or_path)
    path = Path(text)
    if not (text.endswith(".json") or path.exists() or "/" in text or "\\" in text):
        shipped = HARDWARE_DIR / f"{text}.json"
        if not shipped.is_file():
            raise HardwareError(
                f"unknown hardware '{text}': give one of {', '.join(shipped_hardware())} "
                "or the path of a JSON hardware description"
            )
        path = shipped
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise HardwareError(
            f"{path}: no such hardware description file (shipped names: {', '.join(shipped_hardware())})"
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise HardwareError(f"{path}: cannot read it: {error}") from None
    except json.JSONDecodeError as error:
        raise HardwareError(f"{path}: not valid JSON: {error}") from None
    return parse_hardware(data, str(path))


def parse_hardware(data: object, source: str = "<hardware>") -> Hardware:
    """Check and convert a decoded description; every error names `source` and the key."""
    check = _Checker(source)
    top = check.object(data, "", _TOP_KEYS)
    peaks = check.object(top["peak_flops_per_s"], "peak_flops_per_s", {"matmul": True, "vector": True})
    matmul = check.peaks(peaks["matmul"], "peak_flops_per_s.matmul")
    vector = check.peaks(peaks["vector"], "peak_flops_per_s.vector")
    memory = check.object(top["memory"], "memory", dict.fromkeys(_MEMORY_KEYS, True))
    eff = check.object(top["efficiency"], "efficiency", dict.fromkeys(EFFICIENCY_KINDS, True))
    notes = top.get("notes", {})
    if isinstance(notes, str):
        notes = {"": notes}
    elif not isinstance(notes, dict) or not all(isinstance(v, str) for v in notes.values()):
        check.fail("notes", "must be a string or an object of strings", notes)
    description = top.get("description", "")
    if not isinstance(description, str):
        check.fail("description", "must be a string", description)
    runtime = RuntimeMemory()
    if "runtime_memory" in top:
        given = check.object(top["runtime_memory"], "runtime_memory", dict.fromkeys(_RUNTIME_MEMORY_KEYS, False))
        runtime = RuntimeMemory(**{k: check.count(v, f"runtime_memory.{k}") for k, v in given.items()})
    return Hardware(
        name=check.string(top["name"], "name"),
        description=description,
        matmul_flops=MappingProxyType(matmul),
        vector_flops=MappingProxyType(vector),
        memory_bandwidth=check.positive(memory["bandwidth_bytes_per_s"], "memory.bandwidth_bytes_per_s"),
        memory_capacity=check.count(memory["capacity_bytes"], "memory.capacity_bytes"),
        gpus_per_node=check.count(top["gpus_per_node"], "gpus_per_node"),
        intra_node=check.link(top["intra_node"], "intra_node"),
        inter_node=check.link(top["inter_node"], "inter_node"),
        host_link=check.link(top["host_link"], "host_link"),
        efficiency=Efficiency(*(check.fraction(eff[k], f"efficiency.{k}") for k in EFFICIENCY_KINDS)),
        notes=MappingProxyType(dict(notes)),
        source=source,
        runtime_memory=runtime,
    )


class _Checker:
    """Schema checks that raise HardwareError naming the file, the key and the fix."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, key: str, what: str, value: object = None) -> None:
        where = f"key '{key}'" if key else "the top level"
        shown = "" if value is None else f" (got {shown_value(value)})"
        raise HardwareError(f"{self.source}: {where} {what}{shown}")

    def object(self, value: object, key: str, keys: Mapping[str, bool]) -> dict:
        """A JSON object with exactly the known `keys` (True = required)."""
        if not isinstance(value, dict):
            self.fail(key, "must be a JSON object", value)
        prefix = f"{key}." if key else ""
        valid = ", ".join(keys)
        for k in value:
            if k not in keys:
                self.fail(f"{prefix}{k}", f"is not a hardware description key here (valid keys: {valid})")
        for k, required in keys.items():
            if required and k not in value:
                self.fail(f"{prefix}{k}", f"is missing (required keys: {', '.join(k2 for k2, r in keys.items() if r)})")
        return value

    def string(self, value: object, key: str) -> str:
        if not isinstance(value, str) or not value:
            self.fail(key, "must be a non-empty string", value)
        return value

    def positive(self, value: object, key: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            self.fail(key, "must be a positive number", value)
        return float(value)

    def count(self, value: object, key: str) -> int:
        number = self.positive(value, key)
        if number != int(number):
            self.fail(key, "must be a whole number", value)
        return int(number)

    def fraction(self, value: object, key: str) -> float:
        number = self.positive(value, key)
        if number > 1:
            self.fail(key, "must be a fraction of peak in (0, 1]", value)
        return number

    def peaks(self, value: object, key: str) -> dict[str, float]:
        table = self.object(value, key, {d: d in REQUIRED_DTYPES for d in DTYPES})
        return {d: self.positive(v, f"{key}.{d}") for d, v in table.items()}

    def link(self, value: object, key: str) -> Link:
        link = self.object(value, key, dict.fromkeys(_LINK_KEYS, True))
        latency = link["latency_us"]
        if isinstance(latency, bool) or not isinstance(latency, (int, float)) or latency < 0:
            self.fail(f"{key}.latency_us", "must be a number >= 0", latency)
        return Link(
            self.string(link["name"], f"{key}.name"),
            self.positive(link["bandwidth_bytes_per_s"], f"{key}.bandwidth_bytes_per_s"),
            float(latency),
            self.fraction(link["efficiency"], f"{key}.efficiency"),
        )


def shown_value(value: object) -> str:
    """A value from a user's file as an error message shows it: as JSON where it is
    JSON (so `"8"` and `8` differ), else its repr."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
