"""Profiles: measured op and collective times that replace the model's estimates.

stage.md §IV-E plugs "real-world values collected from profiling tools" into the
symbolic graph; DeepCompile (deepcompile.md §3, Fig. 3) profiles operator times,
memory before each operator (P_mem) and the all-gather time curve T_c(V) between its
passes. Both read one JSON format (docs/cost-model.md):

    {"version": 1, "hardware": "h100-sxm",
     "ops": [{"op": "stg.einsum",
              "key": "stg.einsum{equation=\"bh,hf->bf\"}(bf16[4096,4096], bf16[4096,4096]) -> (bf16[4096,4096])",
              "micros": 12.5}],
     "collectives": [{"kind": "all_gather", "group_size": 8, "bytes": 1048576, "micros": 40.0}]}

Version 2 (deepcompile.md Table 1) adds what the DeepCompile passes read about one
scheduled program, all optional, so a version 1 file is a version 2 file without them:

    {"version": 2, "hardware": "h100-sxm", "origin": "simulator", "ops": [], "collectives": [...],
     "schedule": {"function": "train_step", "bindings": {"B": 4, "S": 16},
                  "positions": [{"position": 0, "op": "stg.param", "micros": 0.0,
                                 "mem_before_bytes": 1024, "start_micros": 0.0}, ...]},
     "all_gathers": [{"position": 5, "bytes": 4096}],
     "optimizer_states": [{"state": "exp_avg", "param": "w", "layer": null, "bytes": 1024}]}

- `origin`: who measured it: "cost-model" (the roofline and the memory analysis),
  "simulator" (runtime/sim: times with overlap) or "measured" (the runtime's profiler);
- `schedule.positions`: per position of the memory analysis's schedule of `function`
  (passes/analysis/liveness.py: leaf ops in execution order, loops unrolled) under
  `bindings`: the op's time, P_mem(o) as `mem_before_bytes` (the bytes in use while o
  runs: what was live before it plus its outputs, so that a limit M holds during o),
  and optionally when it started;
- `all_gathers`: B_ag(o), the gathered buffer of the all-gather at each position;
- `optimizer_states`: B_os(os_i), each optimizer-state fragment's bytes;
- T_c(V) is the `collectives` samples of kind all_gather (bytes per rank, as always).
A file's positions are those of the program it was made from: a pass that reads it
runs on that program.

An op's key is `op_signature(op, bindings)`: its name, the properties that change
its work (einsum equation, elementwise kind, reduce dims, heads, causal, ...; not
scalars such as a scale factor, eps or a learning rate, nor routing such as a mesh,
a tag or async), and its operands' and results' local shapes and element types, the
numbers one rank's kernel sees. A stg.vjp's key adds its body's keys in braces.
Op entries may also carry "count" (how many samples were averaged) and
"mem_before_bytes" (P_mem); the cost model reads only "micros".
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from xdsl.dialects.builtin import ArrayAttr, FloatAttr, IntegerAttr, StringAttr, UnitAttr
from xdsl.ir import Attribute, Operation

from stagec.dialects.stg.attributes import DistributedTensorType, ExprAttr, TokenType
from stagec.dialects.symbolic import SymbolicError

PROFILE_VERSION = 2
READABLE_VERSIONS = (1, 2)
ORIGINS = ("cost-model", "simulator", "measured")

# Properties that do not change how long an op takes (scalars, routing, syntax).
_TIMELESS_PROPERTIES = frozenset(
    {
        "scalar", "eps", "lr", "weight_decay", "beta1", "beta2", "momentum", "value",
        "mesh", "tag", "peer", "root", "async", "operandSegmentSizes",
    }
)

_TOP_KEYS = {"version": True, "hardware": True, "ops": True, "collectives": False, "notes": False,
             "origin": False, "schedule": False, "all_gathers": False, "optimizer_states": False}
_V2_KEYS = ("origin", "schedule", "all_gathers", "optimizer_states")
_SCHEDULE_KEYS = {"function": True, "bindings": True, "positions": True}
_POSITION_KEYS = {"position": True, "op": True, "micros": True, "mem_before_bytes": True, "start_micros": False}
_GATHER_KEYS = {"position": True, "bytes": True}
_STATE_KEYS = {"state": True, "param": True, "layer": False, "bytes": True}
_OP_KEYS = {"op": True, "key": True, "micros": True, "count": False, "mem_before_bytes": False, "notes": False}
_COLLECTIVE_KEYS = {"kind": True, "group_size": True, "bytes": True, "micros": True, "count": False}


class ProfileError(ValueError):
    """A profile file that cannot be used: unreadable, or a key missing or wrong."""


class SignatureError(ValueError):
    """An op whose signature cannot be built (a size left unbound)."""


# -- signatures ----------------------------------------------------------------------


def op_signature(op: Operation, bindings: Mapping[str, int]) -> str:
    """The profile key of `op` under `bindings` (module doc)."""
    props = ", ".join(
        f"{name}={_property_text(value, bindings, op)}"
        for name, value in sorted(op.properties.items())
        if name not in _TIMELESS_PROPERTIES
    )
    operands = ", ".join(_type_text(v.type, bindings, op) for v in op.operands)
    results = ", ".join(_type_text(r.type, bindings, op) for r in op.results)
    text = f"{op.name}{{{props}}}({operands}) -> ({results})"
    from stagec.dialects.stg.training import VjpOp

    if isinstance(op, VjpOp):
        text += " {" + "; ".join(op_signature(inner, bindings) for inner in op.forward_ops) + "}"
    return text


def _evaluate(expr, bindings: Mapping[str, int], op: Operation) -> str:
    try:
        value = expr.evaluate_fraction(bindings)
    except SymbolicError as error:
        raise SignatureError(f"cannot build the profile key of {op.name}: {error}") from None
    return str(value.numerator) if value.denominator == 1 else str(value)


def _type_text(ty: Attribute, bindings: Mapping[str, int], op: Operation) -> str:
    if isinstance(ty, TokenType):
        if ty.value_type is None:
            return "token"
        ty = ty.value_type
    if isinstance(ty, DistributedTensorType):
        dims = ",".join(_evaluate(d, bindings, op) for d in ty.local_shape())
        return f"{ty.element_type}[{dims}]"
    return str(ty)


def _property_text(attr: Attribute, bindings: Mapping[str, int], op: Operation) -> str:
    if isinstance(attr, ExprAttr):
        return _evaluate(attr.data, bindings, op)
    if isinstance(attr, StringAttr):
        return json.dumps(attr.data)
    if isinstance(attr, IntegerAttr):
        return str(attr.value.data)
    if isinstance(attr, FloatAttr):
        return repr(attr.value.data)
    if isinstance(attr, UnitAttr):
        return "true"
    if isinstance(attr, ArrayAttr):
        return "[" + ",".join(_property_text(a, bindings, op) for a in attr.data) + "]"
    data = getattr(attr, "data", None)  # enum attributes: the kind's name
    if isinstance(data, str):
        return data
    return str(attr)


# -- the profile ---------------------------------------------------------------------


@dataclass(frozen=True)
class CollectiveSample:
    kind: str
    group_size: int
    bytes: int
    micros: float


@dataclass(frozen=True)
class PositionSample:
    """One position of a profiled schedule (module doc, version 2)."""

    position: int
    op: str
    micros: float
    mem_before_bytes: int  # P_mem(o)
    start_micros: float | None = None


@dataclass(frozen=True)
class StateFragment:
    """An optimizer-state fragment os_i and its size B_os(os_i)."""

    state: str
    param: str
    layer: int | None
    bytes: int


@dataclass(frozen=True)
class ScheduleProfile:
    """Per-position samples of one function under fixed bindings."""

    function: str
    bindings: Mapping[str, int]
    positions: tuple[PositionSample, ...]

    def p_mem(self, position: int) -> int:
        return self.positions[position].mem_before_bytes


@dataclass(frozen=True)
class Profile:
    """Measured times: op key -> microseconds, and collective samples by
    (kind, group size), sorted by bytes; with version 2, a schedule's per-position
    times and memory, the all-gather buffers and the optimizer-state fragments."""

    hardware: str
    ops: Mapping[str, float]
    collectives: Mapping[tuple[str, int], tuple[CollectiveSample, ...]] = field(default_factory=dict)
    source: str = "<profile>"
    origin: str | None = None
    schedule: ScheduleProfile | None = None
    all_gathers: Mapping[int, int] = field(default_factory=dict)  # position -> B_ag
    optimizer_states: tuple[StateFragment, ...] = ()

    def all_gather_micros(self, gathered_bytes: int | float, group_size: int) -> float | None:
        """T_c(V) for a gathered buffer of V bytes over `group_size` ranks (each sends
        V / group_size); None outside the sampled range."""
        return self.collective_micros("all_gather", gathered_bytes / group_size, group_size)

    def op_micros(self, signature: str) -> float | None:
        return self.ops.get(signature)

    def collective_micros(self, kind: str, bytes: int | float, group_size: int) -> float | None:
        """T_c(V) from the samples of this kind and group size: exact at a sample,
        linear between two, None outside the measured range (the caller falls back
        to the alpha-beta model)."""
        samples = self.collectives.get((kind, group_size))
        if not samples:
            return None
        sizes = [s.bytes for s in samples]
        i = bisect_left(sizes, bytes)
        if i < len(sizes) and sizes[i] == bytes:
            return samples[i].micros
        if i == 0 or i == len(sizes):
            return None
        lo, hi = samples[i - 1], samples[i]
        return lo.micros + (hi.micros - lo.micros) * (bytes - lo.bytes) / (hi.bytes - lo.bytes)

    def to_json(self) -> dict:
        ops = [{"op": key.split("{", 1)[0], "key": key, "micros": micros} for key, micros in self.ops.items()]
        collectives = [
            {"kind": s.kind, "group_size": s.group_size, "bytes": s.bytes, "micros": s.micros}
            for samples in self.collectives.values()
            for s in samples
        ]
        data: dict = {"version": PROFILE_VERSION, "hardware": self.hardware, "ops": ops, "collectives": collectives}
        if self.origin is not None:
            data["origin"] = self.origin
        if self.schedule is not None:
            data["schedule"] = {
                "function": self.schedule.function,
                "bindings": dict(self.schedule.bindings),
                "positions": [
                    {"position": p.position, "op": p.op, "micros": p.micros, "mem_before_bytes": p.mem_before_bytes,
                     **({"start_micros": p.start_micros} if p.start_micros is not None else {})}
                    for p in self.schedule.positions
                ],
            }
        if self.all_gathers:
            data["all_gathers"] = [{"position": p, "bytes": b} for p, b in sorted(self.all_gathers.items())]
        if self.optimizer_states:
            data["optimizer_states"] = [
                {"state": f.state, "param": f.param, "layer": f.layer, "bytes": f.bytes} for f in self.optimizer_states
            ]
        return data

    def write(self, path: str | Path) -> None:
        """Write the JSON file (to a temporary name, then renamed)."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1) + "\n")
        tmp.replace(path)


