"""stg-shard: apply a parallel strategy by tensor-level distribution (stage.md §IV-C/D1).

    stagec-opt step.mlir --pass-pipeline='builtin.module(stg-shard{dp=2 tp=4 sp=true})'

Declares the mesh (`stg.mesh @mesh [dp = 2, tp = 4]`, tp innermost), gives every
parameter and input the strategy's layout (passes/shard/strategy.py), and propagates
layouts through every op of the program - forward, backward and optimizer step alike
(passes/shard/propagate.py). Where a consumer needs another layout than its producer
gives, a `stg.reshard` says so; stg-match-collectives lowers it to collectives.

Strategies, any combination of them:
- dp: data parallel (batch split; gradients partial over dp, all-reduced once per step);
- fsdp: ZeRO-3 (batch split; parameters, gradients and optimizer states sharded along
  their first divisible dim, padded where none divides (docs/sharding.md); gathered before use in forward and again in backward,
  gradients reduce-scattered every micro-batch);
- tp: Megatron tensor parallel (column-parallel projections split heads / ffn / Mamba's
  inner dim,
  row-parallel ones contract them into a partial sum; vocab-parallel embedding and
  head); with sp=true also Megatron sequence parallel: the residual stream, norms and
  dropouts hold a sequence shard, so all-gather / reduce-scatter replace all-reduce.
  A tp that is a multiple m of the model's key/value heads KV is declared as two
  axes, `tp_kv = KV` and `tp_q = m`: each key/value head (its k/v projection rows,
  gradients and activations) is held whole by the m ranks whose query heads use it,
  and its gradient is summed over them once per step;
- cp: context parallel (sequence split; keys and values gathered for attention);
- ep: expert parallel (experts split; tokens all-to-all into and out of the experts;
  outside the experts ep splits the batch like dp);
- zero=1: ZeRO-1 over the data-parallel axes dp, ep (outside the experts) and cp, as
  Megatron's distributed optimizer: each rank keeps the optimizer states (fp32 master
  weights, Adam moments) of a 1/n shard of every parameter it holds whole, the step
  reduce-scatters the gradient into that shard, updates it and all-gathers the new
  parameter; zero=2 also keeps the gradient buffer sharded (reduce-scattered every
  micro-batch).
An axis size is an integer or a symbol (`tp=tp` keeps it symbolic until
stg-instantiate). A module that declares its own stg.mesh keeps it, and
`override="name=[layout];..."` gives named parameters and inputs - and a function's
results, as `return.0` - a layout outright, for layer-wise or hypothetical strategies
(stage.md Tables XI and XII):

    stg-shard{override="x=[B/p, D1];w2=[D2/p, D3]"}
    stg-shard{dp=2 tp=2 override="x=[B/dp, D1/tp];w=[D1/tp, D2];return.0=[B/dp, D2/tp]"}

Requires: verified stg IR that is not distributed yet (no type names a mesh axis, no
communication op), at most one stg.mesh, and a distribution rule for every op
(passes/shard/signatures.py); the mesh axes come either from the options or from a
declared stg.mesh, not both.
Guarantees: with no axis larger than 1 the module is unchanged; otherwise the module
declares one stg.mesh (@mesh unless it had one) and every tensor's type carries its
layout over that mesh (replicated where no axis splits it). Parameters, inputs and optimizer states are stored in the strategy's
(or the override's) layout, each op computes in a layout its rule allows, and where a
consumer needs another layout than its producer gives there is a stg.reshard and no
collective yet (stg-match-collectives makes them). The program computes what it
computed unsharded (the reference interpreter checks it), and the result verifies.
Checks, failing with a diagnostic naming the module or op: an axis size that is not a
positive integer or a symbol; sp=true without tp; zero not 0, 1 or 2, or zero without
a data-parallel axis; a tp that neither divides the model's key/value heads nor is a
multiple of them; a size the axes do not divide (or an fsdp / ZeRO degree larger than
a parameter's elements, or dividing no dim of one whose dims are all split already); an override that does not parse, names no tensor or
does not fit it; an already distributed program; an op with no distribution rule or no layout its
rule allows.
Storage that fsdp / ZeRO divide no dim of is padded (docs/sharding.md, "Uneven
shards").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fnmatch import fnmatchcase

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import ParseError, VerifyException

from stagec.dialects.stg.attributes import DistributedTensorType, TensorType
from stagec.dialects.stg.config import config_bindings
from stagec.dialects.stg.mesh import MeshOp
from stagec.dialects.stg.state import InputOp, ParamOp
from stagec.dialects.symbolic import Expr
from stagec.passes.diagnostics import PassError
from stagec.passes.shard.propagate import Propagation, narrow_reshards
from stagec.passes.shard.solver import Solver, Weigher
from stagec.passes.shard.strategy import STANDARD_AXES, TP_FACTORS, ZERO_AXES, Strategy

MESH = "mesh"


@dataclass(frozen=True)
class StgShard(ModulePass):
    """Apply a parallel strategy: stg-shard{dp=2 fsdp=1 tp=4 sp=true cp=1 ep=1}."""

    name = "stg-shard"

    dp: int | str = 1
    """Data-parallel ranks: the batch is split, parameters replicated, gradients summed."""
    fsdp: int | str = 1
    """Fully sharded data-parallel ranks (ZeRO-3): the batch and every parameter split."""
    ep: int | str = 1
    """Expert-parallel ranks: an MoE layer's experts split, tokens exchanged all-to-all."""
    cp: int | str = 1
    """Context-parallel ranks: the sequence split, attention's keys and values gathered."""
    tp: int | str = 1
    """Megatron tensor-parallel ranks: attention heads and the MLP's hidden dimension split."""
    sp: bool = False
    """Megatron sequence parallelism: activations between tensor-parallel layers split along the sequence over tp."""
    zero: int = 0
    """ZeRO stage over the data-parallel axes (dp, ep, cp): 1 shards the optimizer
    states and the update (Megatron's distributed optimizer), 2 the gradients too."""
    override: str = ""
    """`name=[layout];...`: a parameter's or input's layout; names may use * globs."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        mesh = _mesh(op)
        known = config_bindings(op)
        sizes = self._sizes(op, mesh, known)
        if self.sp and not {"tp", *TP_FACTORS} & set(sizes):
            raise PassError("sp=true splits the sequence over tp; give tp > 1", op)
        _check_divisible(op, sizes, known)
        if self.zero not in (0, 1, 2):
            raise PassError(f"zero = {self.zero}: give 1 (optimizer states) or 2 (and gradients); fsdp is ZeRO-3", op)
        if self.zero and not set(ZERO_AXES) & set(sizes):
            raise PassError(
                f"zero={self.zero} shards optimizer states over the data-parallel axes {', '.join(ZERO_AXES)}; "
                "give one of them (fsdp alone already shards them)",
                op,
            )
        for value in op.walk():
            for ty in (*(r.type for r in value.results), *(a.type for r in value.regions for b in r.blocks for a in b.args)):
                if isinstance(ty, DistributedTensorType) and ty.mesh_axes:
                    raise PassError(
                        f"stg-shard expects an unsharded program, but {ty.layout_str()} is already distributed",
                        value,
                    )
        strategy = Strategy(sizes, self.sp, _overrides(ctx, op, self.override, sizes), self.zero)
        if not sizes:
            return
        if mesh is None:
            mesh = MeshOp(MESH, list(sizes.items()))
            op.body.block.insert_op_before(mesh, op.body.block.first_op)
        states: dict = {}
        solver = Solver(strategy, Weigher(known, strategy.axes))
        for _ in range(4):
            work = op.clone()  # `op` stays as it was until a round settles
            propagation = Propagation(strategy, mesh.sym_name.data, known, states, solver)
            propagation.run(work)
            if not propagation.grown:
                break
        else:  # pragma: no cover - layouts only grow, and only a few times
            raise PassError("gradient layouts did not settle", op)
        for child in list(op.body.block.ops):
            child.detach()
            child.erase()
        for child in list(work.body.block.ops):
            child.detach()
            op.body.block.add_op(child)
        narrow_reshards(op)
        try:
            op.verify()
        except VerifyException as e:  # a bug of stg-shard: say where
            raise PassError(f"stg-shard produced invalid IR: {e}", op) from None

    def _sizes(self, module: ModuleOp, mesh: MeshOp | None, known: dict[str, int]) -> dict[str, Expr]:
        given = {}
        for axis in STANDARD_AXES:
            value = getattr(self, axis)
            size = Expr.sym(axis) if value == axis else Expr.of(value)
            if size.is_constant and (size.as_int() or 0) < 1:
                raise PassError(f"{axis} = {value} must be a positive integer or a symbol", module)
            if size != Expr.const(1):
                given[axis] = size
        if mesh is None:
            return _factor_tp(given, known, module)
        declared = dict(mesh.axis_sizes)
        if clash := sorted(set(given) & set(declared)):
            raise PassError(
                f"axis '{clash[0]}' is both declared by @{mesh.sym_name.data} and given as an option",
                module,
            )
        if given:
            raise PassError(
                f"the module declares mesh @{mesh.sym_name.data}; add the axes "
                f"{', '.join(given)} to it instead of passing them as options",
                module,
            )
        return declared


def _mesh(module: ModuleOp) -> MeshOp | None:
    meshes = [op for op in module.ops if isinstance(op, MeshOp)]
    if len(meshes) > 1:
        raise PassError("the module declares more than one stg.mesh", meshes[1])
    return meshes[0] if meshes else None


def _factor_tp(sizes: dict[str, Expr], known: dict[str, int], module: ModuleOp) -> dict[str, Expr]:
    """tp = m * KV becomes tp_kv = KV (left out for one key/value head) and tp_q = m,
    in tp's place in the mesh order."""
    tp, kv = sizes.get("tp", Expr.const(1)).as_int(), known.get("KV")
    if tp is None or kv is None or tp <= kv:
        return sizes
    if tp % kv:
        raise PassError(
            f"tp = {tp} neither divides the model's key/value heads KV = {kv} nor is a multiple "
            f"of them (a multiple holds each key/value head on tp/KV ranks): use a divisor of "
            f"{kv} or a multiple of it",
            module,
        )
    factors = dict(zip(TP_FACTORS, (kv, tp // kv)))
    out: dict[str, Expr] = {}
    for axis, size in sizes.items():
        if axis != "tp":
            out[axis] = size
            continue
        for factor, value in factors.items():
            if value > 1:
                out[factor] = Expr.const(value)
    return out


def _check_divisible(module: ModuleOp, sizes: dict[str, Expr], known: dict[str, int]) -> None:
    """The model's own sizes must divide over the axes that will split them."""
    tp = ("tp", *TP_FACTORS)
    rules = [
        (tp, [("N", "attention heads"), ("F", "ffn size"), ("FE", "expert ffn size"), ("DI", "Mamba inner dim"), ("V", "vocabulary")]),
        (("tp", "tp_kv"), [("KV", "key/value heads")]),
        (("ep",), [("E", "experts")]),
    ]
    for axes, dims in rules:
        present = [a for a in axes if a in sizes]
        degrees = [sizes[a].as_int() for a in present]
        if not present or None in degrees:
            continue
        degree = math.prod(degrees)
        if degree == 1:
            continue
        if all(a in tp for a in present):
            name = f"tp = {degree}"  # as the user gave it, not stg-shard's tp_kv x tp_q factors
        else:
            name = " * ".join(f"{a} = {d}" for a, d in zip(present, degrees))
        for symbol, what in dims:
            value = known.get(symbol)
            if value is not None and value % degree:
                hint = " (pad the vocabulary to a multiple of it, as Megatron does)" if symbol == "V" else ""
                raise PassError(f"{name} does not divide the model's {what} {symbol} = {value}{hint}", module)


def _overrides(ctx: Context, module: ModuleOp, text: str, sizes: dict[str, Expr]) -> dict[str, DistributedTensorType]:
    """Parse `name=[layout];...` against the module's parameters and inputs."""
    if not text.strip():
        return {}
    states = {}
    for op in module.walk():
        if isinstance(op, ParamOp | InputOp):
            states.setdefault(op.tensor_name.data, op.result.type)
        elif isinstance(op, func.ReturnOp):
            for i, value in enumerate(op.operands):
                if isinstance(value.type, DistributedTensorType):
                    states.setdefault(f"return.{i}", value.type)
    out: dict[str, DistributedTensorType] = {}
    for entry in filter(None, (e.strip() for e in text.split(";"))):
        name, sep, layout = entry.partition("=")
        if not sep:
            raise PassError(f"override '{entry}' should read name=[layout], e.g. w=[H/tp, F]", module)
        matches = [s for s in states if fnmatchcase(s, name.strip())]
        if not matches:
            raise PassError(f"override '{name.strip()}' names no parameter, input or result (return.N) of the module", module)
        for match in matches:
            ty = states[match]
            try:
                parsed = Parser(ctx, f"!stg.tensor<{layout.strip()}, {ty.element_type}>").parse_type()
            except ParseError as e:
                raise PassError(f"override for '{match}': {layout.strip()} is not a layout ({e.msg})", module) from None
            if not isinstance(parsed, TensorType) or parsed.shape != ty.shape:
                raise PassError(
                    f"override for '{match}': {layout.strip()} does not have its shape {ty.layout_str()}",
                    module,
                )
            if missing := sorted(parsed.mesh_axes - set(sizes)):
                raise PassError(f"override for '{match}' uses axis '{missing[0]}', which the mesh lacks", module)
            out[match] = type(ty)(parsed.dims.data, ty.element_type, parsed.partial_axes)
    return out
