"""stg-instantiate: substituting bindings commutes with evaluating sizes and costs.

The property tests build random symbolic programs (layouts over a random mesh,
einsums, elementwise ops, attention, opaque costs, a repeated body) and random
bindings under which every split divides, then check that instantiating and
evaluating gives what evaluating the symbolic program gives: per-rank local sizes
and per-op FLOPs (CostInterface.flops()). The example tests pin the Python API, the
option spellings through the pipeline parser and stagec-opt's exit code.
"""

from __future__ import annotations

from math import prod

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.parser import Parser

from stagec.dialects import make_context
from stagec.dialects.stg import CostInterface, DistributedTensorType, MeshOp
from stagec.dialects.stg.cost import region_cost
from stagec.dialects.symbolic import Expr
from stagec.passes.stg_instantiate import InstantiationError, StgInstantiate, instantiate
from stagec.tools import stagec_opt
from stagec.tools.pipeline_spec import build_pipeline

MODEL_SYMBOLS = ("B", "S", "H", "F", "D")
AXES = ("dp", "tp", "sp")


def parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def tensor_types(module: ModuleOp) -> list[DistributedTensorType]:
    """The types of every value: op results and block arguments."""
    values = [
        v
        for op in module.walk()
        for v in (
            *op.results,
            *(a for region in op.regions for block in region.blocks for a in block.args),
        )
    ]
    return [v.type for v in values if isinstance(v.type, DistributedTensorType)]


# ------------------------------------------------------------------ random programs


@st.composite
def sizes(draw) -> Expr:
    """A positive global size: a sum of one or two monomials, each with a symbol, so
    that it divides by the mesh whenever every symbol's value does."""
    terms = []
    for _ in range(draw(st.integers(1, 2))):
        symbols = draw(st.lists(st.sampled_from(MODEL_SYMBOLS), min_size=1, max_size=2))
        terms.append(draw(st.integers(1, 4)) * prod(Expr.sym(s) for s in symbols))
    return sum(terms[1:], terms[0])


def dim_text(size: Expr, axes: list[str]) -> str:
    text = str(size)
    if not (size.is_monomial and size.is_integral):
        text = f"({text})"
    return text + "".join(f"/{a}" for a in axes)


@st.composite
def layouts(draw, mesh_axes: list[str]) -> str:
    """`[size/axes, ...] @partial`, each mesh axis distributing the tensor at most once."""
    free = list(draw(st.permutations(mesh_axes)))
    dims = []
    for _ in range(draw(st.integers(1, 3))):
        count = draw(st.integers(0, len(free)))
        axes, free = free[:count], free[count:]
        dims.append(dim_text(draw(sizes()), axes))
    partial = free[: draw(st.integers(0, len(free)))]
    return f"[{', '.join(dims)}]" + (f" @{'*'.join(sorted(partial))}" if partial else "")


@st.composite
def meshes(draw) -> dict[str, int]:
    axes = draw(st.lists(st.sampled_from(AXES), unique=True, max_size=3))
    return {axis: draw(st.sampled_from([1, 2, 3, 4])) for axis in axes}


@st.composite
def bindings(draw, mesh: dict[str, int]) -> dict[str, int]:
    """Values for every model symbol that divide by the whole mesh, so every split does."""
    parts = prod(mesh.values())
    return {s: parts * draw(st.integers(1, 5)) for s in MODEL_SYMBOLS}


def mesh_text(mesh: dict[str, int], numeric: set[str]) -> str:
    if not mesh:
        return ""
    axes = ", ".join(f"{a} = {v}" if a in numeric else a for a, v in mesh.items())
    return f"stg.mesh @m [{axes}]\n"


def split_bindings(draw, env: dict[str, int]) -> tuple[dict[str, int], dict[str, int]]:
    """Some bindings as pass options, the others in the module's stg.config."""
    in_config = draw(st.sets(st.sampled_from(sorted(env))))
    return (
        {k: v for k, v in env.items() if k not in in_config},
        {k: v for k, v in env.items() if k in in_config},
    )


def config_attr(config: dict[str, int]) -> str:
    entries = ", ".join(f"{k} = {v} : i64" for k, v in sorted(config.items()))
    return f" attributes {{stg.config = {{{entries}}}}}" if config else ""


