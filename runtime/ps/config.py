"""A Di-PS deployment as a user describes it: the YAML CONFIG of `stagec ps plan`.

    clusters:                       # the training clusters, in order (indices 0..N-1)
      - {name: A, throughput: 120000, extra_delay: 0.16}   # tokens/s; delay: fraction of a step
    bandwidth:                      # B[i][j]: CPU servers of cluster i <-> NPUs of cluster j
      - [10Gbps, 1Gbps]             # bytes/s as a number, or a rate with units
      - [1Gbps, 10Gbps]             # (or one rate for every pair: `bandwidth: 10Gbps`)
    slaves: 4                       # slave PSs
    model: {name: llama3.2-1b, overrides: {num_hidden_layers: 4}, dtype: f32}
    inner_steps: 64                 # H
    tokens_per_step: 32768          # tokens one inner step consumes (for the simulation)
    grace_window: 5s                # the master's time window (§3.2 steps 3-4)
    heartbeat: {interval: 1s, missed: 3}
    snapshots: {every: 1, keep: 2}
    outer: {lr: 0.7, momentum: 0.8}
    penalty: {alpha: 0.02, beta: 3.0, clip: 1.0, enabled: true}

Rates: a number is bytes/s; a string is a number and a unit, bits (`bps`, `Kbps`,
`Mbps`, `Gbps`, `Tbps`, powers of 1000) or bytes (`B/s`, `KB/s`, `MB/s`, `GB/s`, powers
of 1000; `KiB/s`, `MiB/s`, `GiB/s`, powers of 1024). Durations: a number is seconds;
a string may end in `s`, `ms` or `us`. `model` is a named model config or a
config.json path (relative to the CONFIG file), as `stagec stats --model` takes it,
or a mapping with `name`, optional `overrides` (HF config keys) and `dtype` (of the
parameters moved; default f32, 4 bytes a parameter, as di-ps.md §2.2's 400 GB for a
100B model implies).

`load_config(path)` reads and checks the file; every mistake is one `PsConfigError`
naming the file, the key, what is wrong and what would be right. `model_layers` turns
the model into Di-PS layers; `plan_from_config` builds the Plan (runtime/ps/placement.py).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stagec.runtime.ps.plan import MAX_SLAVES, Cluster, Layer, OuterOptimizer, Penalty, Plan


class PsConfigError(ValueError):
    """A mistake in a Di-PS CONFIG: the message is one line, file and key first."""


@dataclass(frozen=True)
class ModelSpec:
    """The model whose parameters the PSs hold: a named config or config.json path,
    HF config keys that replace the config's, and the dtype of the moved parameters."""

    name: str
    overrides: Mapping[str, Any] = field(default_factory=dict)
    dtype: str = "f32"


@dataclass(frozen=True)
class PsConfig:
    """A checked CONFIG (module docstring); units are bytes/s, seconds, tokens/s."""

    source: str
    clusters: tuple[Cluster, ...]
    bandwidth: tuple[tuple[float, ...], ...]
    num_slaves: int
    model: ModelSpec
    inner_steps: int
    grace_window_s: float
    tokens_per_step: int = 0
    heartbeat_s: float = 1.0
    missed_heartbeats: int = 3
    snapshot_every: int = 1
    snapshots_kept: int = 2
    outer: OuterOptimizer = OuterOptimizer()
    penalty: Penalty = Penalty()


_KEYS = ("clusters", "bandwidth", "slaves", "model", "inner_steps", "tokens_per_step", "grace_window",
         "heartbeat", "snapshots", "outer", "penalty")
_RATE = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z/]+)\s*\Z")
# Case matters: b is a bit, B a byte (so "Gb/s" is refused as ambiguous-looking).
_RATE_UNITS = {
    "bps": 1 / 8, "Kbps": 1e3 / 8, "kbps": 1e3 / 8, "Mbps": 1e6 / 8, "Gbps": 1e9 / 8, "Tbps": 1e12 / 8,
    "B/s": 1.0, "KB/s": 1e3, "kB/s": 1e3, "MB/s": 1e6, "GB/s": 1e9, "TB/s": 1e12,
    "KiB/s": 2.0**10, "MiB/s": 2.0**20, "GiB/s": 2.0**30, "TiB/s": 2.0**40,
}
_DURATION_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}


