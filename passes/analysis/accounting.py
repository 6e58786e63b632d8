"""Per-rank accounting of a training step: parameters, FLOPs by category, peak memory.

`account(module, bindings)` evaluates a training-step module (docs/training-ir.md)
with integer bindings and reports, per rank class, what one rank of that class holds
and does in one iteration. Today a program is one rank's view, so there is one rank
class holding every rank of the mesh; a sharded program whose ranks differ will
list one RankClass per group of identical ranks.

Bindings: the module's `stg.config` (the model's dims), then the mesh axis sizes that
`stg.mesh` fixes, then the `bindings` given (B, S, mesh axes, ...), later ones winning.

FLOPs per iteration by category (stage.md §V-C's GeMM / Attention / ElementWise /
Other), each op's CostInterface.flops() times the counts of the loops around it (a
layer stack `stg.repeat L`, a micro-batch loop `stg.microbatch M`). Each op class
declares its category (`FLOP_CATEGORY`, dialects/stg/cost.py): stg.einsum is gemm,
stg.attention attention, arithmetic that is neither (elementwise, norm, softmax,
reduce, cross-entropy, SSM scan, the optimizer updates) elementwise, and data movement
and what stg does not model other (communication and memory ops cost 0 FLOPs).

A ``stg.vjp`` is the backward of the ops in its body: each body op's
``backward_flops()`` goes to that op's category (the vjp of an attention is
attention, of a norm elementwise, of an embedding other); the body is not counted
as forward work. FLOPs are also split by phase (forward, backward, recompute,
optimizer; "" outside any phase).

Memory: see memory.py for the lifetime model and the timeline. Communication by
collective type: comm.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from math import prod

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr

from stagec.dialects.stg.config import config_bindings
from stagec.dialects.stg.cost import FLOP_CATEGORIES, CostInterface, flop_category
from stagec.dialects.stg.names import FORWARD_FUNCTION, TRAIN_STEP_FUNCTION, PhaseKind
from stagec.dialects.stg.mesh import MeshOp
from stagec.dialects.stg.state import InputOp, ParamOp
from stagec.dialects.stg.structure import LoopOp, PhaseOp
from stagec.dialects.stg.training import VjpOp
from stagec.dialects.symbolic import SymbolicError
from stagec.passes.analysis.calls import inline_calls, ranks_at, stage_programs
from stagec.passes.analysis.comm import CommVolume, count_comm
from stagec.passes.analysis.memory import (
    AccountingError,
    Evaluator,
    MemoryReport,
    analyze_memory,
    repeat_multiplicity,
    stack_slice,
)

PHASES = (*(kind.value for kind in PhaseKind), "")  # "": outside any phase


@dataclass(frozen=True)
class FlopCounts:
    """FLOPs of one iteration on one rank, by category."""

    gemm: int = 0
    attention: int = 0
    elementwise: int = 0
    other: int = 0

    @property
    def total(self) -> int:
        return self.gemm + self.attention + self.elementwise + self.other

    def as_dict(self) -> dict[str, int]:
        return {c: getattr(self, c) for c in FLOP_CATEGORIES} | {"total": self.total}

    def __add__(self, other: FlopCounts) -> FlopCounts:
        return FlopCounts(*(getattr(self, c) + getattr(other, c) for c in FLOP_CATEGORIES))


def _exact(value: Fraction) -> int:
    """FLOP sums are integers; a fractional op cost (e.g. a causal half of an odd
    count) rounds to the nearest FLOP."""
    return value.numerator // value.denominator if value.denominator == 1 else round(value)


def count_flops(function: func.FuncOp, ev: Evaluator) -> dict[str, FlopCounts]:
    """FLOPs by phase and category, loop bodies times their counts."""
    sums: dict[str, dict[str, Fraction]] = {p: {c: Fraction(0) for c in FLOP_CATEGORIES} for p in PHASES}

    def cost(expr, what) -> Fraction:
        try:
            return expr.evaluate_fraction(ev.env)
        except SymbolicError as error:
            raise AccountingError(f"cannot evaluate the FLOPs of {what} ({expr}): {error}") from None

    def walk(block, times: int, phase: str) -> None:
        for op in block.ops:
            if isinstance(op, VjpOp):
                for inner in op.forward_ops:
                    if isinstance(inner, CostInterface):
                        sums[phase][flop_category(inner)] += times * cost(inner.backward_flops(), f"the vjp of {inner.name}")
                continue
            if isinstance(op, CostInterface):
                sums[phase][flop_category(op)] += times * cost(op.flops(), op.name)
            inner_times = times * ev.int(op.count_expr, f"the count of {op.name}") if isinstance(op, LoopOp) else times
            inner_phase = str(op.kind.data) if isinstance(op, PhaseOp) else phase
            for region in op.regions:
                for b in region.blocks:
                    walk(b, inner_times, inner_phase)

    walk(function.body.block, 1, "")
    return {p: FlopCounts(*(_exact(sums[p][c]) for c in FLOP_CATEGORIES)) for p in PHASES}


# -- bindings ------------------------------------------------------------------------------


def module_bindings(module: ModuleOp, bindings: Mapping[str, int] | None = None) -> dict[str, int]:
    """The module's `stg.config`, the mesh sizes it fixes, then `bindings`."""
    env = config_bindings(module)
    given = dict(bindings or {})
    env.update(given)
    for mesh in mesh_ops(module):
        for axis, size in mesh.axis_sizes.items():
            if axis not in given and not (size.symbols - env.keys()):
                try:
                    env[axis] = size.evaluate(env)
                except SymbolicError as error:
                    raise AccountingError(f"mesh axis '{axis}' = {size}: {error}") from None
    return env


