"""stg-instantiate: symbols -> integers (stage.md §IV-E, graph instantiation).

    stagec-opt m.mlir --pass-pipeline='builtin.module(stg-instantiate{B=8 S=4096 dp=2})'

Binds symbols to integers and substitutes them everywhere in the module: in every
`#stg.expr` and `#stg.dim`, wherever it sits (tensor types of results and block
arguments, function types, repeat and micro-batch counts, attention heads, opaque
FLOPs/bytes, discardable attributes, nested in any op and region), and in `stg.mesh`
axis sizes. Axis names stay in layouts: with B = 8, `[B/dp]` becomes `[8/dp]`, the
axis still naming the split while the mesh now says `dp = 2`.

The values come from the pass options and the module's `stg.config` dictionary (the
model's bindings, docs/training-ir.md); an option wins over stg.config, and the
overridden stg.config entry is updated, so that stg.config keeps recording the values
the IR was built with. A mesh axis of numeric size binds its name too, so costs that
divide by `tp` get the mesh's value.

Requires: verified stg IR. Guarantees, or fails with a diagnostic naming the op, the
place and the values:
- every split dim whose size and axes are numeric divides evenly
  (`dim 0 of %x ([B/dp]): B = 10 is not divisible by dp = 4`);
- every size that becomes a number is a positive integer (no `H/N = 10/4`, no zero
  repeat count), and every other expression that becomes a number is an integer;
- each mesh axis has one size (the meshes, stg.config and the options agree);
- every bound symbol occurs in the program (its types and attributes, a mesh axis,
  stg.config), unless `allow-unused=true`: `s=64` for `S` is refused where it is made;
- with `complete=true`, no symbol is left; otherwise unbound symbols stay symbolic;
- the instantiated IR verifies.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from math import prod
from typing import ClassVar, NoReturn, Self

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FileLineColLoc,
    FunctionType,
    IntegerAttr,
    ModuleOp,
)
from xdsl.ir import Attribute, Operation, ParametrizedAttribute, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.arg_spec import ArgSpec
from xdsl.utils.exceptions import DiagnosticException, PassFailedException

from stagec.dialects.stg import DimAttr, DistributedTensorType, ExprAttr, MeshOp
from stagec.dialects.stg.config import CONFIG, ConfigError, config_bindings, entry_value
from stagec.dialects.symbolic import (
    Expr,
    IndivisibleError,
    SymbolicError,
    UnboundSymbolError,
)

__all__ = ["InstantiationError", "StgInstantiate", "instantiate"]


class InstantiationError(PassFailedException):
    """Bindings that make the IR impossible: an uneven split, a size that is not a
    positive integer, two sizes for one mesh axis, a symbol left under complete=true,
    or IR that no longer verifies."""


@dataclass(frozen=True)
class StgInstantiate(ModulePass):
    """Bind symbols to integers: stg-instantiate{B=8 S=4096 dp=2}."""

    name = "stg-instantiate"

    # tools/pipeline_spec.py reads every `symbol=integer` option that names no other
    # field into `bindings`: the symbols are the model's, not fixed field names.
    binds_symbols: ClassVar[bool] = True

    bindings: tuple[tuple[str, int], ...] = ()
    """(symbol, value) pairs; a mapping is accepted and sorted into pairs."""

    complete: bool = False
    """Fail if any symbol is left without a value."""

    allow_unused: bool = False
    """Accept bindings of symbols the program does not have (one pipeline for several
    programs, e.g. the chunks of a --split-input-file test); by default such a binding
    is refused as the typo it usually is (`s=64` for `S`)."""

    def __post_init__(self) -> None:
        pairs = self.bindings.items() if isinstance(self.bindings, Mapping) else self.bindings
        object.__setattr__(self, "bindings", tuple(sorted(_checked_bindings(pairs).items())))

    @classmethod
    def from_spec(cls, spec: ArgSpec) -> Self:
        if spec.name != cls.name:
            raise ValueError(f"Spec name mismatch: got '{spec.name}', expected '{cls.name}'.")
        parameters = dict(spec.parameters)
        complete = parameters.pop("complete", (False,))
        if len(complete) != 1 or not isinstance(complete[0], bool):
            raise ValueError(f"option 'complete' expects true or false, got {complete}")
        allow_unused = parameters.pop("allow-unused", parameters.pop("allow_unused", (False,)))
        if len(allow_unused) != 1 or not isinstance(allow_unused[0], bool):
            raise ValueError(f"option 'allow-unused' expects true or false, got {allow_unused}")
        bindings: dict[str, int] = {}
        for symbol, values in parameters.items():
            if len(values) != 1 or type(values[0]) is not int:
                given = ",".join(str(v) for v in values)
                raise ValueError(f"option '{symbol}' binds a symbol to an integer, got '{given}'")
            bindings[symbol] = values[0]
        return cls(tuple(bindings.items()), complete[0], allow_unused[0])

    def spec(self, *, include_default: bool = False) -> ArgSpec:
        parameters: dict[str, tuple[int | bool, ...]] = {s: (v,) for s, v in self.bindings}
        if self.complete or include_default:
            parameters["complete"] = (self.complete,)
        if self.allow_unused or include_default:
            parameters["allow-unused"] = (self.allow_unused,)
        return ArgSpec(self.name, parameters)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        instantiate(op, dict(self.bindings), complete=self.complete, allow_unused=self.allow_unused)


def instantiate(
    module: ModuleOp, bindings: Mapping[str, int], *, complete: bool = False, allow_unused: bool = False
) -> None:
    """Substitute `bindings` (and the module's stg.config, which they override) into
    `module` in place, with the checks of the module doc; raises InstantiationError."""
    try:
        env = config_bindings(module)
    except ConfigError as error:
        _fail(module, str(error))
    options = _checked_bindings(bindings.items())
    if not allow_unused:
        _check_known(module, options, env)
    _record_overrides(module, options)
    env.update(options)
    instantiator = _Instantiator(env)
    instantiator.bind_mesh_axes(module, set(options))
    instantiator.run(module)
    if complete:
        _check_complete(module)
    _check_verifies(module)


# ------------------------------------------------------------------------ bindings


def _checked_bindings(pairs: Iterable[tuple[str, int]]) -> dict[str, int]:
    checked: dict[str, int] = {}
    for symbol, value in pairs:
        try:
            Expr.sym(symbol)
        except SymbolicError as error:
            raise ValueError(f"cannot bind '{symbol}': {error}") from None
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"symbol {symbol} must be bound to an integer, not {value!r}")
        checked[symbol] = int(value)
    return checked


def _record_overrides(module: ModuleOp, options: Mapping[str, int]) -> None:
    """Update the stg.config entries an option overrides, so that stg.config records
    the values the IR is instantiated with."""
    config = module.attributes.get(CONFIG)
    if not isinstance(config, DictionaryAttr):
        return
    entries = dict(config.data)
    changed = False
    for key, value in config.data.items():
        number = entry_value(value)
        if number is not None and key in options and number != options[key]:
            entries[key] = IntegerAttr(options[key], value.type)
            changed = True
    if changed:
        module.attributes[CONFIG] = DictionaryAttr(entries)


# ------------------------------------------------------------------------ messages


def _describe(op: Operation) -> str:
    """`'stg.input' op at m.mlir:4:8`, as far as the op knows where it came from."""
    location = op.location
    if isinstance(location, FileLineColLoc):
        where = f"{location.filename.data}:{location.line.data}:{location.column.data}"
        return f"'{op.name}' op at {where}"
    return f"'{op.name}' op"


def _fail(op: Operation, message: str) -> NoReturn:
    raise InstantiationError(f"{_describe(op)}: {message}")


def _values(symbols: Iterable[str], env: Mapping[str, int]) -> str:
    return ", ".join(f"{s} = {env[s]}" for s in sorted(symbols) if s in env)


def _value_name(value: SSAValue, what: str, index: int) -> str:
    return f"%{value.name_hint}" if value.name_hint else f"{what} {index}"


# ------------------------------------------------------------------- substitution


class _Instantiator:
    """Substitutes the bindings into attributes, checking each size it makes numeric.

    Attributes are immutable, so each distinct one is rewritten once: a layout used by
    a thousand values is checked and rebuilt once (a failing one raises on first use).
    """

    def __init__(self, env: dict[str, int]):
        self.env = env
        self.done: dict[Attribute, Attribute] = {}
        self.op: Operation | None = None

    def fail(self, place: str, message: str) -> NoReturn:
        assert self.op is not None
        _fail(self.op, f"{place}: {message}")

    # -- mesh axes -------------------------------------------------------------------

    def bind_mesh_axes(self, module: ModuleOp, from_options: set[str]) -> None:
        """Give every mesh axis of numeric size its value, checking that the meshes,
        stg.config and the options agree on it; the axis name then binds that value."""
        axes: dict[str, tuple[int, MeshOp]] = {}
        for mesh in module.walk():
            if not isinstance(mesh, MeshOp):
                continue
            self.op = mesh
            name = f"@{mesh.sym_name.data}"
            for axis, size in mesh.axis_sizes.items():
                value = self.expr(size, f"mesh axis '{axis}' of {name}", is_size=True).as_int()
                if value is None:
                    continue
                given = f"mesh axis '{axis}' of {name} has size " + (
                    f"{size} = {value}" if size.symbols else str(value)
                )
                if axis in self.env and self.env[axis] != value:
                    source = "the pass options bind" if axis in from_options else f"{CONFIG} binds"
                    _fail(mesh, f"{given}, but {source} {axis} = {self.env[axis]}")
                if axis in axes and axes[axis][0] != value:
                    first, other = axes[axis]
                    _fail(mesh, f"{given}, but @{other.sym_name.data} gives it size {first}")
                axes[axis] = (value, mesh)
        self.env.update((axis, value) for axis, (value, _) in axes.items())

    # -- the walk --------------------------------------------------------------------

    def run(self, module: ModuleOp) -> None:
        # Values before properties: a function's arguments name the dim (`%x`) that
        # its function_type holds too, and the first place to fail is reported.
        for op in module.walk():
            self.op = op
            for index, result in enumerate(op.results):
                self.retype(result, _value_name(result, "result", index))
            for region in op.regions:
                for block in region.blocks:
                    for index, arg in enumerate(block.args):
                        self.retype(arg, _value_name(arg, "block argument", index))
            for name, attr in list(op.properties.items()):
                if (new := self.attr(attr, name)) is not attr:
                    op.properties[name] = new
            for name, attr in list(op.attributes.items()):
                if (new := self.attr(attr, f"attribute '{name}'")) is not attr:
                    op.attributes[name] = new

    def retype(self, value: SSAValue, place: str) -> None:
        new = self.attr(value.type, place)
        if new is not value.type:
            Rewriter.replace_value_with_new_type(value, new)

    def attr(self, attr: Attribute, place: str) -> Attribute:
        """`attr` with the bindings substituted (the same object if nothing changes)."""
        done = self.done.get(attr)
        if done is None:
            done = self.done[attr] = self.rewrite(attr, place)
        return done

    def rewrite(self, attr: Attribute, place: str) -> Attribute:
        if isinstance(attr, ExprAttr):
            expr = self.expr(attr.data, place, is_size=False)
            return attr if expr == attr.data else ExprAttr(expr)
        if isinstance(attr, DimAttr):
            return self.dim(attr, place)
        if isinstance(attr, DistributedTensorType):
            layout = attr.layout_str()
            dims = [
                self.dim(d, f"dim {i} of {place} ({layout})") for i, d in enumerate(attr.dims.data)
            ]
            if all(new is old for new, old in zip(dims, attr.dims.data)):
                return attr
            return type(attr).new([ArrayAttr(dims), attr.partial, attr.element_type])
        if isinstance(attr, FunctionType):
            inputs = [self.attr(t, f"input {i} of {place}") for i, t in enumerate(attr.inputs)]
            outputs = [self.attr(t, f"result {i} of {place}") for i, t in enumerate(attr.outputs)]
            if _same(inputs, attr.inputs) and _same(outputs, attr.outputs):
                return attr
            return FunctionType.from_lists(inputs, outputs)
        if isinstance(attr, ArrayAttr):
            items = [self.attr(a, f"{place}[{i}]") for i, a in enumerate(attr.data)]
            return attr if _same(items, attr.data) else ArrayAttr(items)
        if isinstance(attr, DictionaryAttr):
            entries = {k: self.attr(a, f"{place}.{k}") for k, a in attr.data.items()}
            return attr if _same(entries.values(), attr.data.values()) else DictionaryAttr(entries)
        if isinstance(attr, ParametrizedAttribute):
            params = [self.attr(p, place) for p in attr.parameters]
            return attr if _same(params, attr.parameters) else type(attr).new(params)
        return attr

    def dim(self, dim: DimAttr, place: str) -> DimAttr:
        size = self.expr(dim.expr, place, is_size=True)
        value, axes = size.as_int(), dim.axis_names
        if value is not None and axes and all(a in self.env for a in axes):
            parts = prod(self.env[a] for a in axes)
            if dim.padded.data:  # a padded dim (docs/sharding.md): its extent must be the ceiling
                if dim.padded.data != -(-value // parts):
                    self.fail(place, f"padded extent {dim.padded.data} of {dim.expr} = {value} over {'*'.join(axes)} = {parts} is not ceil({value}/{parts}) = {-(-value // parts)}")
            elif value % parts:
                given = f"{dim.expr} = {value}" if dim.expr.symbols else str(value)
                by = (
                    f"{axes[0]} = {parts}"
                    if len(axes) == 1
                    else f"{'*'.join(axes)} = {parts} ({_values(axes, self.env)})"
                )
                self.fail(place, f"{given} is not divisible by {by}")
        return dim if size == dim.expr else DimAttr(size, dim.axes, dim.padded)

    def expr(self, expr: Expr, place: str, *, is_size: bool) -> Expr:
        """`expr` with the bindings substituted. A number it becomes must be an
        integer, and positive if it is a size or was symbolic (a symbolic count or
        cost stands for a real, positive one)."""
        if not expr.symbols & self.env.keys():
            new = expr
        else:
            try:
                new = expr.subs(self.env)
            except SymbolicError as error:  # a divisor bound to 0
                self.fail(place, f"{expr}: {error} ({_values(expr.symbols, self.env)})")
        if not new.is_constant:
            return new
        value = new.as_int()
        if value is None:
            self.fail(place, self.not_integral(expr, new))
        if value < 1 and (is_size or expr.symbols):
            given = f"{expr} = {value}" if expr.symbols else str(value)
            bound = _values(expr.symbols, self.env)
            self.fail(place, f"{given} is not a positive integer" + (f" ({bound})" if bound else ""))
        return new

    def not_integral(self, expr: Expr, value: Expr) -> str:
        bound = _values(expr.symbols, self.env)
        try:
            expr.evaluate(self.env)
        except IndivisibleError as error:
            quotient = f"{error.numerator}/{error.denominator}"
        except UnboundSymbolError:  # a symbol that cancels out, e.g. B*S - S with B = 1
            quotient = str(value)
        else:  # pragma: no cover - value is a non-integral constant
            quotient = str(value)
        given = f"{expr} = {quotient}" if expr.symbols else str(expr)
        return f"{given} is not an integer" + (f" ({bound})" if bound else "")


def _same(new: Iterable[Attribute], old: Iterable[Attribute]) -> bool:
    return all(a is b for a, b in zip(new, old, strict=True))


# ----------------------------------------------------------------- after the walk


def _symbols_in(attr: Attribute, seen: dict[Attribute, frozenset[str]]) -> frozenset[str]:
    found = seen.get(attr)
    if found is not None:
        return found
    if isinstance(attr, ExprAttr):
        found = attr.data.symbols
    elif isinstance(attr, ParametrizedAttribute):
        found = frozenset().union(*(_symbols_in(p, seen) for p in attr.parameters))
    elif isinstance(attr, ArrayAttr):
        found = frozenset().union(*(_symbols_in(a, seen) for a in attr.data))
    elif isinstance(attr, DictionaryAttr):
        found = frozenset().union(*(_symbols_in(a, seen) for a in attr.data.values()))
    else:
        found = frozenset()
    seen[attr] = found
    return found


def _program_symbols(module: ModuleOp) -> set[str]:
    """Every symbol the module has: in its types and attributes, its meshes' axis
    names, and its stg.config entries."""
    seen: dict[Attribute, frozenset[str]] = {}
    found: set[str] = set()
    for op in module.walk():
        if isinstance(op, MeshOp):
            found.update(op.axis_names)
        for attr in (
            *(r.type for r in op.results),
            *(a.type for region in op.regions for block in region.blocks for a in block.args),
            *op.properties.values(),
            *op.attributes.values(),
        ):
            found |= _symbols_in(attr, seen)
    return found


def _check_known(module: ModuleOp, options: Mapping[str, int], config: Mapping[str, int]) -> None:
    """A binding of a symbol the program does not have is a mistake (`s=64` for `S`):
    refused here, where it is made, rather than surfacing later as an unbound `S`."""
    unknown = [s for s in options if s not in config]
    if not unknown:
        return
    known = _program_symbols(module) | set(config)
    unknown = [s for s in unknown if s not in known]
    if not unknown:
        return
    import difflib

    hints = []
    for s in unknown:
        close = [k for k in known if k.lower() == s.lower()] or difflib.get_close_matches(s, known, n=1, cutoff=0.7)
        hints.append(f"'{s}'" + (f" (did you mean '{close[0]}'?)" if close else ""))
    raise InstantiationError(
        f"stg-instantiate binds {', '.join(hints)}, which the program does not have; "
        f"its symbols are {', '.join(sorted(known)) or 'none'} (allow-unused=true accepts the others)"
    )


def _check_complete(module: ModuleOp) -> None:
    """complete=true: no symbol may be left; name each with the first op using it."""
    seen: dict[Attribute, frozenset[str]] = {}
    first_use: dict[str, Operation] = {}
    for op in module.walk():
        attrs = [
            *(r.type for r in op.results),
            *(a.type for region in op.regions for block in region.blocks for a in block.args),
            *op.properties.values(),
            *op.attributes.values(),
        ]
        for attr in attrs:
            for symbol in _symbols_in(attr, seen):
                first_use.setdefault(symbol, op)
    if first_use:
        left = ", ".join(
            f"{symbol} (first used by {_describe(first_use[symbol])})"
            for symbol in sorted(first_use)
        )
        raise InstantiationError(f"complete=true, but symbols are left without a value: {left}")


def _check_verifies(module: ModuleOp) -> None:
    try:
        module.verify()
    except DiagnosticException as error:
        for op in module.walk():
            try:
                op.verify(verify_nested_ops=False)
            except DiagnosticException as op_error:
                raise InstantiationError(
                    f"the instantiated IR does not verify: {_describe(op)}: {op_error}"
                ) from None
        raise InstantiationError(f"the instantiated IR does not verify: {error}") from None