class _Reader:
    """Reads values of one file, each error naming the file and the key."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, key: str, problem: str, wanted: str) -> PsConfigError:
        return PsConfigError(f"{self.source}: key '{key}': {problem}; {wanted}")

    def mapping(self, value: Any, key: str, allowed: Sequence[str] | None) -> Mapping[str, Any]:
        """A mapping whose keys are among `allowed` (None: any string keys)."""
        if not isinstance(value, Mapping):
            wanted = f"a mapping of {', '.join(allowed)}" if allowed else "a mapping"
            raise self.fail(key, f"{_shown(value)} is not a mapping", f"give {wanted}")
        for name in value:
            if allowed is None:
                if not isinstance(name, str):
                    raise self.fail(key, f"key {name!r} is not a name", "give HF config keys like hidden_size")
            elif name not in allowed:
                raise self.fail(f"{key}.{name}" if key else str(name), "unknown key", f"the keys are {', '.join(allowed)}")
        return value

    def integer(self, value: Any, key: str, minimum: int, maximum: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, f"{_shown(value)} is not an integer", f"give an integer >= {minimum}")
        if value < minimum:
            raise self.fail(key, f"{value} is less than {minimum}", f"give an integer >= {minimum}")
        if maximum is not None and value > maximum:
            raise self.fail(key, f"{_shown(value)} is more than {maximum:,}", f"give an integer <= {maximum:,}")
        return value

    def number(self, value: Any, key: str, *, positive: bool = False, minimum: float | None = None,
               maximum: float | None = None) -> float:
        value = _yaml_number(value)
        wanted = "a number" + (" > 0" if positive else "") + (f" >= {minimum}" if minimum is not None else "") + \
                 (f" <= {maximum}" if maximum is not None else "")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.fail(key, f"{_shown(value)} is not a finite number", f"give {wanted}")
        if (positive and value <= 0) or (minimum is not None and value < minimum) or \
                (maximum is not None and value > maximum):
            raise self.fail(key, f"{value} is out of range", f"give {wanted}")
        return float(value)

    def rate(self, value: Any, key: str) -> float:
        """Bytes per second from a number (bytes/s) or a string like 10Gbps or 1.25GB/s."""
        wanted = "give bytes/s as a number > 0, or a rate like 10Gbps, 100Mbps or 1.25GB/s"
        value = _yaml_number(value)
        if isinstance(value, str):
            match = _RATE.match(value)
            unit = _RATE_UNITS.get(match[2]) if match else None
            if unit is None:
                raise self.fail(key, f"'{value}' is not a rate", wanted)
            rate = float(match[1]) * unit
            if not math.isfinite(rate):  # "1e400Gbps"
                raise self.fail(key, f"'{value}' is not a finite rate", wanted)
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            rate = float(value)
        else:
            raise self.fail(key, f"{_shown(value)} is not a rate", wanted)
        if rate <= 0:
            raise self.fail(key, f"{_shown(value)} is not positive", wanted)
        return rate

    def duration(self, value: Any, key: str, *, positive: bool) -> float:
        """Seconds from a number or a string like 5s, 500ms or 20us."""
        wanted = "give seconds as a number" + (" > 0" if positive else " >= 0") + ", or like 5s, 500ms"
        value = _yaml_number(value)
        if isinstance(value, str):
            match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(s|ms|us)\s*", value)
            if not match:
                raise self.fail(key, f"'{value}' is not a duration", wanted)
            seconds = float(match[1]) * _DURATION_UNITS[match[2]]
            if not math.isfinite(seconds):  # "1e400s": the program would print `inf`, which it cannot read back
                raise self.fail(key, f"'{value}' is not a finite duration", wanted)
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            seconds = float(value)
        else:
            raise self.fail(key, f"{_shown(value)} is not a duration", wanted)
        if seconds < 0 or (positive and seconds == 0):
            raise self.fail(key, f"{_shown(value)} is out of range", wanted)
        return seconds


def _yaml_number(value: Any) -> Any:
    """YAML 1.1 reads `1e9` (no dot) as a string: take it as the number it means."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _shown(value: Any) -> str:
    text = repr(value) if not isinstance(value, (Mapping, list)) else type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


