"""Choosing an op's distribution from its operands' (stage.md §IV-D1).

Each operand arrives in its producer's layout. The op runs in one layout of its index
space: every mesh axis that splits some operand's letter splits that letter for the
whole op. Where operands disagree - an axis splits the sequence in one operand and the
heads in another - one letter wins and the other operands are resharded (the
consumer's view of stage.md Fig. 5):

1. an operand that is a parameter (its layout is the strategy's) wins;
2. then the letter whose dim class the axis prefers (strategy.py's rules);
3. then the letter split in the larger operand, which then stays in place;
4. then the letter that comes first.

`solve` depends on nothing but its arguments, so `Solver` remembers its answers: a
layer's ops meet the same signatures and layouts again (forward, backward, the
recomputed forward, and each round of stg-shard's propagation), about 70% of the calls
on Llama-3-70B.

Partial-sum operands pass through where the op is linear in them and no letter uses
the axis; otherwise they are reduced. An operand holding the whole of a letter others
split is sliced locally for free, as the verifiers allow, and is left as it is.

An axis that replicates a dim class (strategy.py: tp_q and the key/value heads) splits
nothing of an op with a letter of that class, unless the letter is tied to one the
axis does split: attention's query heads split over tp_kv and tp_q while its
key/value heads take tp_kv only, so a key/value head serves the query heads of every
rank that holds it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

from stagec.dialects.stg.attributes import DimAttr, DistributedTensorType
from stagec.dialects.stg.sharding import Linearity, Signature
from stagec.passes.shard.strategy import DimClass, Strategy, classify_shape


@dataclass
class Solution:
    operands: list[DistributedTensorType]
    results: list[DistributedTensorType]


class Unshardable(Exception):
    """The op cannot run in any layout the rules allow (a message for PassError)."""


def solve(
    sig: Signature,
    types: Sequence[DistributedTensorType],
    results: Sequence[DistributedTensorType],
    strategy: Strategy,
    anchored: Sequence[bool],
    weigh: "Weigher",
) -> Solution:
    tie_of = {letter: group for group in sig.tied for letter in group}
    own, classes = _dim_classes(sig, types, results, tie_of)
    replicated = {
        axis for axis in strategy.axes
        if any(strategy.replicates(axis, cls) for letter, cls in own.items() if letter not in tie_of)
    }
    assign = _assign_axes(sig, types, strategy, anchored, weigh, tie_of, classes, replicated)
    order = _axis_order(assign, sig, types, strategy, anchored, weigh, tie_of)
    used = {a for axes in order.values() for a in axes}

    def axes_of(letter: str) -> tuple[str, ...]:
        """The axes splitting `letter`: its tie group's, less those its class is whole over."""
        axes = order.get(_root(letter, tie_of), ())
        return tuple(a for a in axes if not strategy.replicates(a, own.get(letter, DimClass.NONE)))

    # a padded letter (docs/sharding.md, "Uneven shards") is padded alike wherever
    # the op splits it: as the operand that holds it so
    pads: dict[str, int] = {}
    for sub, ty in zip(sig.operands, types):
        for letter, dim in zip(sub, ty.dims.data):
            if dim.padded_extent and dim.axis_names == axes_of(letter):
                pads.setdefault(_root(letter, tie_of), dim.padded_extent)

    def laid(ty: DistributedTensorType, sub: str, splits, partial) -> DistributedTensorType:
        out = ty.with_layout(splits, partial)
        if not pads:
            return out
        dims = [
            DimAttr(d.expr, d.axes, pads[_root(letter, tie_of)])
            if d.axis_names and _root(letter, tie_of) in pads and d.axis_names == axes_of(letter)
            else d
            for letter, d in zip(sub, out.dims.data)
        ]
        return type(ty)(dims, ty.element_type, out.partial_axes)

    kept = _kept_partials(sig, types, used)
    targets = []
    for i, (sub, ty) in enumerate(zip(sig.operands, types)):
        full = [axes_of(letter) for letter in sub]
        # an operand that stays as it is may hold a whole dim others split; one that
        # moves anyway takes the op's split too (a reduce-scatter, not an all-reduce)
        # (not a padded letter: a reshard cuts it, padding and all)
        sliced = [
            w if split or not sig.slices_locally or _root(letter, tie_of) in pads else ()
            for w, split, letter in zip(full, ty.splits, sub)
        ]
        target = laid(ty, sub, sliced, kept[i])
        targets.append(target if target == ty else laid(ty, sub, full, kept[i]))

    in_results = {_root(letter, tie_of) for letter in "".join(sig.results)}
    contracted = {_root(letter, tie_of) for letter in "".join(sig.operands)} - in_results - sig.combined
    summed = {a for root in contracted for a in order.get(root, ())}
    if summed and not sig.contract_sums:
        raise Unshardable("a contracted dim would be split")
    partial = _result_partial(sig, kept) | summed
    out = []
    for sub, ty in zip(sig.results, results, strict=True):
        dims = [axes_of(letter) for letter in sub]
        out.append(laid(ty, sub, dims, partial))
    return Solution(targets, out)


