"""A parallel strategy as logical-dim rules: which mesh axes split which kind of dim.

Every dim of the training IR has a symbolic size over the model's symbols
(docs/training-ir.md), and the symbols say what the dim is: `B` batch, `S` sequence,
`N` query heads, `KV` key/value heads, `F`/`FE`/`FS` feed-forward and Mamba's inner
dim `DI` (split as Megatron's Mamba layer splits it), `V` vocabulary, `E` experts; a
merged `B*S` is the token dim, and an expert's capacity `(k*B*S/E)` holds tokens too.
A strategy maps those dim classes to mesh axes, as Megatron-LM lays them out:

    dp, fsdp    batch (and tokens)           data parallel; fsdp also shards the
                                             parameters, gradients and optimizer states
    tp          heads, ffn, vocab            Megatron column/row parallel, vocab-parallel
                seq (with sp)                embedding and head; sequence parallel
    tp_kv       as tp                        tp beyond the key/value heads (tp = m * KV):
    tp_q        as tp but key/value heads    stg-shard factors it into tp_kv = KV and
                                             tp_q = m, so that each key/value head is
                                             held whole by the m ranks whose query
                                             heads read it (vLLM's QKVParallelLinear
                                             replicates key/value heads so); tp_q
                                             replicates every tensor with a key/value-
                                             head dim
    cp          seq                          context parallel
    ep          experts; batch               expert parallel: the experts split, and the
                                             tokens outside the experts split like data

An axis splits at most one dim of a tensor: where a tensor (or an op's index space)
has dims of two classes an axis serves, the class listed first wins (tp splits an
attention projection's heads, not its sequence). Within a dim the axes go in the mesh
order, dp major to tp minor.

Per-tensor overrides name a parameter or input and give its layout outright; axes of
a user-declared mesh that no rule knows are placed by overrides only (stage.md
Tables XI and XII).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import math
from dataclasses import dataclass, field
from enum import Enum

from stagec.dialects.stg.attributes import DimAttr, DistributedTensorType
from stagec.dialects.symbolic import Expr, product


class DimClass(Enum):
    BATCH = "batch"
    SEQ = "seq"
    HEADS = "heads"
    KV_HEADS = "kv_heads"
    FFN = "ffn"
    VOCAB = "vocab"
    EXPERTS = "experts"
    NONE = "none"


_FFN = {"F", "FE", "FS", "DI"}  # DI: Mamba's inner dim, which tp splits as Megatron does


def classify_shape(shape: Sequence[Expr]) -> list[DimClass]:
    """What each dim of a tensor holds. `E` is the experts dim only where it leads an
    expert stack ([E, FE, H] weights, [E, C, H] buffers); the router's [E, H] weight
    and [T, E] scores hold one column per expert on every rank."""
    classes = [classify(size) for size in shape]
    for i, cls in enumerate(classes):
        if cls == DimClass.EXPERTS and not (i == 0 and len(shape) >= 3):
            classes[i] = DimClass.NONE
    return classes


def classify(size: Expr) -> DimClass:
    """What a dim holds, read off the symbols of its size (see classify_shape for E)."""
    symbols = size.symbols
    if "N" in symbols:
        return DimClass.HEADS
    if "KV" in symbols:
        return DimClass.KV_HEADS
    if "V" in symbols:
        return DimClass.VOCAB
    if "E" in symbols and symbols & {"B", "S"}:
        return DimClass.BATCH  # an expert's capacity slots hold tokens
    if symbols == {"E"}:
        return DimClass.EXPERTS
    if symbols & _FFN:
        return DimClass.FFN
    if "B" in symbols:
        return DimClass.BATCH  # B, or the tokens B*S
    if "S" in symbols:
        return DimClass.SEQ
    return DimClass.NONE


# The standard axes in mesh order (ranks numbered row-major: tp is innermost, as in
# Megatron-LM), each with the dim classes it splits, most preferred first.
STANDARD_AXES: tuple[str, ...] = ("dp", "fsdp", "ep", "cp", "tp")
# tp's factors where tp exceeds the key/value heads, in mesh order (tp_q minor, so a
# key/value head's replicas are neighbouring ranks, as Megatron numbers them)
TP_FACTORS: tuple[str, ...] = ("tp_kv", "tp_q")
# the axes whose ranks hold a replicated parameter's gradient as a partial sum: ZeRO
# shards its optimizer states over them
ZERO_AXES: tuple[str, ...] = ("dp", "ep", "cp")


class IndivisibleStorage(Exception):
    """fsdp or ZeRO's axes can neither divide nor pad a tensor's storage (a message
    for PassError): their degree exceeds its elements, or every dim they divide not
    is split over other axes already."""


@dataclass(frozen=True)
class Strategy:
    """The mesh axes in use and the rules that place them.

    `sizes` holds every mesh axis (standard or user-declared) in mesh order; `sp` puts
    the sequence of norm and residual regions on tp (Megatron sequence parallelism).
    `overrides` maps a parameter or input name to its layout; `zero` 1 shards the
    optimizer states (and the update) over the data-parallel axes, 2 the gradients
    too (ZeRO stages; fsdp is stage 3)."""

    sizes: Mapping[str, Expr]
    sp: bool = False
    overrides: Mapping[str, DistributedTensorType] = field(default_factory=dict)
    zero: int = 0

    @property
    def axes(self) -> tuple[str, ...]:
        return tuple(self.sizes)

    def classes_of(self, axis: str, sp: bool = True) -> tuple[DimClass, ...]:
        """The dim classes `axis` splits, most preferred first; `sp` False leaves out
        the sequence parallel split (it applies to the residual stream only)."""
        if axis not in self.sizes:
            return ()
        match axis:
            case "dp" | "fsdp":
                return (DimClass.BATCH,)
            case "ep":
                return (DimClass.EXPERTS, DimClass.BATCH)
            case "cp":
                return (DimClass.SEQ,)
            case "tp" | "tp_kv" | "tp_q":
                heads = (DimClass.HEADS,) if axis == "tp_q" else (DimClass.HEADS, DimClass.KV_HEADS)
                rules = (*heads, DimClass.FFN, DimClass.VOCAB)
                return (*rules, DimClass.SEQ) if self.sp and sp else rules
        return ()

    @staticmethod
    def replicates(axis: str, cls: DimClass) -> bool:
        """Whether `axis` holds every tensor with a dim of class `cls` whole on each of
        its ranks: tp_q and the key/value heads."""
        return axis == "tp_q" and cls == DimClass.KV_HEADS

    def rank(self, axis: str, cls: DimClass) -> int | None:
        """How strongly `axis` wants to split a dim of class `cls` (0 = most)."""
        classes = self.classes_of(axis)
        return classes.index(cls) if cls in classes else None

    def order(self, axes: Sequence[str]) -> tuple[str, ...]:
        """Axes in mesh order (major to minor within a dim)."""
        return tuple(sorted(axes, key=self.axes.index))

    def desired_splits(self, shape: Sequence[Expr], sp: bool = True) -> tuple[tuple[str, ...], ...]:
        """The layout the rules give a tensor of this global shape."""
        placed: dict[int, list[str]] = {i: [] for i in range(len(shape))}
        classes = classify_shape(shape)
        for axis in self.axes:
            if any(self.replicates(axis, cls) for cls in classes):
                continue
            best: tuple[int, int] | None = None
            for i, cls in enumerate(classes):
                options = self.classes_of(axis, sp)
                rank = options.index(cls) if cls in options else None
                if rank is not None and (best is None or rank < best[0]):
                    best = (rank, i)
            if best is not None:
                placed[best[1]].append(axis)
        return tuple(self.order(placed[i]) for i in range(len(shape)))

    def desired(self, ty: DistributedTensorType, sp: bool = True) -> DistributedTensorType:
        return ty.with_layout(self.desired_splits(ty.shape, sp), ())

    def storage(self, ty: DistributedTensorType, known: Mapping[str, int], name: str = "") -> DistributedTensorType:
        """Where a parameter (and its gradient and optimizer states) lives: its compute
        layout, further sharded over fsdp along the first dim fsdp can divide (the
        config's sizes tell; an unknown size is assumed to divide)."""
        return self._shard(ty, ("fsdp",) if "fsdp" in self.sizes else (), known, name)

    def zero_storage(self, storage: DistributedTensorType, known: Mapping[str, int], name: str = "") -> DistributedTensorType:
        """Where ZeRO keeps a parameter's optimizer states (and, at stage 2, its
        gradient): its storage further sharded over the data-parallel axes it is whole
        over - dp, cp, and ep for the parameters outside the experts, whose gradients
        those axes sum (Megatron's distributed optimizer shards over data x context
        parallel ranks, and an expert's over the expert-data-parallel ones)."""
        used = {a for split in storage.splits for a in split}
        axes = tuple(a for a in ZERO_AXES if a in self.sizes and a not in used)
        return self._shard(storage, axes, known, name) if self.zero and axes else storage

    def _shard(
        self, ty: DistributedTensorType, axes: tuple[str, ...], known: Mapping[str, int], name: str
    ) -> DistributedTensorType:
        """`ty` further split over `axes` (together) along the first dim their product
        divides. Where none does, padded (docs/sharding.md, "Uneven shards"): a whole
        dim is split into ceil(size / degree) per rank, the last shards zero-padded, as
        FSDP and Megatron's distributed optimizer pad - the dim that pads least. Where
        the degree exceeds the tensor's elements (some rank would hold padding only
        whatever the layout), or only dims other axes already split are left,
        IndivisibleStorage."""
        if not axes or not ty.shape:
            return ty
        degree = product(self.sizes[a] for a in axes).as_int()
        dims = list(ty.splits)
        locals_: list[int] = []
        for i, (size, dim) in enumerate(zip(ty.shape, ty.dims.data)):
            if dim.padded_extent:
                locals_.append(dim.padded_extent)
                continue  # a padded dim is not split further
            local = (size / product(self.sizes[a] for a in dims[i])).subs(known)
            value = local.as_int()
            if value is None or degree is None or value % degree == 0:
                dims[i] = (*dims[i], *axes)
                return ty.with_layout(dims)
            locals_.append(value)
        elements = math.prod(locals_)
        whole = [i for i, split in enumerate(dims) if not split]
        if elements < degree or not whole:
            raise IndivisibleStorage(_indivisible(name, ty, axes, degree, locals_, elements))

        def held(i: int) -> int:  # elements per rank with dim i padded
            return -(-locals_[i] // degree) * (elements // locals_[i])

        i = min(whole, key=lambda i: (held(i), i))
        padded = [
            DimAttr(d.expr, (*axes,), -(-locals_[i] // degree)) if j == i else d for j, d in enumerate(ty.dims.data)
        ]
        return type(ty)(padded, ty.element_type, ty.partial_axes)


def _indivisible(
    name: str, ty: DistributedTensorType, axes: tuple[str, ...], degree: int, local: list[int], elements: int
) -> str:
    over = " x ".join(axes)
    what = f"'{name}' " if name else "a tensor "
    held = f" (held as [{', '.join(map(str, local))}] per rank)" if any(ty.splits) else ""
    if elements < degree:
        return (
            f"{over} = {degree} exceeds the {elements} elements of {what}{ty.layout_str()}{held}: "
            f"some rank would hold padding only - give {over} at most {elements}"
        )
    return (
        f"{over} = {degree} divides no dim of {what}{ty.layout_str()}{held}, and every dim it could pad is "
        f"split over other axes already - give {over} a size dividing one of its dims"
    )

