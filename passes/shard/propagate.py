"""Layout propagation through a whole training program (stage.md §IV-D1, Fig. 5).

The program is walked once in order. Parameters and inputs take the strategy's
layouts; every other op takes the layout its operands' layouts give it (solver.py),
and an operand whose producer's layout differs from what the op needs gets a
`stg.reshard` in front of the op - stg-match-collectives turns those into
collectives. Reshards are shared within a block (one all-gather of a weight for the
q, k and v projections) but not across blocks, so the backward phase gathers a
sharded weight again, as FSDP and Megatron's sequence parallelism do.

Fixed points:
- a loop carry takes the strategy's layout for its type (with sp, the residual
  stream is sequence-split) and every iteration's yield is resharded to it;
- with ZeRO (stg-shard's zero=1/2) the optimizer states (and at 2 the gradient
  buffers) are further sharded over the data-parallel axes; the update runs on the
  shard;
- a gradient state takes its parameter's storage layout, plus the partial-sum axes
  its accumulated value arrives with where the storage is whole over them (data
  parallel gradients are summed once per step, by the optimizer's read, not per
  micro-batch; FSDP's sharded storage reduce-scatters every micro-batch). That is
  known only once the value is seen, so the walk restarts when a state's layout
  grows.
"""

from __future__ import annotations

from collections.abc import Mapping

from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.rewriter import Rewriter

from stagec.dialects.stg.attributes import DistributedTensorType, TensorType, element_bytes
from stagec.dialects.stg.comm import CommOp, ReshardOp
from stagec.dialects.stg.compute import EinsumOp, ElementwiseKind, ElementwiseOp
from stagec.dialects.stg.mesh import MeshOp
from stagec.dialects.stg.model_ops import OpaqueOp
from stagec.dialects.stg.sharding import Linearity, ShardingInterface, Signature
from stagec.dialects.stg.names import GRAD
from stagec.dialects.stg.shape_ops import ConcatOp, FillOp, ReshapeOp, SplitOp, TransposeOp, reshape_splits
from stagec.dialects.stg.state import AssignOp, InputOp, OptimizerStateOp, ParamOp
from stagec.dialects.stg.structure import LoopOp, PhaseOp, YieldOp, stacked, terminator, unstacked
from stagec.dialects.stg.training import VjpOp, _OptimizerOp
from stagec.passes.diagnostics import PassError
from stagec.passes.shard.solver import Solver, Unshardable, Weigher
from stagec.passes.shard.strategy import IndivisibleStorage, Strategy

StateKey = tuple[str, str | None]


def retype(value: SSAValue, ty: Attribute) -> SSAValue:
    """`value` as type `ty`: a new SSA value in its place, which its uses now use (the
    old one is dead, so a caller keeps the returned value)."""
    if value.type == ty:
        return value
    return Rewriter.replace_value_with_new_type(value, ty)


