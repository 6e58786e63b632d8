"""Which layers each pipeline stage holds (stage.md §IV-D3: "evenly dividing models
according to their layer").

The layer stacks of a model (`stg.repeat L`, DeepSeek's `L` dense then `L2` MoE
layers) form one sequence of layers; stage k holds a contiguous run of it, at least
one layer, cut into one slice per stack it touches (`Chunk`: layers
[offset, offset + count) of that stack).

- balance=layers: L/pp layers per stage. With one stack whose size is a symbol, the
  counts stay symbolic (`L/pp`, stage k from `k*L/pp`) when stg.config leaves L
  unbound or binds it to a multiple of pp; otherwise the first L mod pp stages take
  one layer more.
- balance=cost: the cut that minimises the most FLOPs any stage does per
  micro-batch (forward + backward), the first stage also doing the embedding and
  the last the final norm, head and loss; among the best cuts, earlier stages take
  more layers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from stagec.dialects.symbolic import Expr


class PartitionError(ValueError):
    """The layers cannot be cut as asked; the message says why."""


@dataclass(frozen=True)
class Chunk:
    """Layers [offset, offset + count) of layer stack `stack` (its index in forward
    order), whose size is `size`."""

    stack: int
    offset: Expr
    count: Expr
    size: Expr


def _describe(sizes: Sequence[Expr], env: dict[str, int]) -> str:
    names = " + ".join(str(s) for s in sizes)
    try:
        total = sum(s.evaluate(env) for s in sizes)
    except Exception:  # noqa: BLE001 - unbound symbols: name the expression only
        return names
    return names if names == str(total) else f"{names} = {total}"


def numeric_sizes(sizes: Sequence[Expr], env: dict[str, int]) -> list[int] | None:
    """The stacks' sizes as numbers under `env`, or None if a symbol is unbound."""
    if any(s.symbols - env.keys() for s in sizes):
        return None
    return [s.evaluate(env) for s in sizes]


def check_stage_count(sizes: Sequence[Expr], pp: int, env: dict[str, int]) -> None:
    numbers = numeric_sizes(sizes, env)
    if numbers is not None and pp > sum(numbers):
        raise PartitionError(
            f"pp = {pp} is more than the {sum(numbers)} layers of the model "
            f"({_describe(sizes, env)}): every stage needs at least one layer"
        )


def check_chunk_count(sizes: Sequence[Expr], pp: int, virtual: int, env: dict[str, int]) -> None:
    """Interleaving cuts the layers into pp*virtual equal chunks (Megatron-LM asserts
    the same): the layer count must be a multiple of it where it is known."""
    numbers = numeric_sizes(sizes, env)
    if numbers is None:
        return  # a symbolic L is cut into L/(pp*virtual); several stacks need their sizes anyway
    total = sum(numbers)
    if total % (pp * virtual):
        raise PartitionError(
            f"interleaved 1F1B cuts the {total} layers of the model ({_describe(sizes, env)}) into pp x "
            f"virtual_stages = {pp} x {virtual} = {pp * virtual} equal chunks: the layer count must be a multiple "
            f"of {pp * virtual}"
        )


def even_counts(layers: int, pp: int) -> list[int]:
    """layers // pp per stage, the first layers % pp stages one more."""
    base, extra = divmod(layers, pp)
    return [base + (k < extra) for k in range(pp)]


def cost_counts(first: float, layer_costs: Sequence[float], last: float, pp: int) -> list[int]:
    """Layers per stage minimising the largest stage cost (each stage >= 1 layer;
    the first stage adds `first`, the last `last`). Ties go to the cut giving
    earlier stages more layers."""
    n = len(layer_costs)
    prefix = [0.0]
    for c in layer_costs:
        prefix.append(prefix[-1] + c)

    def cost(k: int, i: int, j: int) -> float:
        return prefix[j] - prefix[i] + (first if k == 0 else 0.0) + (last if k == pp - 1 else 0.0)

    # best[k][i]: the least bottleneck of stages k.. holding layers i..
    inf = float("inf")
    best = [[inf] * (n + 1) for _ in range(pp + 1)]
    best[pp][n] = 0.0
    for k in reversed(range(pp)):
        for i in range(n):
            for j in range(i + 1, n - (pp - 1 - k) + 1):
                best[k][i] = min(best[k][i], max(cost(k, i, j), best[k + 1][j]))
    counts, i = [], 0
    for k in range(pp):
        j = max(
            j for j in range(i + 1, n - (pp - 1 - k) + 1)
            if max(cost(k, i, j), best[k + 1][j]) <= best[k][i]
        )
        counts.append(j - i)
        i = j
    return counts


def chunks_of(counts: Sequence[int], sizes: Sequence[Expr], numbers: Sequence[int]) -> list[list[Chunk]]:
    """Cut the sequence of stacks (sizes `numbers`) into stages of `counts` layers."""
    stages: list[list[Chunk]] = []
    start = 0
    for count in counts:
        end, chunks, base = start + count, [], 0
        for s, (size, n) in enumerate(zip(sizes, numbers)):
            lo, hi = max(start, base), min(end, base + n)
            if lo < hi:
                chunks.append(Chunk(s, Expr.const(lo - base), Expr.const(hi - lo), size))
            base += n
        stages.append(chunks)
        start = end
    return stages


def partition_layers(sizes: Sequence[Expr], pp: int, env: dict[str, int]) -> list[list[Chunk]]:
    """balance=layers (module doc)."""
    check_stage_count(sizes, pp, env)
    numbers = numeric_sizes(sizes, env)
    if len(sizes) == 1 and (numbers is None or numbers[0] % pp == 0) and not sizes[0].is_constant:
        size = sizes[0]
        per_stage = size / pp
        return [[Chunk(0, per_stage * k, per_stage, size)] for k in range(pp)]
    if numbers is None:
        unbound = sorted(set().union(*(s.symbols for s in sizes)) - env.keys())
        raise PartitionError(
            f"the model has {len(sizes)} layer stacks ({', '.join(map(str, sizes))}); cutting them into "
            f"stages needs their sizes: bind {', '.join(unbound)} in the module's stg.config"
        )
    return chunks_of(even_counts(sum(numbers), pp), sizes, numbers)


def require_sizes(sizes: Sequence[Expr], env: dict[str, int]) -> list[int]:
    """The stacks' sizes, which balance=cost needs as numbers."""
    numbers = numeric_sizes(sizes, env)
    if numbers is None:
        raise PartitionError(
            "balance=cost needs the number of layers: bind "
            + ", ".join(sorted(set().union(*(s.symbols for s in sizes)) - env.keys()))
            + " in the module's stg.config"
        )
    return numbers


def partition_by_cost(
    sizes: Sequence[Expr], pp: int, env: dict[str, int], first: float, layer_costs: Sequence[float], last: float
) -> list[list[Chunk]]:
    """balance=cost (module doc); `layer_costs` has one cost per stack."""
    check_stage_count(sizes, pp, env)
    numbers = require_sizes(sizes, env)
    per_layer = [c for c, n in zip(layer_costs, numbers) for _ in range(n)]
    return chunks_of(cost_counts(first, per_layer, last, pp), sizes, numbers)