def mesh_ops(module: ModuleOp) -> list[MeshOp]:
    """The module's meshes: declared among its top-level ops, where the collectives'
    symbol lookup (mesh.lookup_mesh) finds them - no walk of the whole program."""
    return [op for op in module.ops if isinstance(op, MeshOp)]


def world_ranks(module: ModuleOp, ev: Evaluator) -> tuple[int, ...]:
    """Every rank of the (first) mesh; a program without a mesh runs on rank 0."""
    meshes = mesh_ops(module)
    if not meshes:
        return (0,)
    sizes = [ev.int(s, f"the size of mesh axis '{a}'") for a, s in meshes[0].axis_sizes.items()]
    return tuple(range(prod(sizes)))


def find_function(module: ModuleOp, name: str | None = None) -> func.FuncOp:
    """`name`, else @train_step, else @forward, else the module's only function."""
    funcs = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    if name is not None:
        if name not in funcs:
            raise AccountingError(f"no function @{name} in the module (it has {', '.join(sorted(funcs)) or 'none'})")
        return funcs[name]
    for preferred in (TRAIN_STEP_FUNCTION, FORWARD_FUNCTION):
        if preferred in funcs:
            return funcs[preferred]
    if len(funcs) == 1:
        return next(iter(funcs.values()))
    raise AccountingError(
        f"the module has no @train_step or @forward; name the function to account ({', '.join(sorted(funcs))})"
    )


# -- the result ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RankClass:
    """What each rank of one class holds and does in one iteration."""

    ranks: tuple[int, ...]
    params: int  # parameters this rank holds (its local shards)
    flops_by_phase: dict[str, FlopCounts]
    memory: MemoryReport = field(compare=False)
    comm: CommVolume = field(default_factory=CommVolume, compare=False)

    @property
    def flops(self) -> FlopCounts:
        total = FlopCounts()
        for counts in self.flops_by_phase.values():
            total = total + counts
        return total

    @property
    def peak_memory_bytes(self) -> int:
        return self.memory.peak_bytes


@dataclass(frozen=True)
class Accounting:
    model: str | None
    function: str
    bindings: dict[str, int]
    params: int  # global parameter count
    tokens: int | None  # tokens per iteration (the numel of "input_ids"), if known
    rank_classes: tuple[RankClass, ...]

    def without_phase(self, phase: str) -> Accounting:
        """The same iteration with `phase`'s FLOPs left out (memory unchanged): what
        `--no-optimizer` reports, as the traces and the simulator leave the optimizer
        step's compute out while its states stay in memory."""
        classes = tuple(replace(rc, flops_by_phase={p: c for p, c in rc.flops_by_phase.items() if p != phase})
                        for rc in self.rank_classes)
        return replace(self, rank_classes=classes)

    def to_json(self) -> dict:
        classes = []
        for rc in self.rank_classes:
            flops = rc.flops.as_dict()
            mem = rc.memory
            classes.append(
                {
                    "ranks": list(rc.ranks),
                    "params": rc.params,
                    "flops": flops,
                    "flops_per_token": flops["total"] / self.tokens if self.tokens else None,
                    "flops_by_phase": {p or "none": c.as_dict() for p, c in rc.flops_by_phase.items() if c.total},
                    "communication": rc.comm.as_dict(),
                    # issued calls by kind: a coalesced group is one (comm.py)
                    "communication_calls": rc.comm.calls_dict(),
                    "peak_memory_bytes": mem.peak_bytes,
                    "memory_breakdown_bytes": dict(mem.breakdown),
                    "persistent_bytes": dict(mem.persistent),
                    "peak": {
                        "position": mem.peak_position,
                        "op": mem.peak_op,
                        "phase": mem.peak_phase,
                        "location": mem.peak_location,
                    },
                }
            )
        return {
            "model": self.model,
            "function": self.function,
            "bindings": dict(self.bindings),
            "params": self.params,
            "tokens_per_iteration": self.tokens,
            "rank_classes": classes,
        }


