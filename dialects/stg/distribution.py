"""Distribution rules: which layouts an op can compute locally, and what it produces.

Every rank runs the same op on its own shards, so an op is valid only where its
operands' layouts line up (stage.md §IV-C/D). These rules are shared by the
verifiers, by stg-shard's propagation and by the collective matcher.

Index-letter rule (einsum, elementwise): every index letter has one global size and
one *effective split* - the split axes of the operands that split it, which must
agree. An operand that holds the whole of a split letter's dim is sliced locally,
for free (stage.md Fig. 6, "Slice*"); that is legal as long as the operand does not
already use the axis elsewhere. A contracted letter with a split makes the result a
partial sum over the split axes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from xdsl.utils.exceptions import VerifyException

from stagec.dialects.stg.attributes import DistributedTensorType
from stagec.dialects.symbolic import Expr


def _axes_str(axes: Iterable[str]) -> str:
    return ", ".join(axes) or "none"


@dataclass(frozen=True)
class LetterLayout:
    """The size and effective split of every index letter of an op."""

    sizes: dict[str, Expr]
    splits: dict[str, tuple[str, ...]]


def unify_letters(
    what: str,
    subscripts: Sequence[str],
    types: Sequence[DistributedTensorType],
    describe: Callable[[str], str] = lambda letter: f"index '{letter}'",
) -> LetterLayout:
    """Check that operands agree on each letter's size and split (see module doc).
    `describe` names a letter in diagnostics ("index 'h'", "result dim 1")."""
    sizes: dict[str, Expr] = {}
    splits: dict[str, tuple[str, ...]] = {}
    where: dict[str, int] = {}
    pads: dict[str, int | None] = {}
    for i, (letters, ty) in enumerate(zip(subscripts, types, strict=True)):
        for letter, size, split in zip(letters, ty.shape, ty.splits, strict=True):
            if letter not in sizes:
                sizes[letter], where[letter] = size, i
            elif sizes[letter] != size:
                raise VerifyException(
                    f"{what}: {describe(letter)} has size {sizes[letter]} in operand "
                    f"#{where[letter]} but {size} in operand #{i}"
                )
            pad = ty.dims.data[letters.index(letter)].padded_extent
            if split and pads.setdefault(letter, pad) != pad:
                raise VerifyException(
                    f"{what}: {describe(letter)} is padded to {pads[letter]} per rank in one operand "
                    f"but {pad} in operand #{i} (docs/sharding.md, \"Uneven shards\"); reshard one of them first"
                )
            if split:
                if splits.get(letter, split) != split:
                    raise VerifyException(
                        f"{what}: {describe(letter)} is split over "
                        f"[{_axes_str(splits[letter])}] in one operand but over "
                        f"[{_axes_str(split)}] in operand #{i}; reshard one of them first"
                    )
                splits[letter] = split
    letters_of_axis: dict[str, str] = {}
    for letter, split in splits.items():
        for axis in split:
            if axis in letters_of_axis:
                raise VerifyException(
                    f"{what}: mesh axis '{axis}' splits both "
                    f"{describe(letters_of_axis[axis])} and {describe(letter)}"
                )
            letters_of_axis[axis] = letter
    for i, (letters, ty) in enumerate(zip(subscripts, types, strict=True)):
        own = {a for s in ty.splits for a in s} | ty.partial_axes
        for letter, split in zip(letters, ty.splits, strict=True):
            sliced = set(splits.get(letter, ())) - set(split)
            if clash := sliced & own:
                raise VerifyException(
                    f"{what}: operand #{i} ({ty.layout_str()}) would have to be sliced "
                    f"over [{_axes_str(sorted(clash))}] for {describe(letter)}, but it is "
                    "already distributed over that axis"
                )
    return LetterLayout(sizes, {k: splits.get(k, ()) for k in sizes})


def check_result(
    what: str,
    result: DistributedTensorType,
    shape: Sequence[Expr],
    splits: Sequence[Sequence[str]],
    partial: Iterable[str],
) -> None:
    """Fail unless `result` has exactly the derived shape and distribution."""
    expected = result.with_layout(splits, partial)
    if result.shape != tuple(shape) or result.dims != expected.dims or (
        result.partial_axes != frozenset(partial)
    ):
        got = result.layout_str()
        want = type(result)(
            [(s, a) for s, a in zip(shape, splits, strict=True)],
            result.element_type,
            partial,
        ).layout_str()
        raise VerifyException(f"{what}: result should be {want}, not {got}")


def partials_disjoint(what: str, types: Sequence[DistributedTensorType]) -> frozenset[str]:
    """A product is linear in each factor, so only one factor may be a partial sum per axis."""
    seen: dict[str, int] = {}
    for i, ty in enumerate(types):
        for axis in ty.partial_axes:
            if axis in seen:
                raise VerifyException(
                    f"{what}: operands #{seen[axis]} and #{i} are both partial sums over "
                    f"'{axis}'; their product is not a partial sum - all_reduce one first"
                )
            seen[axis] = i
    return frozenset(seen)


def require_no_partial(what: str, ty: DistributedTensorType, role: str = "operand") -> None:
    if ty.partial_axes:
        raise VerifyException(
            f"{what}: {role} {ty.layout_str()} is a partial sum over "
            f"[{_axes_str(sorted(ty.partial_axes))}]; this op is not linear, so "
            "all_reduce (or reduce_scatter) it first"
        )


def require_unsplit(what: str, ty: DistributedTensorType, dim: int, reason: str) -> None:
    if ty.splits[dim]:
        raise VerifyException(
            f"{what}: dim {dim} of {ty.layout_str()} must not be split ({reason}); "
            f"all_gather it over [{_axes_str(ty.splits[dim])}] first"
        )


# -- collectives -------------------------------------------------------------------------


def _ends_with(split: tuple[str, ...], axes: tuple[str, ...]) -> bool:
    return len(split) >= len(axes) and split[len(split) - len(axes) :] == axes


def _changed_dims(src: DistributedTensorType, dst: DistributedTensorType) -> list[int]:
    return [i for i, (a, b) in enumerate(zip(src.splits, dst.splits)) if a != b]


def check_same_tensor(what: str, src: DistributedTensorType, dst: DistributedTensorType) -> None:
    if src.shape != dst.shape or src.element_type != dst.element_type:
        raise VerifyException(
            f"{what}: the result must be the same global tensor as the input "
            f"({src.layout_str()}, {src.element_type}), with another distribution; "
            f"got {dst.layout_str()}, {dst.element_type}"
        )


def _changed_dim(what: str, src, dst, axes: tuple[str, ...]) -> int:
    changed = _changed_dims(src, dst)
    if len(changed) != 1:
        raise VerifyException(
            f"{what} over [{_axes_str(axes)}] must change the split of exactly one dim, "
            f"but {src.layout_str()} -> {dst.layout_str()} changes {len(changed)}"
        )
    _check_padding(what, src, dst, changed[0])
    return changed[0]


def _check_padding(what: str, src, dst, d: int) -> None:
    """A padded dim (docs/sharding.md, "Uneven shards") is padded over all of its
    axes at once: a collective gathers it whole or scatters a whole dim into it."""
    for padded, other in ((src, dst), (dst, src)):
        if padded.dims.data[d].padded_extent and other.splits[d]:
            raise VerifyException(
                f"{what}: dim {d} of {padded.layout_str()} is padded, so it is gathered into or "
                f"scattered from a whole dim, not {other.layout_str()}"
            )


def _check_gathered(what: str, src, dst, axes: tuple[str, ...]) -> None:
    """dst is src with `axes` removed from the minor end of one dim's split."""
    d = _changed_dim(what, src, dst, axes)
    if not _ends_with(src.splits[d], axes):
        raise VerifyException(
            f"{what} over [{_axes_str(axes)}]: dim {d} of {src.layout_str()} is split over "
            f"[{_axes_str(src.splits[d])}], whose minor end is not [{_axes_str(axes)}]"
        )
    if dst.splits[d] != src.splits[d][: -len(axes)]:
        raise VerifyException(
            f"{what} over [{_axes_str(axes)}]: dim {d} of the result {dst.layout_str()} should "
            f"be split over [{_axes_str(src.splits[d][: -len(axes)])}], not "
            f"[{_axes_str(dst.splits[d])}]"
        )


