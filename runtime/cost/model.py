"""The cost model: how long one rank takes for one op, on one hardware description.

`CostModel(hardware, profile).op_cost(op, bindings)` gives every op that implements
the CostInterface (dialects/stg/cost.py) an `OpCost`:

- `num_ops`: the op's per-rank FLOPs (`flops()`; for a stg.vjp the backward FLOPs of
  its body, as passes/analysis/accounting.py counts them), and `tensor_size`: the
  bytes it moves (`bytes_moved()`) - what ASTRA-sim's roofline mode reads from a
  Chakra COMP_NODE (CHAKRA.md); for communication ops `tensor_size` is `comm_size`;
- `micros`: the time, from a profile when it has the op's key (`source="profile"`),
  else estimated (`source="roofline"` for compute, `"alpha_beta"` for communication
  and host copies).

Roofline (docs/cost-model.md): time = max(FLOPs / (peak[units][dtype] x eff[category]),
bytes / (HBM bandwidth x eff.memory)), where the category is accounting.py's:

- gemm (stg.einsum) and attention (stg.attention) run on the matmul units (tensor
  cores) at `eff.matmul` / `eff.attention`;
- elementwise and other ops run on the vector units (CUDA cores) at `eff.vector`:
  bf16/f16 at the packed 2-wide rate the datasheets list as "non-Tensor" FP16/BF16;
  in practice these ops are memory-bound, so the bandwidth term decides;
- dtype: the element type of the op's first floating-point operand (einsum operands
  share one), else of its first floating-point result, else f32. fp8 on hardware
  without an fp8 peak runs at the f16 rate; f32 matmuls run at the f32 rate unless
  `tf32=True` (PyTorch's allow_tf32).

A stg.vjp runs each body op's backward on that op's units: the compute term is the
sum of backward_flops / (peak x eff) over the body, the memory term the vjp's own
bytes (its primals, cotangents and gradients).

Collectives follow collectives.py's ring formulas on the link the group uses: NVLink
when every group of ranks along the op's mesh axes lies inside one node (ranks are
row-major over the mesh axes, mesh.py), else the inter-node network. A stg.reshard
not yet matched costs the collectives stg-match-collectives would choose for it;
stg.offload / stg.reload use the host link: latency + bytes / bandwidth.

Speed: a cost is cached per op (a repeated layer body is costed once) and, for all
but communication ops, per (op name, properties, operand and result types; a vjp's
body ops too), so identical layers evaluate their expressions once. The per-op cache
assumes ops are not rewritten in place afterwards: `clear_cache()` after a pass.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from xdsl.dialects.builtin import AnyFloat, BFloat16Type
from xdsl.ir import Attribute, Operation

from stagec.dialects.stg.attributes import DistributedTensorType, TokenType
from stagec.dialects.stg.comm import (
    AllReduceStagesOp,
    CommOp,
    LocalSliceOp,
    RecvOp,
    ReshardOp,
    SendOp,
)
from stagec.dialects.stg.cost import CostInterface, flop_category
from stagec.dialects.stg.memory import OffloadOp, ReloadOp
from stagec.dialects.stg.mesh import MeshOp
from stagec.dialects.stg.training import VjpOp
from stagec.dialects.symbolic import Expr, SymbolicError
from stagec.passes.collectives.matcher import MatchError, match_reshard
from stagec.runtime.cost.collectives import comm_micros
from stagec.runtime.cost.hardware_description import Hardware, Link, load_hardware
from stagec.runtime.cost.profile import Profile, SignatureError, load_profile, op_signature

_MATMUL_CATEGORIES = ("gemm", "attention")
# A dtype a table lacks runs at the rate of the next one here.
_FALLBACK = {"fp8": "f16", "tf32": "f32"}


class CostError(ValueError):
    """An op the model cannot cost: no CostInterface, or a size left unbound."""


@dataclass(frozen=True)
class OpCost:
    """One rank's cost of one op (module doc)."""

    num_ops: int  # FLOPs
    tensor_size: int  # bytes moved (comm_size for communication)
    micros: float
    source: str  # "roofline" | "profile" | "alpha_beta"


def element_dtype(element_type: Attribute) -> str | None:
    """The peak-table name of a floating-point element type ("bf16", ...), else None."""
    if not isinstance(element_type, AnyFloat):
        return None
    bits = element_type.bitwidth
    if bits == 16:
        return "bf16" if isinstance(element_type, BFloat16Type) else "f16"
    if bits < 16:
        return "fp8"
    return "f32" if bits == 32 else "f64"


def _tensor(ty: Attribute) -> DistributedTensorType | None:
    if isinstance(ty, TokenType):
        ty = ty.value_type
    return ty if isinstance(ty, DistributedTensorType) else None


def op_dtype(op: Operation) -> str:
    """The element type an op computes in (module doc)."""
    for values in (op.operands, op.results):
        for v in values:
            t = _tensor(v.type)
            if t is not None and (dtype := element_dtype(t.element_type)) is not None:
                return dtype
    return "f32"