def load_profile(path: str | Path) -> Profile:
    """Read and check a profile file (module doc); errors name the file and the entry."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ProfileError(f"{path}: no such profile file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ProfileError(f"{path}: cannot read it: {error}") from None
    except json.JSONDecodeError as error:
        raise ProfileError(f"{path}: not valid JSON: {error}") from None
    return parse_profile(data, str(path))


def parse_profile(data: object, source: str = "<profile>") -> Profile:
    def fail(where: str, what: str) -> None:
        raise ProfileError(f"{source}: {where} {what}")

    def check_keys(obj: object, where: str, keys: Mapping[str, bool]) -> dict:
        if not isinstance(obj, dict):
            fail(where, "must be a JSON object")
        for k in obj:
            if k not in keys:
                fail(where, f"has an unknown key '{k}' (valid keys: {', '.join(keys)})")
        for k, required in keys.items():
            if required and k not in obj:
                fail(where, f"lacks the key '{k}' (required: {', '.join(k2 for k2, r in keys.items() if r)})")
        return obj

    def number(value: object, where: str, *, whole: bool = False) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            fail(where, f"must be a number >= 0, not {json.dumps(value)}")
        if whole and value != int(value):
            fail(where, f"must be a whole number, not {value}")
        return value

    top = check_keys(data, "the top level", _TOP_KEYS)
    if top["version"] not in READABLE_VERSIONS or isinstance(top["version"], bool):
        fail("'version'", f"is {json.dumps(top['version'])}; this stagec reads versions "
                          f"{', '.join(map(str, READABLE_VERSIONS))}")
    if top["version"] == 1:
        for key in _V2_KEYS:
            if key in top:
                fail(f"'{key}'", "is a version 2 key: set \"version\": 2")
    if not isinstance(top["hardware"], str):
        fail("'hardware'", "must be a string (the hardware description's name)")
    if not isinstance(top["ops"], list):
        fail("'ops'", "must be a list of {\"op\", \"key\", \"micros\"} entries")
    ops: dict[str, float] = {}
    for i, entry in enumerate(top["ops"]):
        where = f"ops[{i}]"
        entry = check_keys(entry, where, _OP_KEYS)
        op, key = entry["op"], entry["key"]
        if not isinstance(op, str) or not isinstance(key, str):
            fail(where, "needs string 'op' and 'key'")
        if not key.startswith(op + "{"):
            fail(where, f"key {json.dumps(key)} is not a key of a '{op}' op (keys are op_signature() strings)")
        micros = number(entry["micros"], f"{where}.micros")
        if key in ops and ops[key] != micros:
            fail(where, f"repeats the key of an earlier entry with a different time ({ops[key]} vs {micros} us)")
        ops[key] = float(micros)
    collectives: dict[tuple[str, int], list[CollectiveSample]] = {}
    raw = top.get("collectives", [])
    if not isinstance(raw, list):
        fail("'collectives'", "must be a list")
    from stagec.runtime.cost.collectives import COLLECTIVES

    for i, entry in enumerate(raw):
        where = f"collectives[{i}]"
        entry = check_keys(entry, where, _COLLECTIVE_KEYS)
        if entry["kind"] not in COLLECTIVES:
            fail(f"{where}.kind", f"is {json.dumps(entry['kind'])}, not one of {', '.join(COLLECTIVES)}")
        sample = CollectiveSample(
            entry["kind"],
            int(number(entry["group_size"], f"{where}.group_size", whole=True)),
            int(number(entry["bytes"], f"{where}.bytes", whole=True)),
            float(number(entry["micros"], f"{where}.micros")),
        )
        collectives.setdefault((sample.kind, sample.group_size), []).append(sample)
    ordered = {}
    for group, samples in collectives.items():
        samples.sort(key=lambda s: s.bytes)
        if len({s.bytes for s in samples}) != len(samples):
            fail("'collectives'", f"measures {group[0]} over {group[1]} ranks twice at one size")
        ordered[group] = tuple(samples)

    def whole(value: object, where: str) -> int:
        return int(number(value, where, whole=True))

    origin = top.get("origin")
    if origin is not None and origin not in ORIGINS:
        fail("'origin'", f"is {json.dumps(origin)}, not one of {', '.join(ORIGINS)}")
    schedule = None
    if "schedule" in top:
        raw_schedule = check_keys(top["schedule"], "'schedule'", _SCHEDULE_KEYS)
        if not isinstance(raw_schedule["function"], str):
            fail("'schedule.function'", "must be a string (the function's name)")
        bindings = raw_schedule["bindings"]
        if not isinstance(bindings, dict):
            fail("'schedule.bindings'", "must be an object of symbol: integer")
        bound = {str(k): whole(v, f"schedule.bindings.{k}") for k, v in bindings.items()}
        if not isinstance(raw_schedule["positions"], list):
            fail("'schedule.positions'", "must be a list of {\"position\", \"op\", \"micros\", \"mem_before_bytes\"}")
        positions = []
        for i, entry in enumerate(raw_schedule["positions"]):
            where = f"schedule.positions[{i}]"
            entry = check_keys(entry, where, _POSITION_KEYS)
            if whole(entry["position"], f"{where}.position") != i:
                fail(f"{where}.position", f"is {entry['position']}; positions are listed in order from 0, so {i}")
            if not isinstance(entry["op"], str):
                fail(f"{where}.op", "must be a string (the op's name)")
            start = entry.get("start_micros")
            positions.append(PositionSample(
                i, entry["op"], float(number(entry["micros"], f"{where}.micros")),
                whole(entry["mem_before_bytes"], f"{where}.mem_before_bytes"),
                None if start is None else float(number(start, f"{where}.start_micros")),
            ))
        schedule = ScheduleProfile(raw_schedule["function"], MappingProxyType(bound), tuple(positions))
    gathers: dict[int, int] = {}
    raw_gathers = top.get("all_gathers", [])
    if not isinstance(raw_gathers, list):
        fail("'all_gathers'", "must be a list of {\"position\", \"bytes\"}")
    for i, entry in enumerate(raw_gathers):
        where = f"all_gathers[{i}]"
        entry = check_keys(entry, where, _GATHER_KEYS)
        position = whole(entry["position"], f"{where}.position")
        if schedule is not None and position >= len(schedule.positions):
            fail(f"{where}.position", f"is {position}, past the schedule's {len(schedule.positions)} positions")
        if position in gathers:
            fail(f"{where}.position", f"repeats position {position}")
        gathers[position] = whole(entry["bytes"], f"{where}.bytes")
    fragments = []
    raw_states = top.get("optimizer_states", [])
    if not isinstance(raw_states, list):
        fail("'optimizer_states'", "must be a list of {\"state\", \"param\", \"bytes\"}")
    for i, entry in enumerate(raw_states):
        where = f"optimizer_states[{i}]"
        entry = check_keys(entry, where, _STATE_KEYS)
        if not isinstance(entry["state"], str) or not isinstance(entry["param"], str):
            fail(where, "needs string 'state' and 'param'")
        layer = entry.get("layer")
        fragments.append(StateFragment(entry["state"], entry["param"],
                                       None if layer is None else whole(layer, f"{where}.layer"),
                                       whole(entry["bytes"], f"{where}.bytes")))
    return Profile(top["hardware"], MappingProxyType(ops), MappingProxyType(ordered), source, origin, schedule,
                   MappingProxyType(gathers), tuple(fragments))
