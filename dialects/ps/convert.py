"""A `Plan` (runtime/ps/plan.py) as a ps program and back: the IR is the source of truth
that `stagec ps plan` prints, and the PS runtime and the trace emitter read a Plan.

    module = module_from_plan(plan)          # a builtin.module holding one ps.program
    assert plan_from_module(module) == plan  # exact: floats print in their shortest repr

The round's order (§3.2): every cluster's push request; the push steps of the plan's
schedule, each cluster's two-stage commit right after the step of its last layer,
the window opening at the first commit; the window closing, the update, every
cluster's pull notice; then the pull steps, which follow the push schedule step for
step (a slave that received from one cluster per step sends to one per step).
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region
from xdsl.utils.exceptions import VerifyException

from stagec.dialects.ps.ops import (
    BandwidthOp,
    ClusterOp,
    CommitOp,
    HeartbeatOp,
    LayerOp,
    MasterOp,
    OuterNesterovOp,
    PenaltyOp,
    ProgramOp,
    PullNoticeOp,
    PullOp,
    PushOp,
    PushRequestOp,
    RoundOp,
    SlavesOp,
    SnapshotOp,
    UpdateOp,
    WindowCloseOp,
    WindowOpenOp,
)
from stagec.runtime.ps.plan import Cluster, Layer, OuterOptimizer, Penalty, Plan, Transfer


def module_from_plan(plan: Plan, name: str = "dips") -> ModuleOp:
    """The ps program of `plan` (module docstring), verified."""
    names = [c.name for c in plan.clusters]
    ps_cluster = names[plan.ps_cluster]
    body = Block()
    for c in plan.clusters:
        body.add_op(ClusterOp.build_with({"sym_name": c.name, "throughput": c.throughput,
                                          "extra_delay": c.extra_delay}))
    body.add_op(BandwidthOp.build_with({"matrix": plan.bandwidth}))
    body.add_op(MasterOp.build_with({"cluster": ps_cluster}))
    body.add_op(SlavesOp.build_with({"count": plan.num_slaves, "cluster": ps_cluster}))
    for layer, slave in zip(plan.layers, plan.slave_of_layer, strict=True):
        body.add_op(LayerOp.build_with({"prefix": layer.prefix, "nbytes": layer.nbytes, "slave": slave}))
    body.add_op(OuterNesterovOp.build_with({"lr": plan.outer.lr, "momentum": plan.outer.momentum}))
    p = plan.penalty
    body.add_op(PenaltyOp.build_with({"alpha": p.alpha, "beta": p.beta, "clip": p.clip_norm, "enabled": p.enabled}))
    body.add_op(HeartbeatOp.build_with({"interval": plan.heartbeat_s, "missed": plan.missed_heartbeats}))
    body.add_op(SnapshotOp.build_with({"every": plan.snapshot_every, "keep": plan.snapshots_kept}))
    body.add_op(RoundOp.build_with({}, Region(_round(plan, names))))
    program = ProgramOp.build_with(
        {"sym_name": name, "inner_steps": plan.inner_steps, "tokens_per_step": plan.tokens_per_step,
         "model": plan.model, "model_dtype": plan.model_dtype, "model_overrides": plan.model_overrides},
        Region(body),
    )
    module = ModuleOp([program])
    module.verify()
    return module


def _round(plan: Plan, names: list[str]) -> Block:
    block = Block()
    for name in names:
        block.add_op(PushRequestOp.build_with({"cluster": name}))
    last_step = {c: max((t for t, step in enumerate(plan.push_schedule) for x in step if x.cluster == c), default=-1)
                 for c in range(len(names))}
    opened = False
    for t, step in enumerate(plan.push_schedule):
        block.add_op(PushOp(t, [(names[x.cluster], x.layer, x.slave) for x in step]))
        for c in range(len(names)):
            if last_step[c] != t:
                continue
            block.add_op(CommitOp.build_with({"phase": "prepare", "cluster": names[c]}))
            block.add_op(CommitOp.build_with({"phase": "commit", "cluster": names[c]}))
            if not opened:
                block.add_op(WindowOpenOp.build_with({"grace": plan.grace_window_s}))
                opened = True
    block.add_op(WindowCloseOp.build_with({}))
    block.add_op(UpdateOp.build_with({}))
    for name in names:
        block.add_op(PullNoticeOp.build_with({"cluster": name}))
    for t, step in enumerate(plan.push_schedule):
        block.add_op(PullOp(t, [(names[x.cluster], x.layer, x.slave) for x in step]))
    return block


def program_of(module: ModuleOp) -> ProgramOp:
    """The module's one ps.program; VerifyException when there is none or several."""
    programs = [op for op in module.ops if isinstance(op, ProgramOp)]
    if len(programs) != 1:
        raise VerifyException(f"a Di-PS module holds exactly one ps.program, this one {len(programs)}")
    return programs[0]


def plan_from_module(module: ModuleOp) -> Plan:
    """The Plan a (verified) ps program describes; the push schedule is its push steps."""
    module.verify()
    program = program_of(module)
    ops = list(program.body.block.ops)

    def one(cls):
        return next(op for op in ops if isinstance(op, cls))

    clusters = tuple(Cluster(op.sym_name.data, op.value("throughput"), op.value("extra_delay"))
                     for op in ops if isinstance(op, ClusterOp))
    index = {c.name: i for i, c in enumerate(clusters)}
    layer_ops = [op for op in ops if isinstance(op, LayerOp)]
    round_ops = list(one(RoundOp).body.block.ops)
    schedule = tuple(
        tuple(Transfer(index[c], layer, slave) for c, layer, slave in op.transfers)
        for op in round_ops if isinstance(op, PushOp)
    )
    outer, penalty, heartbeat, snapshot = one(OuterNesterovOp), one(PenaltyOp), one(HeartbeatOp), one(SnapshotOp)
    return Plan(
        clusters=clusters,
        bandwidth=one(BandwidthOp).value("matrix"),
        ps_cluster=index[one(MasterOp).cluster.data],
        num_slaves=one(SlavesOp).count.data,
        layers=tuple(Layer(op.prefix.data, op.nbytes.data) for op in layer_ops),
        slave_of_layer=tuple(op.slave.data for op in layer_ops),
        push_schedule=schedule,
        inner_steps=program.inner_steps.data,
        grace_window_s=next(op for op in round_ops if isinstance(op, WindowOpenOp)).value("grace"),
        heartbeat_s=heartbeat.value("interval"),
        missed_heartbeats=heartbeat.missed.data,
        outer=OuterOptimizer(lr=outer.value("lr"), momentum=outer.value("momentum")),
        penalty=Penalty(alpha=penalty.value("alpha"), beta=penalty.value("beta"), clip_norm=penalty.value("clip"),
                        enabled=penalty.value("enabled")),
        snapshot_every=snapshot.every.data,
        snapshots_kept=snapshot.keep.data,
        tokens_per_step=program.tokens_per_step.data,
        model=program.model.data,
        model_dtype=program.value("model_dtype"),
        model_overrides=program.value("model_overrides"),
    )