class CostModel:
    """Per-op time on one hardware description, with an optional profile (module doc)."""

    def __init__(
        self,
        hardware: Hardware | str | Path,
        profile: Profile | str | Path | None = None,
        *,
        tf32: bool = False,
    ):
        self.hardware = hardware if isinstance(hardware, Hardware) else load_hardware(hardware)
        self.profile = profile if profile is None or isinstance(profile, Profile) else load_profile(profile)
        self.tf32 = tf32
        if self.profile is not None and self.profile.hardware != self.hardware.name:
            warnings.warn(
                f"{self.profile.source}: the profile was recorded on '{self.profile.hardware}' but the model "
                f"costs '{self.hardware.name}'; its measured times are used as they are",
                stacklevel=2,
            )
        self._caches: dict[tuple, tuple[dict, dict]] = {}
        self._meshes: dict[tuple, tuple[MeshOp, tuple]] = {}
        self._last: tuple[Mapping, dict, tuple[dict, dict]] | None = None

    # -- public ------------------------------------------------------------------------

    def op_cost(self, op: Operation, bindings: Mapping[str, int]) -> OpCost:
        """The cost of `op` for one rank, its sizes evaluated under `bindings` (the
        model's dims and the mesh axis sizes, e.g. accounting.module_bindings)."""
        by_op, by_shape = self._caches_for(bindings)
        hit = by_op.get(id(op))
        if hit is not None and hit[0] is op:
            return hit[1]
        if not isinstance(op, CostInterface):
            raise CostError(f"{op.name} has no cost: it does not implement the CostInterface")
        key = _shape_key(op)
        if isinstance(op, CommOp):  # its cost depends on the mesh's axes and sizes too
            key = (key, self._mesh_of(op)[1])
        elif isinstance(op, VjpOp):
            key = (key, *(_shape_key(inner) for inner in op.forward_ops))
        cost = by_shape.get(key)
        if cost is None:
            cost = by_shape[key] = self._cost(op, bindings)
        by_op[id(op)] = (op, cost)
        return cost

    def clear_cache(self) -> None:
        """Forget every cost: call it after rewriting ops in place (a pass that changes
        an op's types or properties), since costs are cached per op object."""
        self._caches.clear()
        self._last = None

    def roofline_micros(self, flops: float, bytes: float, category: str, dtype: str) -> float:
        """max(compute, memory) time in microseconds for an op of `category`
        (gemm, attention, elementwise, other) computing in `dtype`."""
        return max(self.compute_micros(flops, category, dtype), self.memory_micros(bytes))

    def compute_micros(self, flops: float, category: str, dtype: str) -> float:
        if not flops:
            return 0.0
        hw = self.hardware
        if category in _MATMUL_CATEGORIES:
            table = hw.matmul_flops
            eff = hw.efficiency.matmul if category == "gemm" else hw.efficiency.attention
            if dtype == "f32" and self.tf32 and "tf32" in table:
                dtype = "tf32"
        else:
            table, eff = hw.vector_flops, hw.efficiency.vector
        while dtype not in table:
            dtype = _FALLBACK.get(dtype, "f32")
        return flops / (table[dtype] * eff) * 1e6

    def memory_micros(self, bytes: float) -> float:
        return bytes / (self.hardware.memory_bandwidth * self.hardware.efficiency.memory) * 1e6

    def collective_micros(self, kind: str, bytes: float, group_size: int, *, within_node: bool | None = None) -> float:
        """A collective's time: the profile's T_c(V) curve where it covers `bytes`,
        else the alpha-beta model on the group's link (collectives.py)."""
        if self.profile is not None:
            measured = self.profile.collective_micros(kind, bytes, group_size)
            if measured is not None:
                return measured
        return comm_micros(kind, bytes, group_size, self.hardware.link_for_group(group_size, within_node=within_node))

    # -- internals ---------------------------------------------------------------------

    def _caches_for(self, bindings: Mapping[str, int]) -> tuple[dict, dict]:
        last = self._last
        if last is not None and last[0] is bindings and last[1] == bindings:
            return last[2]
        caches = self._caches.setdefault(tuple(sorted(bindings.items())), ({}, {}))
        self._last = (bindings, dict(bindings), caches)
        return caches

    def _int(self, expr: Expr, bindings: Mapping[str, int], op: Operation, what: str) -> int:
        try:
            value = expr.evaluate_fraction(bindings)
        except SymbolicError as error:
            raise CostError(f"cannot evaluate the {what} of {op.name} ({expr}): {error}") from None
        return value.numerator if value.denominator == 1 else round(value)

    def _measured(self, op: Operation, bindings: Mapping[str, int]) -> float | None:
        if self.profile is None or not self.profile.ops:
            return None
        try:
            return self.profile.op_micros(op_signature(op, bindings))
        except SignatureError as error:
            raise CostError(str(error)) from None

    def _cost(self, op: Operation, bindings: Mapping[str, int]) -> OpCost:
        flops = self._int(op.flops(), bindings, op, "FLOPs")
        moved = self._int(op.bytes_moved(), bindings, op, "bytes")
        measured = self._measured(op, bindings)
        if measured is not None:
            return OpCost(flops, moved, measured, "profile")
        if isinstance(op, CommOp):
            return OpCost(flops, moved, self._comm_micros(op, moved, bindings), "alpha_beta")
        if isinstance(op, (OffloadOp, ReloadOp)):
            return OpCost(flops, moved, _link_micros(self.hardware.host_link, moved), "alpha_beta")
        if isinstance(op, VjpOp):
            compute = 0.0
            for inner in op.forward_ops:
                if isinstance(inner, CostInterface):
                    backward = self._int(inner.backward_flops(), bindings, op, f"backward FLOPs of {inner.name}")
                    compute += self.compute_micros(backward, flop_category(inner), op_dtype(inner))
            return OpCost(flops, moved, max(compute, self.memory_micros(moved)), "roofline")
        return OpCost(flops, moved, self.roofline_micros(flops, moved, flop_category(op), op_dtype(op)), "roofline")

    def _comm_micros(self, op: CommOp, moved: int, bindings: Mapping[str, int]) -> float:
        if isinstance(op, LocalSliceOp) or not moved:
            return 0.0
        mesh = self._mesh_of(op)[0]
        sizes: dict[str, int] = {}
        for axis, size in mesh.axis_sizes.items():
            try:
                sizes[axis] = bindings[axis] if axis in bindings else size.evaluate(bindings)
            except SymbolicError as error:
                raise CostError(f"cannot size mesh axis '{axis}' for {op.name}: {error}") from None
        if isinstance(op, ReshardOp):
            return self._reshard_micros(op, sizes, bindings)
        axes = op.mesh_axes()
        if isinstance(op, AllReduceStagesOp):
            group = len(op.coordinates)
        else:
            group = math.prod(sizes[a] for a in axes)
        if isinstance(op, (SendOp, RecvOp)):
            group = 2
        within = _within_node(sizes, axes, self.hardware.gpus_per_node)
        return self.collective_micros(op.COLLECTIVE_KIND, moved, group, within_node=within)

    def _mesh_of(self, op: CommOp) -> tuple[MeshOp, tuple]:
        """op.mesh_op() and what of it a cost depends on (its axes and their sizes, in
        order), remembered per outermost op and mesh name: a symbol lookup walks the
        op's ancestors twice, and a step has thousands of collectives."""
        top = op
        while (parent := top.parent_op()) is not None:
            top = parent
        key = (id(top), op.mesh.root_reference.data)
        hit = self._meshes.get(key)
        if hit is None or hit[0].parent_op() is not top:  # a new module, or its mesh replaced
            if len(self._meshes) > 64:  # the cached meshes keep their modules alive
                self._meshes.clear()
            mesh = op.mesh_op()
            hit = self._meshes[key] = (mesh, tuple(mesh.axis_sizes.items()))
        return hit

    def _reshard_micros(self, op: ReshardOp, sizes: Mapping[str, int], bindings: Mapping[str, int]) -> float:
        """An unmatched reshard costs the collectives stg-match-collectives would
        choose for it (passes/collectives/matcher.py), one after the other."""
        try:
            steps = match_reshard(op.input.type, op.result.type, sizes, bindings)
        except MatchError as error:
            raise CostError(f"cannot cost stg.reshard: {error}") from None
        micros = 0.0
        for step in steps:
            kind = step.op.COLLECTIVE_KIND
            if kind is None:  # a local slice moves nothing
                continue
            moved = self._int(step.input.local_bytes(), bindings, op, "bytes")
            group = math.prod(sizes[a] for a in step.axes)
            within = _within_node(sizes, step.axes, self.hardware.gpus_per_node)
            micros += self.collective_micros(kind, moved, group, within_node=within)
        return micros


def _shape_key(op: Operation) -> tuple:
    """What an op's cost depends on besides the bindings: its name, properties, and
    operand and result types (all hashable attributes)."""
    return (
        op.name,
        tuple(op.properties.items()),
        tuple(v.type for v in op.operands),
        tuple(r.type for r in op.results),
    )


def _link_micros(link: Link, bytes: float) -> float:
    return link.latency_us + bytes / link.effective_bandwidth * 1e6


def _within_node(sizes: Mapping[str, int], axes: tuple[str, ...], gpus_per_node: int) -> bool:
    """Whether every group of ranks that differ only along `axes` lies in one node:
    ranks are row-major over the mesh axes (mesh.py), so a group sits inside the
    aligned block spanned by its outermost axis; the block must divide the node."""
    if not axes:
        return True
    names = list(sizes)
    outer = min(names.index(a) for a in axes)
    block = math.prod(sizes[a] for a in names[outer:])
    return block <= gpus_per_node and gpus_per_node % block == 0


__all__ = ["CostError", "CostModel", "OpCost", "element_dtype", "op_dtype"]
