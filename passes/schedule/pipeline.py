"""The scheduling passes in pipeline order (docs/scheduled-ir.md): what `stagec trace`
runs after stg-shard, stg-match-collectives and stg-pipeline, and what turns a
training step into the scheduled form every backend reads."""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from stagec.passes.stg_bucket_gradients import DEFAULT_BUCKET_MB, DEFAULT_ZERO_BUCKET_ELEMENTS


def scheduling_passes(*, fuse_gemms: bool = True, bucket_mb: float = DEFAULT_BUCKET_MB,
                      zero_bucket_elements: int = DEFAULT_ZERO_BUCKET_ELEMENTS,
                      defer_gradient_waits: bool = True) -> list[ModulePass]:
    from stagec.passes.stg_bucket_gradients import StgBucketGradients
    from stagec.passes.stg_defer_gradient_waits import StgDeferGradientWaits
    from stagec.passes.stg_fsdp_units import StgFsdpUnits
    from stagec.passes.stg_fuse_gemms import StgFuseGemms
    from stagec.passes.stg_insert_releases import StgInsertReleases
    from stagec.passes.stg_reuse_exchanges import StgReuseExchanges
    from stagec.passes.stg_schedule import StgSchedule
    from stagec.passes.stg_vocab_parallel_cross_entropy import StgVocabParallelCrossEntropy

    passes: list[ModulePass] = [StgReuseExchanges(), StgVocabParallelCrossEntropy()]
    passes += [StgFuseGemms()] if fuse_gemms else []
    passes += [StgFsdpUnits(), StgBucketGradients(bucket_mb, zero_bucket_elements), StgSchedule()]
    passes += [StgDeferGradientWaits()] if defer_gradient_waits else []
    return passes + [StgInsertReleases()]


def schedule(module: ModuleOp, **options) -> ModuleOp:
    """Run the scheduling passes on `module` in place; returns it."""
    from stagec.dialects import make_context

    ctx = make_context()
    for p in scheduling_passes(**options):
        p.apply(ctx, module)
    return module
