"""The caching-allocator model against cases derived by hand from
c10/cuda/CUDACachingAllocator.cpp (passes/analysis/allocator.py states the rules)."""

from __future__ import annotations

import numpy as np
import pytest

from stagec.passes.analysis.allocator import MIB, CachingAllocator, allocation_size, round_size, should_split
from stagec.passes.analysis.communicators import Communicator
from stagec.passes.analysis.memory import StepAllocations
from stagec.passes.analysis.reserved import nccl_bytes, replay
from stagec.runtime.cost.hardware_description import RuntimeMemory


def test_rounding_to_512_bytes():
    assert round_size(1) == 512  # at least kMinBlockSize
    assert round_size(512) == 512
    assert round_size(513) == 1024
    assert round_size(10 * MIB + 1) == 10 * MIB + 512


def test_segment_sizes():
    assert allocation_size(512) == 2 * MIB  # small: a 2 MiB segment
    assert allocation_size(1 * MIB) == 2 * MIB  # 1 MiB is still small
    assert allocation_size(1 * MIB + 512) == 20 * MIB  # 1-10 MiB: a 20 MiB segment
    assert allocation_size(10 * MIB - 512) == 20 * MIB
    assert allocation_size(10 * MIB) == 10 * MIB  # >= 10 MiB: rounded to 2 MiB
    assert allocation_size(11 * MIB) == 12 * MIB


def test_split_thresholds():
    # small pool: a rest of at least 512 B is split off; large pool: only a rest > 1 MiB
    assert should_split(2 * MIB, 2 * MIB - 512, small=True)
    assert not should_split(2 * MIB, 2 * MIB, small=True)
    assert should_split(20 * MIB, 18 * MIB, small=False)  # rest 2 MiB
    assert not should_split(12 * MIB, 11 * MIB, small=False)  # rest exactly 1 MiB stays with the block


def test_small_requests_share_a_2mib_segment():
    a = CachingAllocator()
    # 3 x 600 kB: rounded to 600,064 B each; 1,800,192 B fit one 2 MiB segment
    for _ in range(3):
        a.malloc(600_000)
    assert (a.reserved, a.segments) == (2 * MIB, 1)
    # a fourth does not fit the 297,0xx B left: a second segment
    a.malloc(600_000)
    assert (a.reserved, a.segments) == (4 * MIB, 2)
    assert a.allocated == 4 * 600_064


def test_medium_requests_split_a_20mib_segment_and_merge_back():
    a = CachingAllocator()
    x = a.malloc(3 * MIB)
    y = a.malloc(3 * MIB)  # from the 14 MiB rest of the same segment
    assert (a.reserved, a.segments) == (20 * MIB, 1)
    a.free(x)
    a.free(y)  # merges with x before it and the 14 MiB rest after it: one 20 MiB block
    z = a.malloc(19 * MIB)  # fits the merged block: no new segment
    assert (a.reserved, a.segments) == (20 * MIB, 1)
    assert z[0].size == 20 * MIB  # the 1 MiB rest is not > 1 MiB: handed out whole
    assert a.allocated == 20 * MIB and a.requested == 19 * MIB


def test_best_fit_and_fragmentation():
    a = CachingAllocator()
    big = a.malloc(40 * MIB)  # one 40 MiB segment
    mid = a.malloc(12 * MIB)  # one 12 MiB segment
    a.free(big)
    a.free(mid)
    # 11 MiB: best fit is the 12 MiB block (rest 1 MiB: not split), not the 40 MiB one
    eleven = a.malloc(11 * MIB)
    assert eleven[0].size == 12 * MIB
    # 30 MiB from the 40 MiB block (rest 10 MiB split off); then 20 MiB finds no block
    # of 20 MiB (10 MiB free, not contiguous with anything free): a new segment
    a.malloc(30 * MIB)
    a.malloc(20 * MIB)
    assert a.reserved == (40 + 12 + 20) * MIB and a.segments == 3


def test_segments_are_kept_high_water_mark():
    a = CachingAllocator()
    blocks = [a.malloc(100 * MIB) for _ in range(3)]
    for b in blocks:
        a.free(b)
    assert a.reserved == 300 * MIB  # cached, not returned
    a.malloc(250 * MIB)  # no free block of 250 MiB (three separate segments): a fourth
    assert a.reserved == 550 * MIB
    assert a.peak_requested == 300 * MIB