def _check_scattered(what: str, src, dst, axes: tuple[str, ...]) -> None:
    """dst is src with `axes` appended to the minor end of one dim's split."""
    d = _changed_dim(what, src, dst, axes)
    if dst.splits[d] != src.splits[d] + axes:
        raise VerifyException(
            f"{what} over [{_axes_str(axes)}] must append those axes to the minor end of one "
            f"dim's split: dim {d} of the result {dst.layout_str()} should be split over "
            f"[{_axes_str(src.splits[d] + axes)}], not [{_axes_str(dst.splits[d])}]"
        )


def check_all_gather(what: str, src, dst, axes: tuple[str, ...]) -> None:
    check_same_tensor(what, src, dst)
    if overlap := set(axes) & src.partial_axes:
        raise VerifyException(
            f"{what}: the input is a partial sum over [{_axes_str(sorted(overlap))}]; "
            "gathering partial sums needs all_reduce, not all_gather"
        )
    if dst.partial_axes != src.partial_axes:
        raise VerifyException(f"{what}: all_gather must keep the partial-sum axes")
    _check_gathered(what, src, dst, axes)


def check_reduce_scatter(what: str, src, dst, axes: tuple[str, ...]) -> None:
    check_same_tensor(what, src, dst)
    _require_reduced(what, src, dst, axes)
    _check_scattered(what, src, dst, axes)