class Propagation:
    """One walk over a module; `grown` says whether a gradient state's layout grew."""

    def __init__(self, strategy: Strategy, mesh: str, known: Mapping[str, int], states: dict[StateKey, DistributedTensorType],
                 solver: Solver | None = None):
        self.strategy = strategy
        self.mesh = mesh
        self.known = known
        self.states = states
        self.grown = False
        self.weigh = Weigher(known, strategy.axes)
        # shared by the rounds of one stg-shard run (same strategy, same bindings)
        self.solve = solver or Solver(strategy, self.weigh)
        self._reshards: dict[tuple[int, object, DistributedTensorType], SSAValue] = {}
        self._compute: dict[SSAValue, DistributedTensorType] = {}

    # -- layouts the strategy gives -------------------------------------------------
    def param_layouts(self, name: str, ty: DistributedTensorType) -> tuple[DistributedTensorType, DistributedTensorType]:
        """(compute layout, storage layout) of a parameter."""
        compute = self.strategy.overrides.get(name) or self.strategy.desired(ty, sp=False)
        return compute, self.strategy.storage(compute, self.known, name)

    def state_layout(self, key: StateKey, ty: DistributedTensorType, param_type: DistributedTensorType | None) -> DistributedTensorType:
        """A state's layout, fixed at its first read or write: a parameter's storage; a
        per-parameter state shaped like it, the same dims in its own element type;
        anything else (a step count) by the rules."""
        if key not in self.states:
            if key[1] is None:  # the parameter itself
                self.states[key] = self.param_layouts(key[0], ty)[1]
            elif param_type is not None and ty.shape == param_type.shape:
                storage = self.param_layouts(key[1], param_type)[1]
                if self.strategy.zero >= (2 if key[0] == GRAD else 1):
                    storage = self.strategy.zero_storage(storage, self.known, key[1])
                self.states[key] = type(ty)(storage.dims.data, ty.element_type)
            else:
                self.states[key] = self.strategy.desired(ty, sp=False)
        return self.states[key]

    # -- the walk ---------------------------------------------------------------------
    def run(self, module: ModuleOp) -> None:
        self._param_types = _param_types(module)
        for op in list(module.ops):
            if isinstance(op, func.FuncOp):
                self.block(op.body.block)
                ret = op.body.block.last_op
                op.function_type = FunctionType.from_lists(
                    [a.type for a in op.body.block.args], [v.type for v in ret.operands]
                )

    def block(self, block: Block) -> None:
        for op in list(block.ops):
            self.op(op)

    def op(self, op: Operation) -> None:
        try:
            self._op(op)
        except IndivisibleStorage as e:
            raise PassError(str(e), op) from None

    def _op(self, op: Operation) -> None:
        match op:
            case ParamOp():
                compute, storage = self.param_layouts(op.tensor_name.data, op.result.type)
                retype(op.result, storage)
                self._compute[op.result] = compute
            case InputOp():
                name = op.tensor_name.data
                retype(op.result, self.strategy.overrides.get(name) or self.strategy.desired(op.result.type, sp=False))
            case OptimizerStateOp():
                key = (op.tensor_name.data, op.param.data)
                retype(op.result, self.state_layout(key, op.result.type, self._param_types.get(op.param.data)))
            case FillOp():
                retype(op.result, self.strategy.desired(op.result.type, sp=False))
            case AssignOp():
                self.assign(op)
            case LoopOp():
                self.loop(op)
            case PhaseOp():
                self.block(op.body.block)
                for result, value in zip(op.results, terminator(op.body).values):
                    retype(result, value.type)
            case VjpOp():
                self.vjp(op)
            case _OptimizerOp():
                self.optimizer(op)
            case ReshapeOp():
                self.reshape(op)
            case TransposeOp():
                src = op.input.type
                perm = [p.value.data for p in op.perm.data]
                retype(op.result, op.result.type.with_layout([src.splits[p] for p in perm], src.partial_axes))
            case SplitOp():
                d = op.dim.value.data
                src = self.coerce(op, op.input, _unsplit(op.input.type, d))
                for out in op.outputs:
                    retype(out, out.type.with_layout(src.type.splits, src.type.partial_axes))
            case ConcatOp():
                self.concat(op)
            case OpaqueOp():
                for operand in op.operands:
                    self.coerce(op, operand, operand.type.with_layout([()] * operand.type.rank, ()))
            case func.ReturnOp():
                for i, operand in enumerate(list(op.operands)):
                    want = self.strategy.overrides.get(f"return.{i}") or self.strategy.desired(operand.type, sp=False)
                    self.coerce(op, operand, want)
            case YieldOp() | MeshOp():
                pass
            case CommOp():
                raise PassError("stg-shard expects an unsharded program, but it already communicates", op)
            case ShardingInterface():
                self.solved(op, op.sharding_signature(), list(op.operands), list(op.results))
            case _:
                raise PassError(f"stg-shard has no distribution rule for '{op.name}'", op)

    # -- op kinds ---------------------------------------------------------------------
    def solved(self, op: Operation, sig: Signature, operands: list[SSAValue], results: list[SSAValue]) -> None:
        if sig.linearity == Linearity.ADDITIVE:
            self._grow_gradient_buffers(operands)
        types = [self._compute.get(v, v.type) for v in operands]
        anchored = [v in self._compute for v in operands]
        try:
            solution = self.solve(sig, types, [r.type for r in results], anchored)
        except Unshardable as e:
            raise PassError(f"stg-shard cannot distribute this op: {e}", op) from None
        if self._reduce_eagerly(op, operands, types, solution.operands):
            self.solved(op, sig, operands, results)
            return
        for value, target in zip(operands, solution.operands):
            self.coerce(op, value, target)
        for result, ty in zip(results, solution.results):
            retype(result, ty)

    def _grow_gradient_buffers(self, operands: list[SSAValue]) -> None:
        """A gradient buffer that a partial sum is added to keeps that partial sum over
        the axes its storage does not split: it is reduced once per step, where the
        optimizer reads it, not every micro-batch."""
        partial = frozenset().union(*(v.type.partial_axes for v in operands))
        for value in operands:
            owner = value.owner
            if isinstance(owner, OptimizerStateOp) and owner.tensor_name.data == GRAD:
                key = (owner.tensor_name.data, owner.param.data)
                layout = self.states[key]
                extra = partial - layout.partial_axes - {a for s in layout.splits for a in s}
                if extra:
                    self.states[key] = layout.with_layout(None, layout.partial_axes | extra)
                    self.grown = True

    def _reduce_eagerly(self, op, operands, types, targets) -> bool:
        """A row-parallel projection's partial sum that this op reduces is reduced into
        the strategy's layout where that uses the summed axis - with sp, a
        reduce-scatter into the sequence-parallel region before the bias, as Megatron's
        RowParallelLinear does. True if an operand was so resharded."""
        moved = False
        for i, (value, current, target) in enumerate(zip(operands, types, targets)):
            dropped = current.partial_axes - target.partial_axes
            if not dropped or not isinstance(value.owner, EinsumOp):
                continue
            desired = self.strategy.desired(current, sp=True)
            if dropped & {a for s in desired.splits for a in s}:
                operands[i] = self.coerce(op, value, desired)
                moved = True
        return moved

    def assign(self, op: AssignOp) -> None:
        key = op.key
        value = op.value
        target = self.state_layout(key, value.type, self._param_types.get(key[1] or ""))
        if key[0] == GRAD and key[1] is not None:
            extra = value.type.partial_axes - target.partial_axes - {a for s in target.splits for a in s}
            if extra and value.type.splits == target.splits:
                self.states[key] = target.with_layout(None, target.partial_axes | extra)
                self.grown = True
                target = self.states[key]
        self.coerce(op, value, target.with_layout(None, target.partial_axes))

    def loop(self, op: LoopOp) -> None:
        block = op.body.block
        carried = list(op.carried)
        layouts = [self.strategy.desired(v.type, sp=True) for v in carried]
        for value, layout, arg in zip(carried, layouts, block.args):
            self.coerce(op, value, layout)
            retype(arg, layout)
        for value, arg in zip(op.scanned, block.args[len(carried):]):
            retype(arg, unstacked(value.type))
        self.block(block)
        yielded = terminator(op.body)
        for value, layout in zip(list(yielded.values[: len(carried)]), layouts):
            self.coerce(yielded, value, layout)
        for i, result in enumerate(op.results):
            if i < len(carried):
                retype(result, layouts[i])
            else:
                retype(result, stacked(yielded.values[i].type, op.count_expr))

    def vjp(self, op: VjpOp) -> None:
        (forward,) = op.forward_ops
        if not isinstance(forward, ShardingInterface):
            raise PassError(f"stg-shard has no distribution rule for '{forward.name}' (in this stg.vjp)", op)
        sig = forward.sharding_signature()
        primals = list(op.primals)
        types = [self._compute.get(v, v.type) for v in primals]
        anchored = [v in self._compute for v in primals]
        try:
            solution = self.solve(sig, types, [r.type for r in forward.results], anchored)
        except Unshardable as e:
            raise PassError(f"stg-shard cannot distribute this op: {e}", op) from None
        for value, target, arg in zip(primals, solution.operands, op.body.block.args):
            self.coerce(op, value, target)
            retype(arg, target)
        for result, ty in zip(forward.results, solution.results):
            retype(result, ty)
        for cotangent, out in zip(list(op.cotangents), solution.results):
            self.coerce(op, cotangent, out.with_layout(None, ()))
        # a gradient sums over every axis that splits the op but not its primal, and
        # over the partial-sum axes of the other factors of a product
        split = {a for t in (*solution.operands, *solution.results) for s in t.splits for a in s}
        for grad, i in zip(op.grads, op.wrt_indices):
            target = solution.operands[i]
            others = {a for j, t in enumerate(solution.operands) if j != i for a in t.partial_axes}
            own = {a for s in target.splits for a in s} | target.partial_axes
            retype(grad, target.with_layout(None, (split | others) - own))

    def optimizer(self, op: _OptimizerOp) -> None:
        """The update runs in the layout of what it updates (the master weights' or the
        parameter's); with ZeRO on the rank's shard of it - the gradient is
        reduce-scattered into it and the parameter, assigned, all-gathered."""
        param = op.operands[0]
        layout = param.type.with_layout(None, ())
        if self.strategy.zero and isinstance(param.owner, ParamOp):
            layout = self.strategy.zero_storage(layout, self.known, param.owner.tensor_name.data)
            self.coerce(op, param, layout)
        for operand in op.operands[1:]:
            ty = operand.type
            want = layout if ty.shape == layout.shape else ty.with_layout(None, ())
            self.coerce(op, operand, type(ty)(want.dims.data, ty.element_type))
        for result in op.results:
            if result.type.shape == layout.shape:
                retype(result, type(result.type)(layout.dims.data, result.type.element_type))

    def reshape(self, op: ReshapeOp) -> None:
        src = op.input.type
        try:
            splits = reshape_splits(src, op.result.type.shape)
        except ValueError:
            src = self.coerce(op, op.input, src.with_layout([()] * src.rank, src.partial_axes)).type
            splits = [()] * op.result.type.rank
        retype(op.result, op.result.type.with_layout(splits, src.partial_axes))

    def concat(self, op: ConcatOp) -> None:
        d = op.dim.value.data
        rank = op.result.type.rank
        letters = "abcdefghijklmnopqrstuvwxyz"[:rank]
        subs = [letters[:d] + chr(ord("A") + i) + letters[d + 1 :] for i in range(len(op.inputs))]
        out = letters[:d] + "Z" + letters[d + 1 :]
        sig = Signature(subs, [out], Linearity.ADDITIVE, unsplit={*(s[d] for s in subs), "Z"})
        self.solved(op, sig, list(op.inputs), [op.result])

    # -- reshards ---------------------------------------------------------------------
    def coerce(self, user: Operation, value: SSAValue, target: DistributedTensorType) -> SSAValue:
        """`value` in layout `target` for `user`: itself, a zero fill retyped, or a
        stg.reshard placed before `user` (shared with earlier users in the block)."""
        target = type(value.type)(target.dims.data, value.type.element_type, target.partial_axes)
        if value.type == target:
            return value
        owner = value.owner
        if isinstance(owner, FillOp) and (not target.partial_axes or owner.value.value.data == 0.0):
            # a constant is made in any layout where it is used, with no communication
            if sum(1 for _ in value.uses) == 1:
                return retype(value, target)
            fill = FillOp(owner.value.value.data, TensorType(target.dims.data, target.element_type, target.partial_axes))
            user.parent_block().insert_op_before(fill, user)
            for use in list(value.uses):
                if use.operation is user:
                    user.operands[use.index] = fill.result
            return fill.result
        block = user.parent_block()
        # two reads of one parameter in a block are one value until it is assigned
        source = ("param", owner.tensor_name.data) if isinstance(owner, ParamOp) else value
        key = (id(block), source, target)
        reshard = self._reshards.get(key)
        if reshard is not None and isinstance(owner, ParamOp) and _assigned_between(reshard.owner, user, source[1]):
            reshard = None
        if reshard is None:
            new = ReshardOp(value, self.mesh, TensorType(target.dims.data, target.element_type, target.partial_axes))
            block.insert_op_before(new, user)
            reshard = self._reshards[key] = new.result
        for use in list(value.uses):
            if use.operation is user:
                user.operands[use.index] = reshard
        return reshard


