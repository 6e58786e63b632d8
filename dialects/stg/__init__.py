"""stg: symbolic sharded tensor graphs (STAGE's STG IR, stage.md §IV-C) as an xDSL dialect.

Tensors carry global symbolic shapes and their distribution over a named device mesh;
ops compute, communicate, manage memory and structure a training step, and every
compute and communication op reports its per-rank FLOPs and bytes (cost.py).
"""

from xdsl.ir import Dialect

from stagec.dialects.stg.attributes import (
    DimAttr,
    DistributedTensorType,
    ExprAttr,
    HostTensorType,
    TensorType,
    TokenType,
    element_bytes,
)
from stagec.dialects.stg.comm import (
    AllGatherOp,
    AllReduceOp,
    AllReduceStagesOp,
    AllToAllOp,
    BroadcastOp,
    CollectiveOp,
    CommOp,
    LocalSliceOp,
    RecvOp,
    ReduceScatterOp,
    ReshardOp,
    SendOp,
)
from stagec.dialects.stg.compute import (
    ComputeOp,
    EinsumOp,
    ElementwiseKind,
    ElementwiseKindAttr,
    ElementwiseOp,
    NormKind,
    NormKindAttr,
    NormOp,
    ReduceKind,
    ReduceKindAttr,
    ReduceOp,
    SoftmaxOp,
)
from stagec.dialects.stg.cost import CostInterface
from stagec.dialects.stg.memory import OffloadOp, ReleaseOp, ReloadOp, WaitOp
from stagec.dialects.stg.mesh import MeshOp
from stagec.dialects.stg.model_ops import (
    AttentionOp,
    CrossEntropyOp,
    EmbeddingOp,
    MoeCombineOp,
    MoeDispatchOp,
    OpaqueOp,
    SsmScanOp,
)
from stagec.dialects.stg.shape_ops import ConcatOp, FillOp, ReshapeOp, SplitOp, TransposeOp
from stagec.dialects.stg.state import AssignOp, InputOp, OptimizerStateOp, ParamOp
from stagec.dialects.stg.structure import (
    MicroBatchOp,
    PhaseKind,
    PhaseKindAttr,
    PhaseOp,
    RepeatOp,
    YieldOp,
)
from stagec.dialects.stg.schedule import GroupOp
from stagec.dialects.stg.training import AdamOp, SgdOp, VjpOp

STG = Dialect(
    "stg",
    [
        MeshOp,
        # state
        ParamOp,
        InputOp,
        OptimizerStateOp,
        AssignOp,
        # compute
        EinsumOp,
        ElementwiseOp,
        ReduceOp,
        SoftmaxOp,
        NormOp,
        AttentionOp,
        EmbeddingOp,
        CrossEntropyOp,
        ReshapeOp,
        TransposeOp,
        ConcatOp,
        SplitOp,
        FillOp,
        SsmScanOp,
        MoeDispatchOp,
        MoeCombineOp,
        OpaqueOp,
        # training
        VjpOp,
        AdamOp,
        SgdOp,
        # communication
        ReshardOp,
        AllGatherOp,
        ReduceScatterOp,
        AllReduceOp,
        AllReduceStagesOp,
        AllToAllOp,
        BroadcastOp,
        LocalSliceOp,
        SendOp,
        RecvOp,
        # memory
        ReleaseOp,
        OffloadOp,
        ReloadOp,
        WaitOp,
        # structure
        RepeatOp,
        MicroBatchOp,
        PhaseOp,
        YieldOp,
        # the scheduled form
        GroupOp,
    ],
    [
        ExprAttr,
        DimAttr,
        TensorType,
        HostTensorType,
        TokenType,
        ElementwiseKindAttr,
        ReduceKindAttr,
        NormKindAttr,
        PhaseKindAttr,
    ],
)

__all__ = [
    "AdamOp",
    "AllGatherOp",
    "AllReduceOp",
    "AllReduceStagesOp",
    "AllToAllOp",
    "AssignOp",
    "AttentionOp",
    "BroadcastOp",
    "CollectiveOp",
    "CommOp",
    "ComputeOp",
    "ConcatOp",
    "CostInterface",
    "CrossEntropyOp",
    "DimAttr",
    "DistributedTensorType",
    "EinsumOp",
    "ElementwiseKind",
    "ElementwiseKindAttr",
    "ElementwiseOp",
    "EmbeddingOp",
    "ExprAttr",
    "FillOp",
    "HostTensorType",
    "InputOp",
    "LocalSliceOp",
    "MeshOp",
    "MicroBatchOp",
    "MoeCombineOp",
    "MoeDispatchOp",
    "NormKind",
    "NormKindAttr",
    "NormOp",
    "OffloadOp",
    "OpaqueOp",
    "OptimizerStateOp",
    "ParamOp",
    "PhaseKind",
    "PhaseKindAttr",
    "PhaseOp",
    "GroupOp",
    "RecvOp",
    "ReduceKind",
    "ReduceKindAttr",
    "ReduceOp",
    "ReduceScatterOp",
    "ReleaseOp",
    "ReloadOp",
    "RepeatOp",
    "ReshapeOp",
    "ReshardOp",
    "STG",
    "SendOp",
    "SgdOp",
    "SoftmaxOp",
    "SplitOp",
    "SsmScanOp",
    "TensorType",
    "TokenType",
    "TransposeOp",
    "VjpOp",
    "WaitOp",
    "YieldOp",
    "element_bytes",
]