class Solver:
    """`solve` for one strategy and one weigher, remembering each answer (it is a
    function of its arguments; the layouts in it are immutable attributes)."""

    def __init__(self, strategy: Strategy, weigh: "Weigher"):
        self.strategy, self.weigh = strategy, weigh
        self._solutions: dict[tuple, Solution] = {}

    def __call__(self, sig: Signature, types: Sequence[DistributedTensorType],
                 results: Sequence[DistributedTensorType], anchored: Sequence[bool]) -> Solution:
        key = (_signature_key(sig), tuple(types), tuple(results), tuple(anchored))
        solution = self._solutions.get(key)
        if solution is None:
            solution = self._solutions[key] = solve(sig, types, results, self.strategy, anchored, self.weigh)
        return Solution(list(solution.operands), list(solution.results))


def _signature_key(sig: Signature) -> tuple:
    return tuple(_frozen(getattr(sig, f.name)) for f in fields(sig))


def _frozen(value):
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, (set, frozenset)):
        return frozenset(value)
    return value


def _dim_classes(sig, types, results, tie_of) -> tuple[dict[str, DimClass], dict[str, DimClass]]:
    """Each letter's dim class, and each tie group's: the first definite one among the
    tensors that have it."""
    own: dict[str, DimClass] = {}
    classes: dict[str, DimClass] = {}
    for sub, ty in zip([*sig.operands, *sig.results], [*types, *results]):
        for letter, cls in zip(sub, classify_shape(ty.shape)):
            for table, key in ((own, letter), (classes, _root(letter, tie_of))):
                if table.get(key, DimClass.NONE) == DimClass.NONE:
                    table[key] = cls
    return own, classes


def _assign_axes(sig, types, strategy, anchored, weigh, tie_of, classes, replicated) -> dict[str, list[str]]:
    """The letter (tie group) each axis the operands split goes to: among those it
    splits in some operand, an anchored holder's first, then the strategy's preferred
    dim class, then the heaviest holders."""
    candidates: dict[str, dict[str, list[int]]] = {}
    for i, (sub, ty) in enumerate(zip(sig.operands, types)):
        for letter, split in zip(sub, ty.splits):
            for axis in split:
                candidates.setdefault(axis, {}).setdefault(_root(letter, tie_of), []).append(i)

    assign: dict[str, list[str]] = {}
    for axis in strategy.order(candidates) + tuple(a for a in candidates if a not in strategy.axes):
        if axis in replicated:
            continue
        options = {k: v for k, v in candidates[axis].items() if not _whole(k, sig, tie_of)}
        if not options:
            continue

        def key(letter: str) -> tuple:
            holders = options[letter]
            rank = strategy.rank(axis, classes[letter])
            return (
                0 if any(anchored[i] for i in holders) else 1,
                rank if rank is not None else 99,
                -sum(weigh(types[i]) for i in holders),
                letter,
            )

        winner = min(options, key=key)
        assign.setdefault(winner, []).append(axis)
    return assign


def _axis_order(assign, sig, types, strategy, anchored, weigh, tie_of) -> dict[str, tuple[str, ...]]:
    """The order of a letter's axes: as the operand that wins for it holds them."""
    order: dict[str, tuple[str, ...]] = {}
    for letter, axes in assign.items():
        holders = [
            (0 if anchored[i] else 1, -weigh(ty), ty.splits[sub.index(m)])
            for i, (sub, ty) in enumerate(zip(sig.operands, types))
            for m in _members(letter, tie_of)
            if m in sub and set(ty.splits[sub.index(m)]) == set(axes)
        ]
        order[letter] = min(holders)[2] if holders else strategy.order(axes)
    return order


def _root(letter: str, tie_of: Mapping[str, set[str]]) -> str:
    return min(tie_of[letter]) if letter in tie_of else letter


def _members(root: str, tie_of: Mapping[str, set[str]]) -> set[str]:
    return tie_of.get(root, {root})


def _whole(root: str, sig: Signature, tie_of) -> bool:
    return bool(_members(root, tie_of) & sig.unsplit)


def _kept_partials(
    sig: Signature, types: Sequence[DistributedTensorType], used: set[str]
) -> list[frozenset[str]]:
    """The partial axes each operand keeps (the rest it must have reduced)."""
    partial = [t.partial_axes - used for t in types]
    match sig.linearity:
        case Linearity.NONE:
            return [frozenset()] * len(types)
        case Linearity.FIRST:
            return [partial[0]] + [frozenset()] * (len(types) - 1)
        case Linearity.ADDITIVE:
            common = frozenset.intersection(*partial) if partial else frozenset()
            return [common] * len(types)
        case Linearity.MULTILINEAR:
            seen: set[str] = set()
            kept = []
            for p in partial:
                kept.append(frozenset(p - seen))
                seen |= p
            return kept
    raise AssertionError(sig.linearity)


def _result_partial(sig: Signature, kept: list[frozenset[str]]) -> frozenset[str]:
    if sig.linearity == Linearity.ADDITIVE:
        return kept[0] if kept else frozenset()
    return frozenset().union(*kept) if kept else frozenset()


class Weigher:
    """A tensor's local size as a number, for tie-breaks: symbols take their bound
    value, or a stand-in (4096 for a dim symbol, 8 for a mesh axis)."""

    def __init__(self, known: Mapping[str, int], axes: Sequence[str]):
        self.known = dict(known)
        self.axes = set(axes)

    def __call__(self, ty: DistributedTensorType) -> float:
        expr = ty.local_numel()
        env = {s: self.known.get(s, 8 if s in self.axes else 4096) for s in expr.symbols}
        try:
            num = expr.numerator.subs(env).as_int() or 0
            den = expr.denominator.subs(env).as_int() or 1
        except Exception:  # noqa: BLE001 - a tie-break only
            return 0.0
        return num / den