def narrow_reshards(module: ModuleOp) -> None:
    """Communicate in the narrower type: a reshard of a widening cast (a bf16 gradient
    cast to its f32 buffer) moves before the cast, as FSDP and Megatron reduce bf16
    gradients and accumulate them in f32."""
    for op in list(module.walk()):
        if not isinstance(op, ReshardOp):
            continue
        cast = op.input.owner
        if not (
            isinstance(cast, ElementwiseOp)
            and cast.kind.data == ElementwiseKind.CAST
            and sum(1 for _ in cast.result.uses) == 1
            and element_bytes(cast.inputs[0].type.element_type) < element_bytes(op.result.type.element_type)
        ):
            continue
        source = cast.inputs[0]
        dst = op.result.type
        moved = ReshardOp(source, op.mesh.root_reference.data, TensorType(dst.dims.data, source.type.element_type, dst.partial_axes))
        widened = ElementwiseOp(ElementwiseKind.CAST, [moved.result], dst)
        block = op.parent_block()
        block.insert_op_before(moved, op)
        block.insert_op_before(widened, op)
        op.result.replace_all_uses_with(widened.result)
        op.detach()
        op.erase()
        cast.detach()
        cast.erase()


def _assigned_between(first: Operation, last: Operation, name: str) -> bool:
    op = first.next_op
    while op is not None and op is not last:
        if any(isinstance(o, AssignOp) and o.key == (name, None) for o in op.walk()):
            return True
        op = op.next_op
    return False


def _unsplit(ty: DistributedTensorType, dim: int) -> DistributedTensorType:
    return ty.with_layout([() if i == dim else s for i, s in enumerate(ty.splits)])


def _param_types(module: ModuleOp) -> dict[str, DistributedTensorType]:
    """Every parameter's (unsharded) type by name, for its states."""
    types: dict[str, DistributedTensorType] = {}
    for op in module.walk():
        if isinstance(op, ParamOp):
            types.setdefault(op.tensor_name.data, op.result.type)
    return types
