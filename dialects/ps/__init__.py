"""ps: a Di-PS cross-cluster training program (the Di-PS paper §3-§4; docs/dips.md) as an xDSL dialect.

One `ps.program` holds the roles (clusters with their throughput and delay, the master
and slave PSs on the PS cluster), the bandwidth matrix, the model's layers and their
slaves, the outer optimizer, the penalty, heartbeats and snapshots, and one round of the
dual workflow: control messages and the layer-wise push and pull steps in issue order
(ops.py). `module_from_plan` / `plan_from_module` (convert.py) convert between it and
the `Plan` the PS runtime and the trace emitter read (runtime/ps/plan.py).
"""

from xdsl.ir import Dialect

from stagec.dialects.ps.convert import module_from_plan, plan_from_module, program_of
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

PS = Dialect(
    "ps",
    [
        ProgramOp,
        # declarations
        ClusterOp,
        BandwidthOp,
        MasterOp,
        SlavesOp,
        LayerOp,
        OuterNesterovOp,
        PenaltyOp,
        HeartbeatOp,
        SnapshotOp,
        RoundOp,
        # control flow (§3.2)
        PushRequestOp,
        CommitOp,
        WindowOpenOp,
        WindowCloseOp,
        UpdateOp,
        PullNoticeOp,
        # data flow (Fig. 5)
        PushOp,
        PullOp,
    ],
    [],
)

__all__ = [
    "PS", "BandwidthOp", "ClusterOp", "CommitOp", "HeartbeatOp", "LayerOp", "MasterOp", "OuterNesterovOp",
    "PenaltyOp", "ProgramOp", "PullNoticeOp", "PullOp", "PushOp", "PushRequestOp", "RoundOp", "SlavesOp",
    "SnapshotOp", "UpdateOp", "WindowCloseOp", "WindowOpenOp", "module_from_plan", "plan_from_module", "program_of",
]