# ----------------------------------------------------------------------- properties


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_local_sizes_commute_with_instantiation(data):
    mesh = data.draw(meshes())
    numeric = data.draw(st.sets(st.sampled_from(sorted(mesh)))) if mesh else set()
    model = data.draw(bindings(mesh))
    options, config = split_bindings(data.draw, model)
    # Mesh sizes the mesh does not write come from the options.
    options |= {a: v for a, v in mesh.items() if a not in numeric}
    types = [data.draw(layouts(list(mesh))) for _ in range(data.draw(st.integers(1, 4)))]
    # Function arguments: the layouts may be partial sums, which inputs may not.
    args = ", ".join(f"%t{i}: !stg.tensor<{t}, f32>" for i, t in enumerate(types))
    text = f"builtin.module{config_attr(config)} {{\n{mesh_text(mesh, numeric)}func.func @f({args}) {{\n  func.return\n}}\n}}\n"
    module = parse(text)
    env = model | mesh
    symbolic = [tuple(s.evaluate(env) for s in t.local_shape()) for t in tensor_types(module)]

    # the drawn model may bind symbols the drawn layouts do not use
    instantiate(module, options, complete=True, allow_unused=True)

    after = tensor_types(module)
    assert [tuple(s.evaluate(env) for s in t.local_shape()) for t in after] == symbolic
    # Global sizes are numbers, layouts keep their axis names.
    assert all(s.is_constant for t in after for s in t.shape)
    assert [t.splits for t in after] == [t.splits for t in tensor_types(parse(text))]
    for op in module.walk():
        if isinstance(op, MeshOp):
            assert op.numeric_sizes() == list(mesh.values())

    # Partial instantiation, then the rest, is the same as all at once.
    first = data.draw(st.sets(st.sampled_from(sorted(options)))) if options else set()
    stepwise = parse(text)
    instantiate(stepwise, {k: v for k, v in options.items() if k in first}, allow_unused=True)
    instantiate(stepwise, {k: v for k, v in options.items() if k not in first}, complete=True, allow_unused=True)
    assert str(stepwise) == str(module)


