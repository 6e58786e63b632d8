"""The walk of convert-torch-to-stg over one torch function (see the pass's module doc).

`Converter` keeps what the op patterns (patterns.py) read and write: the stg value
each torch tensor became (`View`), the symbolic sizes torch-mlir bound to dynamic
dims, which values are position-only (computed from shapes and buffers alone: rotary
tables, position ids), the model's symbols, and the stg ops built so far.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    NoneAttr,
    StringAttr,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue

from stagec.dialects.stg.names import FORWARD_FUNCTION
from stagec.dialects.stg import config as stg_config
from stagec.dialects import stg
from stagec.dialects.stg import TensorType
from stagec.dialects.symbolic import Expr, product
from stagec.dialects.torch import DYNAMIC_SIZE, ValueTensorType, shape_expressions
from stagec.passes.torch_to_stg.context import (
    ConversionError,
    ModelSymbols,
    Unconvertible,
    View,
    describe,
    element_attr,
    identity,
    layer_of,
)

__all__ = ["Converter", "Skip", "build_module", "dce", "product_of", "set_config"]

# Ops whose tensor results depend on no input, parameter or data: their results (and
# what is computed from them alone) are position-only.
STATIC_SOURCES = {
    "torch.aten.arange", "torch.aten.arange.start", "torch.aten.arange.start_step",
    "torch.vtensor.literal", "torch.aten.zeros", "torch.aten.ones", "torch.aten.empty.memory_format",
    "torch.aten.full", "torch.aten.scalar_tensor", "torch.aten.tensor",
}
# Ops that only assert or bind and produce nothing to convert.
IGNORED = {"torch.bind_symbolic_shape", "torch.aten._assert_tensor_metadata", "torch.symbolic_int",
           "torch.aten._assert_scalar", "torch.aten.sym_constrain_range_for_size"}

# Sample values of B and S used to line up reshaped dims (distinct primes).
SAMPLES = {"B": 1009, "S": 2003}


class Skip(Exception):
    """A pattern cannot convert this op; `root` is the first op on the way that could not."""

    def __init__(self, reason: str, root: Unconvertible | None = None):
        super().__init__(reason)
        self.reason = reason
        self.root = root


def is_tensor(value: SSAValue) -> bool:
    return isinstance(value.type, ValueTensorType)


class Converter:
    def __init__(self, fn: func.FuncOp, symbols: ModelSymbols):
        self.fn = fn
        self.symbols = symbols
        self.block = Block()
        self.input_ops: list[Operation] = []
        self.values: dict[SSAValue, View | list | Unconvertible] = {}
        self.static: set[SSAValue] = set()
        self.bound: dict[SSAValue, tuple[Expr, ...]] = {}
        self.params: dict[SSAValue, SSAValue] = {}
        self.inputs: dict[str, SSAValue] = {}
        self.layer: dict[Operation, tuple[str, int]] = {}
        self.arg_names: dict[SSAValue, tuple[str, str]] = {}
        self.current: Operation | None = None
        self.splits: dict[tuple, list[View]] = {}
        self.slices: dict[str, SSAValue] = {}
        self.fused: dict[SSAValue, SSAValue] = {}  # [T, k*w] reshape -> its [T, k, w] source
        arg_attrs = fn.arg_attrs.data if fn.arg_attrs is not None else [DictionaryAttr({})] * len(fn.args)
        for arg, attrs in zip(fn.args, arg_attrs):
            name = attrs.data.get("torch.name")
            kind = attrs.data.get("torch.kind")
            name = name.data if isinstance(name, StringAttr) else (arg.name_hint or f"arg{arg.index}")
            kind = kind.data if isinstance(kind, StringAttr) else "input"
            self.arg_names[arg] = (name, kind)
            if kind == "buffer":
                self.static.add(arg)

    # -- reading torch IR ----------------------------------------------------------------
    def torch_shape(self, value: SSAValue) -> list[int | None]:
        ty = value.type
        if not isinstance(ty, ValueTensorType) or not hasattr(ty.shape, "data"):
            raise Skip("a tensor of unknown rank")
        return [None if s.data == DYNAMIC_SIZE else s.data for s in ty.shape.data]

    def torch_dims(self, value: SSAValue) -> list[Expr | int]:
        """Sizes in torch order: bound symbolic expressions for dynamic dims, ints for static."""
        shape = self.torch_shape(value)
        bound = self.bound.get(value)
        out: list[Expr | int] = []
        for i, s in enumerate(shape):
            if s is None:
                if bound is None:
                    raise Skip(f"dim {i} is dynamic but torch-mlir bound no symbolic shape to it")
                out.append(bound[i])
            else:
                out.append(s)
        return out

    def element(self, value: SSAValue) -> Attribute:
        dtype = value.type.dtype
        if isinstance(dtype, NoneAttr):
            raise Skip("a tensor of unknown element type")
        return element_attr(dtype)

    def int_of(self, value: SSAValue) -> int | None:
        op = value.owner
        if isinstance(op, Operation) and op.name == "torch.constant.int":
            return op.properties["value"].value.data
        return None

    def float_of(self, value: SSAValue) -> float | None:
        op = value.owner
        if isinstance(op, Operation):
            if op.name == "torch.constant.float":
                return op.properties["value"].value.data
            if op.name == "torch.constant.int":
                return float(op.properties["value"].value.data)
        return None

    def bool_of(self, value: SSAValue) -> bool | None:
        op = value.owner
        if isinstance(op, Operation) and op.name == "torch.constant.bool":
            v = op.properties["value"]
            return bool(v.value.data) if isinstance(v, IntegerAttr) else None
        return None

    def is_none(self, value: SSAValue) -> bool:
        op = value.owner
        return isinstance(op, Operation) and op.name == "torch.constant.none"

    def ints_of(self, value: SSAValue) -> list[int | None]:
        op = value.owner
        if not isinstance(op, Operation) or op.name != "torch.prim.ListConstruct":
            raise Skip("a list that is not built in the function")
        return [self.int_of(v) for v in op.operands]

    def list_items(self, value: SSAValue) -> Sequence[SSAValue]:
        op = value.owner
        if not isinstance(op, Operation) or op.name != "torch.prim.ListConstruct":
            raise Skip("a tensor list that is not built in the function")
        return list(op.operands)

    def producer(self, value: SSAValue) -> Operation | None:
        return value.owner if isinstance(value.owner, Operation) else None

    def users(self, value: SSAValue) -> list[Operation]:
        return [u.operation for u in value.uses if u.operation.name not in IGNORED]

    # -- converted values ----------------------------------------------------------------
    def view(self, value: SSAValue) -> View:
        """The stg form of a torch tensor; Skip if it has none."""
        got = self.values.get(value)
        if isinstance(got, View):
            return got
        if isinstance(got, Unconvertible):
            raise Skip(got.reason, got)
        if value in self.static:
            raise Skip("it needs a position-only tensor (computed from shapes and buffers alone) "
                       "that only the rotary and position-embedding patterns read")
        if isinstance(value, BlockArgument) and value in self.arg_names:
            name, kind = self.arg_names[value]
            if kind == "parameter":
                return identity(self.param(value))
            return identity(self.input(value))
        raise Skip("an operand was not converted")

    def param(self, arg: SSAValue, dims: Sequence[Expr] | None = None) -> SSAValue:
        """The stg.param of a parameter argument, its dims named by the first user (or by
        the default symbol order)."""
        if arg in self.params:
            return self.params[arg]
        name, kind = self.arg_names.get(arg, (None, None))
        if kind != "parameter":
            raise Skip("expected a parameter")
        if dims is None:
            shape = self.torch_shape(arg)
            experts = len(shape) >= 3  # stacked expert weights: [E, ...], no attention sizes
            dims = [self.symbols.resolve(s, ("E",) if i == 0 and experts else (), ("N", "KV", "D") if experts else ())
                    for i, s in enumerate(shape)]
        ty = TensorType(list(dims), self.element(arg))
        op = stg.ParamOp(name, ty)
        op.result.name_hint = _hint(name)
        self.emit(op)
        self.params[arg] = op.result
        return op.result

    def input(self, arg: SSAValue) -> SSAValue:
        name, kind = self.arg_names[arg]
        dims = self.torch_dims(arg)
        if any(isinstance(d, int) for d in dims):
            dims = [self.symbols.resolve(d) if isinstance(d, int) else d for d in dims]
        return self.named_input(name, dims, self.element(arg))

    def named_input(self, name: str, dims: Sequence[Expr | int], element: Attribute) -> SSAValue:
        if name in self.inputs:
            return self.inputs[name]
        op = stg.InputOp(name, TensorType([Expr.of(d) for d in dims], element))
        op.result.name_hint = name.replace(".", "_")
        self.input_ops.append(op)
        self.inputs[name] = op.result
        return op.result

    def emit(self, op: Operation) -> Operation:
        self.block.add_op(op)
        if self.current is not None:
            module = self.current.attributes.get("torch.module")
            if isinstance(module, StringAttr) and (where := layer_of(module.data)):
                self.layer[op] = where
        return op

    def materialize(self, view: View) -> SSAValue:
        """The torch-order stg value of a view (a transpose if it is permuted)."""
        if view.identity:
            return view.value
        ty = view.value.type
        out = TensorType([ty.shape[p] for p in view.perm], ty.element_type)
        return self.emit(stg.TransposeOp(view.value, list(view.perm), out)).result

    def cast(self, value: SSAValue, element: Attribute) -> SSAValue:
        if value.type.element_type == element:
            return value
        out = TensorType(value.type.dims.data, element)
        return self.emit(stg.ElementwiseOp(stg.ElementwiseKind.CAST, [value], out)).result

    def static_dims(self, sizes: Sequence[Expr | int], prefer: Sequence[str] = ()) -> list[Expr]:
        return [self.symbols.resolve(s, prefer) if isinstance(s, int) else s for s in sizes]

    def evaluate(self, expr: Expr) -> int:
        return self.symbols.value_of(expr, SAMPLES)

    # -- the walk --------------------------------------------------------------------------
    def run(self, patterns) -> SSAValue:
        body = self.fn.body.block
        self.read_bound_shapes(body)
        for op in body.ops:
            if op.name in IGNORED or isinstance(op, func.ReturnOp):
                continue
            if not any(is_tensor(r) or r.type.name == "torch.list" for r in op.results):
                continue
            if self.is_static(op, patterns):
                self.static.update(op.results)
                continue
            self.convert(op, patterns)
        return self.loss(body)

    def read_bound_shapes(self, body: Block) -> None:
        """torch-mlir binds a result's symbolic shape after the op: read them all first."""
        for op in body.ops:
            if op.name == "torch.bind_symbolic_shape":
                try:
                    value, sizes = shape_expressions(op)
                except ValueError as e:
                    raise ConversionError(f"cannot read {describe(op)}: {e}", op) from None
                self.bound[value] = sizes

    def is_static(self, op: Operation, patterns) -> bool:
        """Whether `op` computes a size or constant (no tensor of the model flows in)."""
        operands = [v for v in op.operands if is_tensor(v)]
        for v in op.operands:
            if v.type.name == "torch.list" and (p := self.producer(v)) is not None and p.name == "torch.prim.ListConstruct":
                operands += [x for x in p.operands if is_tensor(x)]
        return op.name in STATIC_SOURCES or (bool(operands) and all(v in self.static for v in operands)) or (
            not operands and op.name.startswith("torch.aten.") and op.name not in patterns
        )

    def convert(self, op: Operation, patterns) -> None:
        """Converts `op` by its pattern; an op it cannot convert is recorded as such,
        an error only if the loss needs it."""
        self.current = op
        fn = patterns.get(op.name)
        try:
            if fn is None:
                raise Skip("convert-torch-to-stg has no pattern for this op")
            result = fn(self, op)
        except Skip as skip:
            self.fail(op, skip.root or Unconvertible(op, skip.reason))
            return
        except (TypeError, ValueError, KeyError, IndexError, AttributeError, ZeroDivisionError) as error:
            # a pattern met a form it does not expect (a non-constant argument, say)
            self.fail(op, Unconvertible(op, f"its pattern failed on this form ({type(error).__name__}: {error})"))
            return
        finally:
            self.current = None
        if isinstance(result, (View, list)):
            self.values[op.results[0]] = result
        elif isinstance(result, tuple):
            for r, v in zip(op.results, result):
                self.values[r] = v

    def fail(self, op: Operation, failed: Unconvertible) -> None:
        for r in op.results:
            self.values[r] = failed

    def loss(self, body: Block) -> SSAValue:
        """The function's one result, the loss, as stg."""
        ret = body.last_op
        if not isinstance(ret, func.ReturnOp) or len(ret.operands) != 1:
            raise ConversionError("the torch function must return one value (a model: its loss)", ret)
        got = self.values.get(ret.operands[0])
        if isinstance(got, Unconvertible):
            raise got.error()
        if not isinstance(got, View):
            raise ConversionError("the torch function's result was not converted", ret)
        return self.materialize(got)