class _DuplicateKey(Exception):
    def __init__(self, key: Any, line: int, column: int, first_line: int):
        self.key, self.line, self.column, self.first_line = key, line, column, first_line


def _unique_key_loader():
    """PyYAML's safe loader, except that a mapping giving one key twice is an error:
    YAML says keys are unique, and PyYAML would keep the last one without a word
    (`slaves: 4` ... `slaves: 16` copied from another CONFIG)."""
    import yaml

    class Loader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            first: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base`, whose keys a mapping may override
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    seen = key in first
                except TypeError:  # an unhashable key: PyYAML's own error follows
                    continue
                mark = key_node.start_mark
                if seen:
                    raise _DuplicateKey(key, mark.line + 1, mark.column + 1, first[key])
                first[key] = mark.line + 1
            return super().construct_mapping(node, deep)

    return Loader


def load_config(path: str) -> PsConfig:
    """Read and check a CONFIG file (module docstring)."""
    import yaml

    try:
        with open(path, encoding="utf-8") as stream:
            doc = yaml.load(stream, Loader=_unique_key_loader())
    except _DuplicateKey as error:
        raise PsConfigError(f"{path}:{error.line}:{error.column}: key '{error.key}' is given twice (first on line "
                            f"{error.first_line}); give each key once") from None
    except OSError as error:
        raise PsConfigError(f"{path}: cannot read: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise PsConfigError(f"{path}: not a text file; give a YAML CONFIG") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise PsConfigError(f"{path}{where}: not valid YAML: {problem}") from None
    return config_from_dict(doc, path)


def config_from_dict(doc: Any, source: str = "config") -> PsConfig:
    """Check a CONFIG already read (a dict as YAML gives it); `source` names it in errors."""
    r = _Reader(source)
    if doc is None:
        raise PsConfigError(f"{source}: the file is empty; give clusters, bandwidth, slaves, model and inner_steps")
    doc = r.mapping(doc, "", _KEYS)
    for required in ("clusters", "bandwidth", "slaves", "model", "inner_steps"):
        if required not in doc:
            raise r.fail(required, "missing", "every CONFIG gives clusters, bandwidth, slaves, model and inner_steps")
    clusters = _clusters(r, doc["clusters"])
    bandwidth = _bandwidth(r, doc["bandwidth"], len(clusters))
    _check_scores_finite(r, clusters, bandwidth)
    heartbeat = r.mapping(doc.get("heartbeat", {}), "heartbeat", ("interval", "missed"))
    snapshots = r.mapping(doc.get("snapshots", {}), "snapshots", ("every", "keep"))
    outer = r.mapping(doc.get("outer", {}), "outer", ("lr", "momentum"))
    penalty = r.mapping(doc.get("penalty", {}), "penalty", ("alpha", "beta", "clip", "enabled"))
    enabled = penalty.get("enabled", True)
    if not isinstance(enabled, bool):
        raise r.fail("penalty.enabled", f"{_shown(enabled)} is not a boolean", "give true or false")
    defaults = Penalty()
    return PsConfig(
        source=source,
        clusters=clusters,
        bandwidth=bandwidth,
        num_slaves=r.integer(doc["slaves"], "slaves", 1, MAX_SLAVES),
        model=_model(r, doc["model"]),
        inner_steps=r.integer(doc["inner_steps"], "inner_steps", 1),
        grace_window_s=r.duration(doc.get("grace_window", 5.0), "grace_window", positive=False),
        tokens_per_step=r.integer(doc.get("tokens_per_step", 0), "tokens_per_step", 0),
        heartbeat_s=r.duration(heartbeat.get("interval", 1.0), "heartbeat.interval", positive=True),
        missed_heartbeats=r.integer(heartbeat.get("missed", 3), "heartbeat.missed", 1),
        snapshot_every=r.integer(snapshots.get("every", 1), "snapshots.every", 0),
        snapshots_kept=r.integer(snapshots.get("keep", 2), "snapshots.keep", 1),
        outer=OuterOptimizer(
            lr=r.number(outer.get("lr", OuterOptimizer().lr), "outer.lr", positive=True),
            momentum=r.number(outer.get("momentum", OuterOptimizer().momentum), "outer.momentum",
                              minimum=0.0, maximum=1.0),
        ),
        penalty=Penalty(
            alpha=r.number(penalty.get("alpha", defaults.alpha), "penalty.alpha", positive=True, maximum=1.0),
            beta=r.number(penalty.get("beta", defaults.beta), "penalty.beta", positive=True),
            clip_norm=r.number(penalty.get("clip", defaults.clip_norm), "penalty.clip", positive=True),
            enabled=enabled,
        ),
    )


def _clusters(r: _Reader, value: Any) -> tuple[Cluster, ...]:
    if not isinstance(value, list) or not value:
        raise r.fail("clusters", f"{_shown(value)} is not a list of clusters",
                     "give a list like [{name: A, throughput: 1000}]")
    clusters = []
    seen: set[str] = set()
    for i, entry in enumerate(value):
        key = f"clusters[{i}]"
        entry = r.mapping(entry, key, ("name", "throughput", "extra_delay"))
        if "name" not in entry or "throughput" not in entry:
            raise r.fail(key, "needs a name and a throughput", "give {name: A, throughput: TOKENS_PER_S}")
        name = entry["name"]
        if not isinstance(name, (str, int)) or isinstance(name, bool) or not str(name).strip():
            raise r.fail(f"{key}.name", f"{_shown(name)} is not a name", "give a non-empty string")
        if not str(name).isprintable():  # a newline would split the summary's and the progress table's lines
            raise r.fail(f"{key}.name", f"{_shown(name)} holds a control character", "give a name on one line")
        name = str(name)
        if name in seen:
            raise r.fail(f"{key}.name", f"'{name}' names two clusters", "give each cluster its own name")
        seen.add(name)
        clusters.append(Cluster(
            name=name,
            throughput=r.number(entry["throughput"], f"{key}.throughput", positive=True),
            extra_delay=r.number(entry.get("extra_delay", 0.0), f"{key}.extra_delay", minimum=0.0),
        ))
    return tuple(clusters)


def _bandwidth(r: _Reader, value: Any, n: int) -> tuple[tuple[float, ...], ...]:
    if not isinstance(value, list):
        rate = r.rate(value, "bandwidth")
        return tuple((rate,) * n for _ in range(n))
    if len(value) != n:
        raise r.fail("bandwidth", f"{len(value)} rows for {n} clusters", f"give an {n} x {n} matrix (or one rate)")
    rows = []
    for i, row in enumerate(value):
        if not isinstance(row, list) or len(row) != n:
            got = f"{len(row)} entries" if isinstance(row, list) else _shown(row)
            raise r.fail(f"bandwidth[{i}]", f"{got} for {n} clusters", f"give a row of {n} rates")
        rows.append(tuple(r.rate(entry, f"bandwidth[{i}][{j}]") for j, entry in enumerate(row)))
    return tuple(rows)


def _check_scores_finite(r: _Reader, clusters: Sequence[Cluster], bandwidth: Sequence[Sequence[float]]) -> None:
    """Each of B and p may be finite while B_i^T p is not: every score is then inf, and
    the PS cluster the lowest index, whatever the numbers said."""
    from stagec.runtime.ps.placement import effective_throughput, ps_cluster_scores

    scores = ps_cluster_scores(bandwidth, [effective_throughput(c) for c in clusters])
    if not all(math.isfinite(score) for score in scores):
        raise r.fail("bandwidth", "times the clusters' throughputs it overflows a float (B_i^T p is inf)",
                     "give rates in bytes/s and throughputs in tokens/s of a real deployment's size")


def _model(r: _Reader, value: Any) -> ModelSpec:
    if isinstance(value, str):
        return ModelSpec(_model_path(r, value))
    value = r.mapping(value, "model", ("name", "overrides", "dtype"))
    name = value.get("name")
    if not isinstance(name, str) or not name:
        raise r.fail("model.name", f"{_shown(name)} is not a model", "give a named model config or a config.json path")
    overrides = r.mapping(value.get("overrides", {}), "model.overrides", None)
    from stagec.dialects.ps.syntax import config_attr

    for key, override in overrides.items():
        try:
            config_attr({key: override})  # what the ps program records (dialects/ps: ps.program's overrides)
        except ValueError as error:
            problem, _, wanted = str(error).partition("; ")  # a key's problem says what would be right
            raise r.fail(f"model.overrides.{key}", problem, wanted or "give a JSON value: a number, a string, "
                         "true or false, null, a list or a mapping") from None
    dtype = value.get("dtype", "f32")
    from stagec.frontends.templates.blocks import DTYPES

    if dtype not in DTYPES:
        raise r.fail("model.dtype", f"{_shown(dtype)} is not a dtype", f"give one of {', '.join(DTYPES)}")
    return ModelSpec(_model_path(r, name), dict(overrides), dtype)


def _model_path(r: _Reader, name: str) -> str:
    """A config.json path relative to the CONFIG file's folder; a named config as is."""
    if name.endswith(".json") or os.sep in name:
        return os.path.join(os.path.dirname(r.source), name) if not os.path.isabs(name) else name
    return name


def model_layers(spec: ModelSpec, source: str = "config") -> tuple[Layer, ...]:
    """The Di-PS layers of a model: one per decoder layer (`model.layers.3`), plus the
    embedding (`model.embed_tokens`), final norm (`model.norm`) and, unless tied to the
    embedding, the head (`lm_head`), as HF Llama names them; each layer's bytes are its
    parameters' elements x the dtype's size, read from the model template's stg.param ops
    (a layer stack's body counts once per layer)."""
    from xdsl.dialects import func

    from stagec.dialects.stg import ParamOp, RepeatOp, element_bytes
    from stagec.dialects.stg.config import config_bindings
    from stagec.frontends.templates import ConfigError, build_model, load_config as load_model

    try:
        base = load_model(spec.name).raw
    except ConfigError as error:
        raise PsConfigError(f"{source}: key 'model': {error}") from None
    # The model's own config reads: what fails now is the overrides' doing, though the
    # template's message names the config's file.
    culprit = "model.overrides" if spec.overrides else "model"
    try:
        module = build_model(load_model(spec.name, **spec.overrides), "bf16")
    except ConfigError as error:
        raise PsConfigError(f"{source}: key '{culprit}': {error}") from None
    except (TypeError, ValueError) as error:
        raise PsConfigError(f"{source}: key 'model.overrides': {error}") from None
    _check_override_names(spec.overrides, base, source)
    from stagec.frontends.templates.blocks import DTYPES

    width = element_bytes(DTYPES[spec.dtype])
    env = config_bindings(module)

    def elements(op: ParamOp) -> int:
        return math.prod(dim.evaluate(env) for dim in op.result.type.shape)

    layers: list[Layer] = []
    stacked: dict[str, int] = {}  # a stack's prefix -> layers of it so far
    forward = next(op for op in module.body.block.ops if isinstance(op, func.FuncOp))
    seen: set[str] = set()  # a tied head reads the embedding's parameter again: one parameter
    for op in forward.body.block.ops:
        if isinstance(op, ParamOp):
            if op.tensor_name.data in seen:
                continue
            seen.add(op.tensor_name.data)
            prefix = op.tensor_name.data.rsplit(".", 1)[0] if "." in op.tensor_name.data else op.tensor_name.data
            layers.append(Layer(prefix, elements(op) * width))
        elif isinstance(op, RepeatOp):
            params = [p for p in op.walk() if isinstance(p, ParamOp)]
            if not params:
                continue
            prefix = os.path.commonprefix([p.tensor_name.data.split(".") for p in params])
            stem = ".".join(prefix) if len(params) > 1 else params[0].tensor_name.data.rsplit(".", 2)[0]
            stem = _HF_STACK.get(stem, stem)
            per_layer = sum(elements(p) for p in params) * width
            first = stacked.get(stem, 0)
            count = op.count_expr.evaluate(env)
            layers.extend(Layer(f"{stem}.{first + i}", per_layer) for i in range(count))
            stacked[stem] = first + count
    return tuple(_merge_same_prefix(layers))


def _check_override_names(overrides: Mapping[str, Any], base: Mapping[str, Any], source: str) -> None:
    """An override the model's config lacks but nearly spells (`hiden_size`,
    `tie_word_embedding`) is a typo: HF configs take any key, so it would change
    nothing without a word. A key far from all of them may be one the config leaves
    to its default (`rope_parameters`), and is taken."""
    import difflib

    for key in overrides:
        if key in base:
            continue
        near = difflib.get_close_matches(key, [k for k in base if not k.startswith("_")], n=1, cutoff=0.85)
        if near:
            raise PsConfigError(f"{source}: key 'model.overrides.{key}': not a key of the model's config; "
                                f"did you mean {near[0]}?")


# DeepSeek's MoE layers are the template's second stack (frontends/templates/moe.py); HF
# numbers them on after the dense ones: model.layers.{first_k_dense_replace + i}.
_HF_STACK = {"model.moe_layers": "model.layers"}


def _merge_same_prefix(layers: list[Layer]) -> list[Layer]:
    """One layer per module path (a norm's weight and bias are one layer)."""
    merged: dict[str, int] = {}
    for layer in layers:
        merged[layer.prefix] = merged.get(layer.prefix, 0) + layer.nbytes
    return [Layer(prefix, nbytes) for prefix, nbytes in merged.items()]


def plan_from_config(config: PsConfig, layers: Sequence[Layer] | None = None) -> Plan:
    """The Plan of a CONFIG (runtime/ps/placement.py decides the placement and the
    schedule); `layers` replaces the model's (tests)."""
    from stagec.runtime.ps.placement import build_plan

    if layers is None:
        layers = model_layers(config.model, config.source)
    return build_plan(
        config.clusters, config.bandwidth, config.num_slaves, layers,
        inner_steps=config.inner_steps, grace_window_s=config.grace_window_s,
        heartbeat_s=config.heartbeat_s, missed_heartbeats=config.missed_heartbeats,
        outer=config.outer, penalty=config.penalty, snapshot_every=config.snapshot_every,
        snapshots_kept=config.snapshots_kept, tokens_per_step=config.tokens_per_step,
        model=config.model.name, model_overrides=dict(config.model.overrides), model_dtype=config.model.dtype,
    )


def load_plan(path: str) -> Plan:
    """The Plan of a CONFIG (YAML) or of a ps program (`.mlir`, as `stagec ps plan`
    prints it, perhaps edited): what `stagec ps plan` and the PS runtime start from.
    Every mistake is a one-line PsConfigError."""
    if not path.endswith(".mlir"):
        return plan_from_config(load_config(path))
    from xdsl.utils.exceptions import DiagnosticException, ParseError

    from stagec.dialects import make_context
    from stagec.dialects.ps import plan_from_module
    # stagec-opt's: an op's error names its file:line:col
    from stagec.tools.diagnostics import LocatingParser, format_parse_error, verify_error_message

    try:
        with open(path, encoding="utf-8") as stream:
            text = stream.read()
    except (OSError, UnicodeDecodeError) as error:
        raise PsConfigError(f"{path}: cannot read: {getattr(error, 'strerror', None) or error}") from None
    module = None
    try:
        module = LocatingParser(make_context(), text, path).parse_module()
        return plan_from_module(module)
    except ParseError as error:
        raise PsConfigError(_one_line(format_parse_error(error))) from None
    except DiagnosticException as error:  # VerifyException among them
        raise PsConfigError(_one_line(verify_error_message(module, error, path) if module is not None
                                      else f"{path}: error: {error}")) from None


def _one_line(diagnostic: str) -> str:
    """`file:line:col: error: message` (stagec-opt's) as the one line after `stagec: error:`."""
    return diagnostic.strip().splitlines()[0].replace(": error: ", ": ", 1)