def parameter_counts(function: func.FuncOp, ev: Evaluator) -> tuple[int, int]:
    """(global, local) parameter counts: each distinct parameter name once, times
    its repeat multiplicity."""
    sizes = parameter_sizes(function, ev)
    return sum(g for g, _ in sizes.values()), sum(loc for _, loc in sizes.values())


def parameter_sizes(function: func.FuncOp, ev: Evaluator) -> dict[str, tuple[int, int]]:
    """(global, local) elements of each parameter name the function reads. A slice of
    a layer stack (a pipeline stage's `stg.repeat L/2 offset k of L`) holds its slice
    locally but names the whole stack's L layers globally."""
    seen: dict[str, dict[tuple[str, ...], tuple[int, int]]] = {}
    for op in function.walk():
        if isinstance(op, ParamOp):
            ty = op.result.type
            name = op.tensor_name.data
            g = repeat_multiplicity(op, ev, whole_stacks=True) * ev.int(ty.global_numel(), f"the size of \"{name}\"")
            loc = repeat_multiplicity(op, ev) * ev.int(ty.local_numel(), f"the local size of \"{name}\"")
            slices = seen.setdefault(name, {})
            where = stack_slice(op)
            slices[where] = max(slices.get(where, (0, 0)), (g, loc))
    # an interleaved rank holds several slices of a stack: their layers add up locally
    # (a mention outside every slice covers what the rank holds: memory._held)
    return {
        name: (max(g for g, _ in slices.values()),
               max(slices.get((), (0, 0))[1], sum(loc for where, (_, loc) in slices.items() if where)))
        for name, slices in seen.items()
    }


def _tokens(function: func.FuncOp, ev: Evaluator) -> int | None:
    for op in function.walk():
        if isinstance(op, InputOp) and op.tensor_name.data == "input_ids":
            return repeat_multiplicity(op, ev) * ev.int(op.result.type.global_numel(), "the size of input_ids")
    return None


def account(module: ModuleOp, bindings: Mapping[str, int] | None = None, *, function: str | None = None) -> Accounting:
    """Parameters, FLOPs by category and phase, and peak memory per rank class.

    A pipelined module (stg-pipeline) has one rank class per stage: its
    `stg.stage` function, calls inlined (calls.py), is the program of the ranks at
    that stage's coordinate. Otherwise `function` (default: find_function) is the
    program of every rank."""
    env = module_bindings(module, bindings)
    ev = Evaluator(env)
    stages = stage_programs(module) if function is None else []
    if stages:
        mesh = next(iter(mesh_ops(module)), None)
        programs = [(p.function, ranks_at(mesh, p.coordinates, ev)) for p in stages]
    else:
        fn = find_function(module, function)
        programs = [(fn, world_ranks(module, ev))]
    classes, global_sizes, tokens = [], {}, None
    for fn, ranks in programs:
        flat = inline_calls(fn)
        sizes = parameter_sizes(flat, ev)
        for name, (g, _) in sizes.items():  # a tied weight lives on two stages
            global_sizes[name] = max(global_sizes.get(name, 0), g)
        classes.append(
            RankClass(
                ranks,
                sum(loc for _, loc in sizes.values()),
                count_flops(flat, ev),
                analyze_memory(flat, ev),
                count_comm(fn, ev),
            )
        )
        if tokens is None:
            tokens = _tokens(flat, ev)
    model = module.attributes.get("stg.model")
    return Accounting(
        model.data if isinstance(model, StringAttr) else None,
        ", ".join(fn.sym_name.data for fn, _ in programs),
        env,
        sum(global_sizes.values()),
        tokens,
        tuple(classes),
    )


__all__ = [
    "Accounting",
    "AccountingError",
    "FlopCounts",
    "RankClass",
    "account",
    "count_flops",
    "module_bindings",
    "parameter_counts",
    "parameter_sizes",
]
