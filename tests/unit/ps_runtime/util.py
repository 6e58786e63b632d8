"""Helpers for the PS runtime tests: small plans and deployments on loopback."""

from __future__ import annotations

from pathlib import Path

from stagec.runtime.ps.deployment import Deployment, Faults
from stagec.runtime.ps.launcher import free_port_block
from stagec.runtime.ps.model import ModelSpec, TinyLlama, default_layer_prefixes
from stagec.runtime.ps.plan import Cluster, Layer, Plan, Transfer

SECRET = b"test-secret"


def tiny_plan(clusters: int = 2, slaves: int = 2, spec: ModelSpec = ModelSpec(), inner_steps: int = 4,
              grace_window_s: float = 0.2, heartbeat_s: float = 0.2, delays: tuple[float, ...] = ()) -> Plan:
    """Layers of `spec` dealt round-robin to slaves; the push schedule staggers clusters
    so that in step s cluster c sends the layers of slave (c + s) mod n (Fig. 5). Each
    layer's bytes are its parameters' (f32), as `stagec ps run` checks."""
    prefixes = default_layer_prefixes(spec)
    params = dict(TinyLlama(spec).named_parameters())
    layers = tuple(Layer(p, sum(4 * t.numel() for n, t in params.items() if n.startswith(p + "."))) for p in prefixes)
    owner = tuple(i % slaves for i in range(len(layers)))
    schedule = tuple(
        tuple(Transfer(c, l, owner[l]) for c in range(clusters) for l in range(len(layers))
              if owner[l] == (c + s) % slaves)
        for s in range(slaves))
    return Plan(clusters=tuple(Cluster(f"c{i}", 1.0, delays[i] if i < len(delays) else 0.0) for i in range(clusters)),
                bandwidth=tuple(tuple(1e9 for _ in range(clusters)) for _ in range(clusters)), ps_cluster=0,
                num_slaves=slaves, layers=layers, slave_of_layer=owner, push_schedule=schedule,
                inner_steps=inner_steps, grace_window_s=grace_window_s, heartbeat_s=heartbeat_s)


def tiny_deployment(workdir: Path, mode: str = "dips", rounds: int = 3, faults: Faults = Faults(),
                    record: bool = True, **plan_args) -> Deployment:
    plan = tiny_plan(**plan_args)
    spec = ModelSpec()
    tokens_per_push = plan.inner_steps * spec.batch * spec.seq
    return Deployment(plan=plan, mode=mode, model=spec, workdir=str(workdir),
                      total_tokens=rounds * len(plan.clusters) * tokens_per_push,
                      master_port=free_port_block(1), data_port=free_port_block(len(plan.layers)),
                      record_pushes=record, faults=faults, round_timeout_s=5.0, data_timeout_s=2.0)