def check_all_reduce(what: str, src, dst, axes: tuple[str, ...]) -> None:
    check_same_tensor(what, src, dst)
    _require_reduced(what, src, dst, axes)
    if src.splits != dst.splits:
        raise VerifyException(f"{what}: all_reduce must keep every dim's split")


def _require_reduced(what: str, src, dst, axes: tuple[str, ...]) -> None:
    if missing := set(axes) - src.partial_axes:
        raise VerifyException(
            f"{what}: the input {src.layout_str()} is not a partial sum over "
            f"[{_axes_str(sorted(missing))}], so there is nothing to reduce"
        )
    if dst.partial_axes != src.partial_axes - set(axes):
        raise VerifyException(
            f"{what}: the result must stay partial over exactly "
            f"[{_axes_str(sorted(src.partial_axes - set(axes)))}], "
            f"not [{_axes_str(sorted(dst.partial_axes))}]"
        )


def check_all_to_all(what: str, src, dst, axes: tuple[str, ...]) -> None:
    check_same_tensor(what, src, dst)
    if dst.partial_axes != src.partial_axes:
        raise VerifyException(f"{what}: all_to_all must keep the partial-sum axes")
    changed = _changed_dims(src, dst)
    gathered = [d for d in changed if _ends_with(src.splits[d], axes) and dst.splits[d] == src.splits[d][: -len(axes)]]
    scattered = [d for d in changed if _ends_with(dst.splits[d], axes) and src.splits[d] == dst.splits[d][: -len(axes)]]
    if len(changed) != 2 or len(gathered) != 1 or len(scattered) != 1:
        raise VerifyException(
            f"{what} over [{_axes_str(axes)}] must move exactly those axes from the minor "
            f"end of one dim's split to the minor end of another's: "
            f"{src.layout_str()} -> {dst.layout_str()} does not"
        )


def check_same_layout(what: str, src, dst) -> None:
    check_same_tensor(what, src, dst)
    if src.dims != dst.dims or src.partial_axes != dst.partial_axes:
        raise VerifyException(
            f"{what}: the result must have the input's distribution "
            f"{src.layout_str()}, not {dst.layout_str()}"
        )


def check_local_slice(what: str, src, dst, axes: tuple[str, ...]) -> None:
    """dst is src with `axes` appended to the minor end of one dim's split, where src
    does not use those axes at all: every rank of the group holds the same tensor and
    keeps its own block of it (stage.md Fig. 6, "Slice*"), so nothing moves."""
    check_same_tensor(what, src, dst)
    if used := set(axes) & src.mesh_axes:
        raise VerifyException(
            f"{what}: the input {src.layout_str()} is already distributed over "
            f"[{_axes_str(sorted(used))}]; only an axis the input is duplicated over can "
            "be sliced locally"
        )
    if dst.partial_axes != src.partial_axes:
        raise VerifyException(f"{what}: local_slice must keep the partial-sum axes")
    _check_scattered(what, src, dst, axes)