def einsum(lhs: str, rhs: str, out: str) -> str:
    return (
        f'stg.einsum "bh,hf->bf" %x, %w : !stg.tensor<{lhs}, bf16>, '
        f"!stg.tensor<{rhs}, bf16> -> !stg.tensor<{out}, bf16>"
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_flops_commute_with_instantiation(data):
    mesh = data.draw(meshes())
    model = data.draw(bindings(mesh))
    kv_heads = prod(mesh.values()) * data.draw(st.integers(1, 3))
    model |= {"KV": kv_heads, "N": kv_heads * data.draw(st.integers(1, 4))}
    model |= {"L": data.draw(st.integers(1, 6))}
    options, config = split_bindings(data.draw, model | mesh)

    # A column- or row-parallel GEMM: the batch, hidden and output dims each split
    # over their own axes, the contracted hidden dim leaving a partial sum.
    axes = list(data.draw(st.permutations(list(mesh))))
    cut1 = data.draw(st.integers(0, len(axes)))
    cut2 = data.draw(st.integers(cut1, len(axes)))
    on_b, on_h, on_f = axes[:cut1], axes[cut1:cut2], axes[cut2:]
    b, h, f = (dim_text(data.draw(sizes()), a) for a in (on_b, on_h, on_f))
    bare_h = dim_text(Expr.sym("H"), on_h)
    partial = f" @{'*'.join(sorted(on_h))}" if on_h else ""
    x, w, y = f"[{b}, {bare_h}]", f"[{bare_h}, {f}]", f"[{b}, {f}]{partial}"
    # Attention with N query heads grouped over KV key/value heads, heads split like b.
    heads_axes = on_b
    q = f"[{dim_text(Expr.sym('B'), [])}, S, {dim_text(Expr.sym('N'), heads_axes)}, D]"
    k = f"[{dim_text(Expr.sym('B'), [])}, S, {dim_text(Expr.sym('KV'), heads_axes)}, D]"
    flops = str(data.draw(sizes()))
    body = f"""
  %x = stg.input "x" : !stg.tensor<{x}, bf16>
  %w = stg.param "w" : !stg.tensor<{w}, bf16>
  %y = {einsum(x, w, y)}
  %q = stg.input "q" : !stg.tensor<{q}, bf16>
  %k = stg.input "k" : !stg.tensor<{k}, bf16>
  %r = stg.repeat L carry(%c = %q : !stg.tensor<{q}, bf16>) {{
    %a = stg.attention %c, %k, %k heads N kv_heads KV causal : !stg.tensor<{q}, bf16>, !stg.tensor<{k}, bf16>, !stg.tensor<{k}, bf16> -> !stg.tensor<{q}, bf16>
    %g = stg.elementwise gelu %a : !stg.tensor<{q}, bf16> -> !stg.tensor<{q}, bf16>
    %s = stg.elementwise add %g, %c : !stg.tensor<{q}, bf16>, !stg.tensor<{q}, bf16> -> !stg.tensor<{q}, bf16>
    stg.yield %s : !stg.tensor<{q}, bf16>
  }}
  stg.opaque "kernel"(%x) flops <{flops}> bytes <2*{flops}> : (!stg.tensor<{x}, bf16>) -> ()
"""
    text = f"builtin.module{config_attr(config)} {{\n{mesh_text(mesh, set())}func.func @f() {{{body}  func.return\n}}\n}}\n"
    module = parse(text)
    env = model | mesh
    ops = [op for op in module.walk() if isinstance(op, CostInterface)]
    symbolic = [(op.flops().evaluate(env), op.bytes_moved().evaluate(env)) for op in ops]
    func_op = next(op for op in module.walk() if op.name == "func.func")
    total = tuple(c.evaluate(env) for c in region_cost(func_op.body.block.ops))

    instantiate(module, options, complete=True, allow_unused=True)

    ops = [op for op in module.walk() if isinstance(op, CostInterface)]
    assert [(op.flops().evaluate(env), op.bytes_moved().evaluate(env)) for op in ops] == symbolic
    assert tuple(c.evaluate(env) for c in region_cost(func_op.body.block.ops)) == total
    # Layouts keep their axis names, so the axis sizes are all a cost still needs.
    assert {s for op in ops for s in op.flops().symbols} <= set(mesh)


# -------------------------------------------------------------------------- examples


LAYER = """\
builtin.module attributes {stg.model = "tiny", stg.config = {H = 64 : i64, L = 2 : i64}} {
  stg.mesh @m [dp]
  func.func @f(%x: !stg.tensor<[B/dp, H], bf16>) {
    func.return
  }
}
"""


def test_instantiate_api_uses_config_and_options():
    module = parse(LAYER)
    instantiate(module, {"B": 8, "dp": 2})
    func_op = next(op for op in module.walk() if op.name == "func.func")
    (arg,) = func_op.body.block.args
    assert arg.type.layout_str() == "[8/dp, 64]"
    assert func_op.function_type.inputs.data[0] == arg.type
    mesh = next(op for op in module.walk() if isinstance(op, MeshOp))
    assert mesh.numeric_sizes() == [2]


def test_options_win_over_config_and_config_records_them():
    module = parse(LAYER)
    instantiate(module, {"B": 8, "dp": 2, "H": 32})
    config = module.attributes["stg.config"]
    assert config.data["H"] == IntegerAttr(32, 64)
    assert config.data["L"] == IntegerAttr(2, 64)
    func_op = next(op for op in module.walk() if op.name == "func.func")
    assert func_op.body.block.args[0].type.layout_str() == "[8/dp, 32]"


def test_indivisible_split_names_dim_and_values():
    module = parse(LAYER)
    with pytest.raises(InstantiationError) as error:
        instantiate(module, {"B": 10, "dp": 4})
    assert str(error.value) == (
        "'func.func' op: dim 0 of %x ([B/dp, H]): B = 10 is not divisible by dp = 4"
    )


def test_complete_lists_unbound_symbols():
    module = parse(LAYER)
    with pytest.raises(InstantiationError, match=r"left without a value: B \(.*\), dp \("):
        instantiate(module, {}, complete=True)


@pytest.mark.parametrize(
    "spec",
    [
        "stg-instantiate{B=8 S=4096 complete=true}",
        "stg-instantiate{B=8,S=4096,complete=true}",
        "stg-instantiate{ B=8, S=4096 , complete=true }",
    ],
)
def test_option_spellings_build_the_same_pass(spec):
    (built,) = build_pipeline(spec, mlir_syntax=False).passes
    assert built == StgInstantiate({"S": 4096, "B": 8}, complete=True)
    # The pass prints as it is written, and that reads back.
    assert str(built) == "stg-instantiate{B=8 S=4096 complete=true}"
    assert build_pipeline(str(built), mlir_syntax=True).passes == (built,)


def test_pass_error_is_exit_code_2_with_location(tmp_path, capsys):
    path = tmp_path / "m.mlir"
    path.write_text(LAYER)
    code = stagec_opt.main([str(path), "-p", "stg-instantiate{B=10,dp=4}"])
    assert code == 2
    assert capsys.readouterr().err == (
        f"{path}: error: pass 'stg-instantiate' failed: 'func.func' op at {path}:3:3: "
        "dim 0 of %x ([B/dp, H]): B = 10 is not divisible by dp = 4\n"
    )


def test_a_symbol_the_program_does_not_have_is_refused_where_it_is_bound():
    # issue 17, class 7: `s=64` for `S` used to pass, to surface later as "unbound S"
    text = """builtin.module {
stg.mesh @m [dp]
func.func @f() {
  %x = stg.input "x" : !stg.tensor<[B/dp, S], bf16>
  func.return
}
}
"""
    with pytest.raises(InstantiationError, match=r"binds 's' \(did you mean 'S'\?\), which the program does not have; "
                                                  r"its symbols are B, S, dp \(allow-unused=true accepts the others\)"):
        instantiate(parse(text), {"B": 8, "s": 64})
    module = parse(text)
    instantiate(module, {"B": 8, "s": 64, "dp": 2}, allow_unused=True)
    assert "[8/dp, S]" in str(module)
