"""A model of PyTorch's CUDA caching allocator, replayed over a step's allocations.

What a real run reserves is not the live tensors' bytes: PyTorch's caching allocator
(c10/cuda/CUDACachingAllocator.cpp, the default configuration: no
`PYTORCH_CUDA_ALLOC_CONF`, so no max_split_size, no expandable segments, no garbage
collection threshold) rounds every request, carves blocks out of cudaMalloc'ed
*segments*, and keeps freed blocks cached instead of returning them. Its reserved
memory is the sum of the segments it holds; since it frees a segment only when a
cudaMalloc fails, a run that fits reserves the high-water mark of its segments.

The model follows the source, one function to one function:

- `round_size`: a request is rounded up to a multiple of 512 bytes (kMinBlockSize),
  at least 512.
- `get_pool`: rounded sizes <= 1 MiB (kSmallSize) go to the small pool, the rest to
  the large pool; the pools never share blocks.
- `get_allocation_size`: a new segment is 2 MiB (kSmallBuffer) for a small request,
  20 MiB (kLargeBuffer) for a request under 10 MiB (kMinLargeAlloc), else the request
  rounded up to 2 MiB (kRoundLarge).
- `get_free_block`: best fit - the smallest cached block of the pool that holds the
  request, the lowest address among equal sizes (the pool is a set ordered by
  (stream, size, address)). Only when none fits is a new segment allocated.
  A cached block serves only requests of the stream it was allocated on: the search
  key carries the request's stream and a block of another stream ends the search
  (`(*it)->stream != p.stream()` returns false). So a buffer a framework allocates on
  a side stream (FSDP's unshard stream, reserved.py) leaves its block to that
  stream's later requests.
- `should_split`: the found block is split when the rest is >= 512 bytes (small
  pool) or > 1 MiB (large pool); the request takes the low addresses and the rest
  goes back to the pool. A large block whose rest is <= 1 MiB is handed out whole.
- `free_block`: a freed block merges with its free neighbours of the same segment
  (prev, then next) and returns to its pool.

Streams: `malloc(size, stream)` names the allocating stream (0, the compute stream,
by default); blocks and their splits keep it, and a free returns the block to that
stream's cache. A free is immediate: `record_stream` events, which delay a block's
reuse until the other stream passes the free, are not modelled (they depend on how
far the host runs ahead of the device). Segments are never released
(no out-of-memory retry): the step is assumed to fit.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from dataclasses import dataclass

KIB, MIB = 1 << 10, 1 << 20

# CUDACachingAllocator.cpp's constants
MIN_BLOCK_SIZE = 512  # kMinBlockSize: all sizes are rounded to at least 512 bytes
SMALL_SIZE = 1 * MIB  # kSmallSize: the largest "small" allocation
SMALL_BUFFER = 2 * MIB  # kSmallBuffer: small allocations are packed in 2 MiB segments
LARGE_BUFFER = 20 * MIB  # kLargeBuffer: allocations between 1 and 10 MiB share 20 MiB segments
MIN_LARGE_ALLOC = 10 * MIB  # kMinLargeAlloc
ROUND_LARGE = 2 * MIB  # kRoundLarge: larger segments are rounded up to 2 MiB


def round_size(size: int) -> int:
    """The bytes a block of a `size`-byte request spans."""
    if size < MIN_BLOCK_SIZE:
        return MIN_BLOCK_SIZE
    return MIN_BLOCK_SIZE * ((size + MIN_BLOCK_SIZE - 1) // MIN_BLOCK_SIZE)


def is_small(rounded: int) -> bool:
    return rounded <= SMALL_SIZE


def allocation_size(rounded: int) -> int:
    """The size of the segment cudaMalloc'ed for a request that no cached block fits."""
    if rounded <= SMALL_SIZE:
        return SMALL_BUFFER
    if rounded < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return ROUND_LARGE * ((rounded + ROUND_LARGE - 1) // ROUND_LARGE)


def should_split(block_size: int, rounded: int, small: bool) -> bool:
    remaining = block_size - rounded
    return remaining >= MIN_BLOCK_SIZE if small else remaining > SMALL_SIZE


class Block:
    """A range of one segment: allocated or cached (free)."""

    __slots__ = ("address", "size", "small", "stream", "prev", "next", "allocated")

    def __init__(self, address: int, size: int, small: bool, stream: int = 0):
        self.address = address
        self.size = size
        self.small = small
        self.stream = stream
        self.prev: Block | None = None
        self.next: Block | None = None
        self.allocated = False


@dataclass(frozen=True)
class AllocatorStats:
    """What a replay ends with (bytes): `reserved` is the segments held, which never
    shrink, so it is also their high-water mark; `peak_allocated` the high-water mark
    of the blocks handed out (requests rounded to 512 B, whole blocks where not split);
    `peak_requested` that of the requests themselves (the live bytes)."""

    reserved: int
    segments: int
    peak_allocated: int
    peak_requested: int


class CachingAllocator:
    """The caching allocator of one device (module doc)."""

    def __init__(self):
        # free blocks of each (stream, small) pool ordered as the real set is: by
        # (size, address) within a stream
        self._free: dict[tuple[int, bool], list[tuple[int, int]]] = {}
        self._block_at: dict[tuple[int, int, bool], Block] = {}
        self._next_address = 0
        self.reserved = 0
        self.segments = 0
        self.allocated = 0
        self.requested = 0
        self.peak_allocated = 0
        self.peak_requested = 0

    def _insert(self, block: Block) -> None:
        key = (block.size, block.address)
        insort(self._free.setdefault((block.stream, block.small), []), key)
        self._block_at[(block.size, block.address, block.small)] = block

    def _remove(self, block: Block) -> None:
        pool = self._free[(block.stream, block.small)]
        key = (block.size, block.address)
        del pool[bisect_left(pool, key)]
        del self._block_at[(block.size, block.address, block.small)]

    def malloc(self, size: int, stream: int = 0) -> tuple[Block, int]:
        """Hand out a block for `size` bytes on `stream`; returns it and the request's
        size (the handle `free` takes)."""
        rounded = round_size(size)
        small = is_small(rounded)
        pool = self._free.setdefault((stream, small), [])
        i = bisect_left(pool, (rounded, -1))
        if i < len(pool):
            block = self._block_at[(*pool[i], small)]
            self._remove(block)
        else:  # cudaMalloc a new segment
            segment = allocation_size(rounded)
            block = Block(self._next_address, segment, small, stream)
            self._next_address += segment
            self.reserved += segment
            self.segments += 1
        if should_split(block.size, rounded, small):
            rest = Block(block.address + rounded, block.size - rounded, small, stream)
            rest.prev, rest.next = block, block.next
            if block.next is not None:
                block.next.prev = rest
            block.next = rest
            block.size = rounded
            self._insert(rest)
        block.allocated = True
        self.allocated += block.size
        self.requested += size
        self.peak_allocated = max(self.peak_allocated, self.allocated)
        self.peak_requested = max(self.peak_requested, self.requested)
        return block, size

    def free(self, handle: tuple[Block, int]) -> None:
        block, size = handle
        block.allocated = False
        self.allocated -= block.size
        self.requested -= size
        for neighbour in (block.prev, block.next):
            if neighbour is not None and not neighbour.allocated:
                self._remove(neighbour)
                if neighbour is block.prev:  # [neighbour block]
                    block.address = neighbour.address
                    block.prev = neighbour.prev
                    if block.prev is not None:
                        block.prev.next = block
                else:  # [block neighbour]
                    block.next = neighbour.next
                    if block.next is not None:
                        block.next.prev = block
                block.size += neighbour.size
        self._insert(block)

    def stats(self) -> AllocatorStats:
        return AllocatorStats(self.reserved, self.segments, self.peak_allocated, self.peak_requested)


__all__ = [
    "AllocatorStats",
    "CachingAllocator",
    "LARGE_BUFFER",
    "MIN_BLOCK_SIZE",
    "MIN_LARGE_ALLOC",
    "ROUND_LARGE",
    "SMALL_BUFFER",
    "SMALL_SIZE",
    "allocation_size",
    "round_size",
    "should_split",
]