def test_replay_orders_allocations_before_frees_at_a_position():
    # two 30 MiB buffers: [0, 0] and [1, 1] reuse one segment; [0, 1] and [1, 2] overlap at 1
    apart = StepAllocations((), np.array([[0, 0, 30 * MIB], [1, 1, 30 * MIB]]))
    overlap = StepAllocations((), np.array([[0, 1, 30 * MIB], [1, 2, 30 * MIB]]))
    assert replay(apart).reserved == 30 * MIB
    assert replay(overlap).reserved == 60 * MIB
    # persistent tensors come first and stay (12 MiB: its own segment), workspaces
    # after them (1 MiB is a small request: a 2 MiB segment), then the step (30 MiB)
    assert replay(StepAllocations((12 * MIB,), apart.spans), (MIB,)).reserved == (12 + 2 + 30) * MIB


def test_nccl_bytes_per_communicator():
    runtime = RuntimeMemory()
    # a collective communicator: 24 ring channels x 10 MiB
    assert nccl_bytes(Communicator("[tp]", 8), runtime) == 24 * 10 * MIB
    # a pipeline stage's point-to-point one with two peers: 2 x 32 channels x 10 MiB
    assert nccl_bytes(Communicator("[pp] p2p", 8, True, 2), runtime) == 2 * 32 * 10 * MIB


@pytest.mark.parametrize("size", [1, 511, 512, 1 * MIB, 1 * MIB + 1, 10 * MIB - 1, 10 * MIB, 123_456_789])
def test_one_request_reserves_its_segment(size):
    a = CachingAllocator()
    a.malloc(size)
    assert a.reserved == allocation_size(round_size(size))


def test_a_cached_block_serves_only_its_own_stream():
    # CUDACachingAllocator get_free_block: a block of another stream ends the search
    a = CachingAllocator()
    x = a.malloc(32 * MIB, stream=1)
    a.free(x)
    a.malloc(32 * MIB)  # the compute stream (0) cannot take stream 1's cached block
    assert (a.reserved, a.segments) == (64 * MIB, 2)
    again = a.malloc(32 * MIB, stream=1)  # stream 1 takes its own block back
    assert again[0] is x[0] and a.reserved == 64 * MIB
    # the rest of a split block stays with its stream: 30 MiB of stream 1's 32 MiB
    # segment leaves a 2 MiB block that a 2 MiB request of stream 0 cannot use
    a.free(again)
    a.malloc(30 * MIB, stream=1)
    a.malloc(2 * MIB)
    assert a.reserved == 64 * MIB + 20 * MIB  # a 2 MiB request gets a 20 MiB segment


def test_a_gathered_parameter_is_allocated_on_the_unshard_stream():
    """liveness.stream_of: FSDP allocates an all-gathered parameter on its unshard
    stream, so the compute stream cannot reuse its block after it is freed."""
    from xdsl.parser import Parser

    from stagec.dialects import make_context
    from stagec.passes.analysis.accounting import account
    from stagec.passes.analysis.liveness import COMPUTE_STREAM, UNSHARD_STREAM

    text = """
stg.mesh @m [fsdp = 2]
func.func @f() {
  %w = stg.param "w" : !stg.tensor<[F/fsdp], f32>
  %g = stg.all_gather %w on @m [fsdp] : !stg.tensor<[F/fsdp], f32> -> !stg.tensor<[F], f32>
  %a = stg.elementwise neg %g : !stg.tensor<[F], f32> -> !stg.tensor<[F], f32>
  %b = stg.elementwise neg %a : !stg.tensor<[F], f32> -> !stg.tensor<[F], f32>
  func.return
}"""
    module = Parser(make_context(), text).parse_module()
    module.verify()
    F = 8 * MIB  # f32: the shard is 16 MiB, a gathered or computed [F] 32 MiB
    mem = account(module, {"F": F}).rank_classes[0].memory
    spans = mem.allocations
    # g [1, 2] on the unshard stream, a [2, 3] and b [3, 3] on the compute stream
    assert spans.spans.tolist() == [[1, 2, 32 * MIB], [2, 3, 32 * MIB], [3, 3, 32 * MIB]]
    assert spans.streams.tolist() == [UNSHARD_STREAM, COMPUTE_STREAM, COMPUTE_STREAM]
    # the shard's 16 MiB segment, g's and a's 32 MiB; b is allocated at 3 after g's
    # free at 2: one pool would hand it g's block (80 MiB), but that block is the
    # unshard stream's, so b gets a segment of its own
    assert replay(spans).reserved == (16 + 32 + 32 + 32) * MIB
    one_pool = StepAllocations(spans.persistent, spans.spans, spans.gaps)
    assert replay(one_pool).reserved == (16 + 32 + 32) * MIB