def _hint(name: str) -> str:
    """A printed name for a parameter: its module, as the templates name them."""
    from stagec.frontends.templates.blocks import module_name

    hint = module_name(name)
    return hint if hint[:1].isalpha() else f"p{hint}"


def dce(block: Block) -> None:
    """Erases ops whose results nothing uses (every stg op the walk builds is pure)."""
    for op in reversed(list(block.ops)):
        if op.results and not any(r.uses for r in op.results) and not op.regions:
            block.erase_op(op)


def sink(block: Block, layer: dict[Operation, tuple[str, int]]) -> None:
    """Moves elementwise ops and reshapes down to just before their first user, so that
    GEMMs reading one value sit side by side as the templates write them (gate and up
    projection before the gate's silu): trace emission fuses such neighbours. Ops stay
    within their layer."""
    order = {op: i for i, op in enumerate(block.ops)}
    for op in reversed(list(block.ops)):
        if not isinstance(op, (stg.ElementwiseOp, stg.ReshapeOp, stg.TransposeOp)):
            continue
        users = [u.operation for r in op.results for u in r.uses if u.operation.parent is block]
        if not users:
            continue
        first = min(users, key=order.__getitem__)
        if order[first] > order[op] + 1 and layer.get(first) == layer.get(op):
            op.detach()
            block.insert_op_before(op, first)
            order[op] = order[first] - 0.5


def product_of(exprs: Sequence[Expr]) -> Expr:
    return product(exprs) if exprs else Expr.const(1)


def build_module(converter: Converter, loss: SSAValue, model: str) -> ModuleOp:
    block = converter.block
    first = block.first_op
    for op in converter.input_ops:
        if first is None:
            block.add_op(op)
        else:
            block.insert_op_before(op, first)
    block.add_op(func.ReturnOp(loss))
    dce(block)
    sink(block, converter.layer)
    forward = func.FuncOp(FORWARD_FUNCTION, ((), (loss.type,)), Region(block))
    module = ModuleOp([forward])
    module.attributes["stg.model"] = StringAttr(model)
    return module


def set_config(module: ModuleOp, symbols: ModelSymbols) -> None:
    used = set()
    for op in module.walk():
        for r in op.results:
            if isinstance(r.type, TensorType):
                for d in r.type.shape:
                    used |= d.symbols
        if isinstance(op, (stg.AttentionOp,)):
            used |= op.heads.data.symbols | op.kv_heads.data.symbols
        if isinstance(op, stg.RepeatOp):
            used |= op.count_expr.symbols
    stg_config.set_config(module, {n: symbols.values[n] for n in used if n in symbols.values})

