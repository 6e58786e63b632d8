"""What every process of a `stagec ps run` reads: the plan, the mode, the model and
data, the addresses and the working directory (JSON, written once by the launcher).

Modes (issue 19, item 2):
- `dips`  — Di-PS: asynchronous pushes, a grace window, the §4.1 penalty.
- `sync`  — synchronous DiLoCo: a round closes when every live cluster has pushed;
            no penalty, no clipping.
- `async` — asynchronous DiLoCo: each push is a round of its own (no window); no
            penalty, no clipping.

The shared secret never goes into the file: the launcher hands it to its children in
the environment variable DIPS_SECRET.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from stagec.runtime.ps.model import ModelSpec
from stagec.runtime.ps.plan import Cluster, Layer, OuterOptimizer, Penalty, Plan, Transfer

__all__ = ["MODES", "SECRET_ENV", "Deployment", "Faults", "plan_from_json", "plan_to_json", "secret_from_env",
           "write_json_atomic"]

MODES = ("dips", "sync", "async")
SECRET_ENV = "DIPS_SECRET"


def plan_to_json(plan: Plan) -> dict:
    return asdict(plan)


def plan_from_json(data: dict) -> Plan:
    return Plan(
        clusters=tuple(Cluster(**c) for c in data["clusters"]),
        bandwidth=tuple(tuple(float(b) for b in row) for row in data["bandwidth"]),
        ps_cluster=int(data["ps_cluster"]),
        num_slaves=int(data["num_slaves"]),
        layers=tuple(Layer(**l) for l in data["layers"]),
        slave_of_layer=tuple(int(s) for s in data["slave_of_layer"]),
        push_schedule=tuple(tuple(Transfer(**t) for t in step) for step in data["push_schedule"]),
        inner_steps=int(data["inner_steps"]),
        grace_window_s=float(data["grace_window_s"]),
        heartbeat_s=float(data.get("heartbeat_s", 1.0)),
        missed_heartbeats=int(data.get("missed_heartbeats", 3)),
        outer=OuterOptimizer(**data.get("outer", {})),
        penalty=Penalty(**data.get("penalty", {})),
        snapshot_every=int(data.get("snapshot_every", 1)),
        snapshots_kept=int(data.get("snapshots_kept", 2)),
        tokens_per_step=int(data.get("tokens_per_step", 0)),
        model=str(data.get("model", "")),
        model_overrides=dict(data.get("model_overrides") or {}),
        model_dtype=str(data.get("model_dtype", "f32")),
    )


@dataclass(frozen=True)
class Faults:
    """Injected faults for tests: slave `fail_prepare_slave` votes no the first time it
    is asked to prepare one of `fail_prepare_versions`; cluster `poison_cluster` sends a
    pseudo-gradient `poison_factor` times too large on its push number `poison_push`
    (counted from 0) — the cluster process scales the tensors it pushes (and records)
    and logs `injected fault: push N (PUSH_ID) of cluster C is Fx too large`; slave
    `kill_slave_mid_push` kills itself (SIGKILL) once, when a push has reached it after it
    committed version 1, before checking or acknowledging it - a test's own signal,
    sent on seeing a push in flight, could come after the run had ended on a loaded
    machine, or after the master had restarted the slave for missed heartbeats."""

    fail_prepare_versions: tuple[int, ...] = ()
    fail_prepare_slave: int = 0
    poison_cluster: int = -1
    poison_push: int = -1
    poison_factor: float = 1000.0
    kill_slave_mid_push: int = -1  # this slave SIGKILLs itself once, mid-push (below)


@dataclass(frozen=True)
class Deployment:
    plan: Plan
    mode: str
    model: ModelSpec
    workdir: str
    total_tokens: int
    master_port: int
    data_port: int
    inner_lr: float = 3e-3
    host: str = "127.0.0.1"
    round_timeout_s: float = 10.0
    data_timeout_s: float = 10.0
    keep_snapshots: int | None = None  # None: the plan's snapshot policy (slave.retained_snapshots)
    record_pushes: bool = False
    step_time_s: float = 0.0
    faults: Faults = field(default_factory=Faults)

    @property
    def master_address(self) -> str:
        return f"{self.host}:{self.master_port}"

    def layer_address(self, layer: int) -> str:
        """The ZeroMQ endpoint of `layer` on the slave that owns it (a port per layer:
        the slave serves each layer from its own thread, §3.2)."""
        return f"tcp://{self.host}:{self.data_port + layer}"

    @property
    def penalty(self) -> Penalty:
        return self.plan.penalty if self.mode == "dips" else replace(self.plan.penalty, enabled=False)

    def path(self, *parts: str) -> Path:
        return Path(self.workdir, *parts)

    def to_json(self) -> dict:
        data = asdict(self)
        data["plan"] = plan_to_json(self.plan)
        return data

    @staticmethod
    def from_json(data: dict) -> Deployment:
        faults = data.get("faults", {})
        return Deployment(**{**data, "plan": plan_from_json(data["plan"]), "model": ModelSpec(**data["model"]),
                             "faults": Faults(**{k: tuple(v) if isinstance(v, list) else v
                                                 for k, v in faults.items()})})

    def save(self, path: Path) -> None:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1))
        os.replace(tmp, path)

    @staticmethod
    def load(path: str | Path) -> Deployment:
        return Deployment.from_json(json.loads(Path(path).read_text()))


def secret_from_env() -> bytes:
    secret = os.environ.get(SECRET_ENV, "")
    if not secret:
        raise SystemExit(f"{SECRET_ENV} is not set: every Di-PS process needs the shared secret")
    return secret.encode()


def write_json_atomic(path: Path, data) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)
