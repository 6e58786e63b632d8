"""stagec's passes, one module each, named as on the command line (stg-x -> stg_x.py)."""

from collections.abc import Callable

from xdsl.passes import ModulePass


def _stg_annotate_costs() -> type[ModulePass]:
    from stagec.passes.stg_annotate_costs import StgAnnotateCosts

    return StgAnnotateCosts


def _stg_autodiff() -> type[ModulePass]:
    from stagec.passes.stg_autodiff import StgAutodiff

    return StgAutodiff


def _stg_pipeline() -> type[ModulePass]:
    from stagec.passes.stg_pipeline import StgPipeline

    return StgPipeline


def _stg_match_collectives() -> type[ModulePass]:
    from stagec.passes.stg_match_collectives import StgMatchCollectives

    return StgMatchCollectives


def _stg_instantiate() -> type[ModulePass]:
    from stagec.passes.stg_instantiate import StgInstantiate

    return StgInstantiate


def _stg_shard() -> type[ModulePass]:
    from stagec.passes.stg_shard import StgShard

    return StgShard


def _stg_fuse_gemms() -> type[ModulePass]:
    from stagec.passes.stg_fuse_gemms import StgFuseGemms

    return StgFuseGemms


def _stg_fsdp_units() -> type[ModulePass]:
    from stagec.passes.stg_fsdp_units import StgFsdpUnits

    return StgFsdpUnits


def _stg_schedule() -> type[ModulePass]:
    from stagec.passes.stg_schedule import StgSchedule

    return StgSchedule


def _stg_bucket_gradients() -> type[ModulePass]:
    from stagec.passes.stg_bucket_gradients import StgBucketGradients

    return StgBucketGradients


def _stg_defer_gradient_waits() -> type[ModulePass]:
    from stagec.passes.stg_defer_gradient_waits import StgDeferGradientWaits

    return StgDeferGradientWaits


def _stg_reduce_buckets() -> type[ModulePass]:
    from stagec.passes.stg_reduce_buckets import StgReduceBuckets

    return StgReduceBuckets


def _stg_insert_releases() -> type[ModulePass]:
    from stagec.passes.stg_insert_releases import StgInsertReleases

    return StgInsertReleases


def _stg_vocab_parallel_cross_entropy() -> type[ModulePass]:
    from stagec.passes.stg_vocab_parallel_cross_entropy import StgVocabParallelCrossEntropy

    return StgVocabParallelCrossEntropy


def _stg_reuse_exchanges() -> type[ModulePass]:
    from stagec.passes.stg_reuse_exchanges import StgReuseExchanges

    return StgReuseExchanges


def _stg_fully_shard() -> type[ModulePass]:
    from stagec.passes.stg_fully_shard import StgFullyShard

    return StgFullyShard


def _stg_prefetch() -> type[ModulePass]:
    from stagec.passes.stg_prefetch import StgPrefetch

    return StgPrefetch


def _stg_unshard() -> type[ModulePass]:
    from stagec.passes.stg_unshard import StgUnshard

    return StgUnshard


def _stg_offload() -> type[ModulePass]:
    from stagec.passes.stg_offload import StgOffload

    return StgOffload


def _stg_unroll_layers() -> type[ModulePass]:
    from stagec.passes.stg_unroll_layers import StgUnrollLayers

    return StgUnrollLayers


def _stg_zero3() -> type[ModulePass]:
    from stagec.passes.stg_zero3 import StgZero3

    return StgZero3


def _stg_fsdp2() -> type[ModulePass]:
    from stagec.passes.stg_fsdp2 import StgFsdp2

    return StgFsdp2


def _convert_torch_to_stg() -> type[ModulePass]:
    from stagec.passes.convert_torch_to_stg import ConvertTorchToStg

    return ConvertTorchToStg


def _canonicalize() -> type[ModulePass]:
    from xdsl.transforms.canonicalize import CanonicalizePass

    return CanonicalizePass


def _cse() -> type[ModulePass]:
    from xdsl.transforms.common_subexpression_elimination import (
        CommonSubexpressionElimination,
    )

    return CommonSubexpressionElimination


def _dce() -> type[ModulePass]:
    from xdsl.transforms.dead_code_elimination import DeadCodeElimination

    return DeadCodeElimination


def all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every pass stagec-opt can run, by command-line name."""
    return {
        "convert-torch-to-stg": _convert_torch_to_stg,
        "stg-annotate-costs": _stg_annotate_costs,
        "stg-autodiff": _stg_autodiff,
        "stg-match-collectives": _stg_match_collectives,
        "stg-instantiate": _stg_instantiate,
        "stg-shard": _stg_shard,
        "stg-pipeline": _stg_pipeline,
        "stg-reuse-exchanges": _stg_reuse_exchanges,
        "stg-vocab-parallel-cross-entropy": _stg_vocab_parallel_cross_entropy,
        "stg-fuse-gemms": _stg_fuse_gemms,
        "stg-fsdp-units": _stg_fsdp_units,
        "stg-bucket-gradients": _stg_bucket_gradients,
        "stg-schedule": _stg_schedule,
        "stg-defer-gradient-waits": _stg_defer_gradient_waits,
        "stg-reduce-buckets": _stg_reduce_buckets,
        "stg-insert-releases": _stg_insert_releases,
        "stg-fully-shard": _stg_fully_shard,
        "stg-prefetch": _stg_prefetch,
        "stg-unshard": _stg_unshard,
        "stg-offload": _stg_offload,
        "stg-unroll-layers": _stg_unroll_layers,
        "stg-zero3": _stg_zero3,
        "stg-fsdp2": _stg_fsdp2,
        "canonicalize": _canonicalize,
        "cse": _cse,
        "dce": _dce,
    }
