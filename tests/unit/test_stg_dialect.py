"""Python-level tests of the stg dialect: type syntax, layout rules, mesh ranks, costs."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, bf16, f32
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from stagec.dialects import stg
from stagec.dialects.stg import TensorType
from stagec.dialects.stg.distribution import (
    check_all_gather,
    check_all_to_all,
    check_reduce_scatter,
)
from stagec.dialects.symbolic import Expr

AXES = ["dp", "tp", "sp", "cp"]


def context() -> Context:
    ctx = Context()
    ctx.load_dialect(stg.STG)
    return ctx


def parse_type(text: str):
    return Parser(context(), text).parse_type()


def parse_module(text: str) -> ModuleOp:
    from xdsl.dialects.func import Func

    ctx = context()
    ctx.load_dialect(Func)
    module = Parser(ctx, text).parse_module()
    module.verify()
    return module


# -- type syntax -----------------------------------------------------------------------

sizes = st.sampled_from(["B", "S", "4*H", "(H/N)", "(2*D*KV + H)", "V", "8", "B*S"])


@st.composite
def layouts(draw):
    """A random distributed tensor: random sizes, each axis used at most once."""
    rank = draw(st.integers(0, 4))
    dims = [Expr.parse(draw(sizes)) for _ in range(rank)]
    axes = draw(st.permutations(AXES))
    roles = draw(st.lists(st.integers(-1, rank), min_size=len(AXES), max_size=len(AXES)))
    splits = [[] for _ in range(rank)]
    partial = []
    for axis, role in zip(axes, roles):
        if role == rank:
            partial.append(axis)
        elif role >= 0:
            splits[role].append(axis)
    return TensorType(list(zip(dims, splits)), draw(st.sampled_from([bf16, f32])), partial)


@settings(max_examples=200, deadline=None)
@given(layouts())
def test_tensor_type_text_round_trips(ty):
    text = str(ty)
    assert parse_type(text) == ty
    assert str(parse_type(text)) == text


def test_tensor_type_reads_like_stage_notation():
    ty = parse_type("!stg.tensor<[B/dp, S/sp, H] @tp, bf16>")
    assert ty.shape == (Expr.sym("B"), Expr.sym("S"), Expr.sym("H"))
    assert ty.splits == (("dp",), ("sp",), ())
    assert ty.partial_axes == {"tp"}
    assert ty.local_shape() == (Expr.parse("B/dp"), Expr.parse("S/sp"), Expr.sym("H"))
    assert ty.local_bytes() == Expr.parse("2*B*S*H/(dp*sp)")


def test_partial_axes_are_a_set():
    assert parse_type("!stg.tensor<[B] @tp*dp, f32>") == parse_type("!stg.tensor<[B] @dp*tp, f32>")
    assert str(parse_type("!stg.tensor<[B] @tp*dp, f32>")) == "!stg.tensor<[B] @dp*tp, f32>"


def test_sizes_compare_by_value():
    assert parse_type("!stg.tensor<[(H/N)*N], f32>") == parse_type("!stg.tensor<[H], f32>")


# -- collective layout rules: exhaustive on one shape ------------------------------------


@settings(max_examples=200, deadline=None)
@given(layouts(), st.data())
def test_gathering_a_minor_axis_and_scattering_it_back_agree(ty, data):
    split_dims = [i for i, s in enumerate(ty.splits) if s]
    if not split_dims:
        return
    d = data.draw(st.sampled_from(split_dims))
    axis = ty.splits[d][-1]
    gathered = ty.with_layout([s[:-1] if i == d else s for i, s in enumerate(ty.splits)])
    check_all_gather("all_gather", ty, gathered, (axis,))
    # reduce_scatter is all_gather's dual: from a partial sum over the axis back to ty.
    partial = gathered.with_layout(partial=ty.partial_axes | {axis})
    check_reduce_scatter("reduce_scatter", partial, ty, (axis,))
    # Gathering a major axis is not an all_gather: the shards would be interleaved.
    if len(ty.splits[d]) > 1:
        major = ty.splits[d][0]
        wrong = ty.with_layout([s[1:] if i == d else s for i, s in enumerate(ty.splits)])
        with pytest.raises(VerifyException):
            check_all_gather("all_gather", ty, wrong, (major,))


def test_all_to_all_moves_an_axis_between_dims():
    src = parse_type("!stg.tensor<[B/dp, S, H] @tp, bf16>")
    dst = parse_type("!stg.tensor<[B, S/dp, H] @tp, bf16>")
    check_all_to_all("all_to_all", src, dst, ("dp",))
    with pytest.raises(VerifyException, match="must move exactly those axes"):
        check_all_to_all("all_to_all", src, src, ("dp",))


# -- mesh rank order ---------------------------------------------------------------------


def test_mesh_numbers_ranks_row_major_last_axis_fastest():
    mesh = stg.MeshOp("m", {"dp": 2, "pp": 2, "tp": 4})
    assert mesh.rank_of((1, 0, 3)) == (1 * 2 + 0) * 4 + 3
    assert all(mesh.rank_of(mesh.coords_of(r)) == r for r in range(16))
    assert mesh.group_of(5, ["tp"]) == [4, 5, 6, 7]
    assert mesh.group_of(5, ["dp"]) == [5, 13]
    assert mesh.group_of(0, ["dp", "pp"]) == [0, 4, 8, 12]


def test_symbolic_mesh_sizes_bind_at_instantiation():
    mesh = stg.MeshOp("m", ["dp", "tp"])
    assert mesh.axis_sizes == {"dp": Expr.sym("dp"), "tp": Expr.sym("tp")}
    assert mesh.group_of(3, ["dp"], {"dp": 2, "tp": 2}) == [1, 3]


# -- costs -------------------------------------------------------------------------------

MLP = """
stg.mesh @m [dp, tp]
func.func @f() {
  %x = stg.input "x" : !stg.tensor<[B/dp, S, H], bf16>
  %w = stg.param "w" : !stg.tensor<[H, F/tp], bf16>
  %h = stg.einsum "bsh,hf->bsf" %x, %w : !stg.tensor<[B/dp, S, H], bf16>, !stg.tensor<[H, F/tp], bf16> -> !stg.tensor<[B/dp, S, F/tp], bf16>
  %q = stg.input "q" : !stg.tensor<[B/dp, S, N/tp, D], bf16>
  %k = stg.input "k" : !stg.tensor<[B/dp, S, KV/tp, D], bf16>
  %o = stg.attention %q, %k, %k heads N kv_heads KV causal : !stg.tensor<[B/dp, S, N/tp, D], bf16>, !stg.tensor<[B/dp, S, KV/tp, D], bf16>, !stg.tensor<[B/dp, S, KV/tp, D], bf16> -> !stg.tensor<[B/dp, S, N/tp, D], bf16>
  %g = stg.all_gather %h on @m [tp] : !stg.tensor<[B/dp, S, F/tp], bf16> -> !stg.tensor<[B/dp, S, F], bf16>
  %r = stg.repeat L carry(%c = %h : !stg.tensor<[B/dp, S, F/tp], bf16>) {
    %c2 = stg.elementwise gelu %c : !stg.tensor<[B/dp, S, F/tp], bf16> -> !stg.tensor<[B/dp, S, F/tp], bf16>
    stg.yield %c2 : !stg.tensor<[B/dp, S, F/tp], bf16>
  }
  func.return
}
"""


def ops_by_name(module: ModuleOp) -> dict:
    return {op.name: op for op in module.walk()}


def test_per_rank_costs_match_hand_derivation():
    ops = ops_by_name(parse_module(MLP))
    # GEMM: 2 * (B/dp) * S * H * (F/tp)
    assert ops["stg.einsum"].flops() == Expr.parse("2*B*S*H*F/(dp*tp)")
    # reads x and w, writes h, 2 bytes each
    assert ops["stg.einsum"].bytes_moved() == Expr.parse(
        "2*(B*S*H/dp + H*F/tp + B*S*F/(dp*tp))"
    )
    # Q K^T and P V, 2*S*S*D each per (batch, head), half of it under the causal mask
    assert ops["stg.attention"].flops() == Expr.parse("2*B*S*S*D*N/(dp*tp)")
    # Chakra comm_size of an all-gather is the local shard
    assert ops["stg.all_gather"].bytes_moved() == Expr.parse("2*B*S*F/(dp*tp)")


def test_region_cost_multiplies_repeated_bodies():
    from stagec.dialects.stg.cost import region_cost

    module = parse_module(MLP)
    func_op = next(op for op in module.ops if op.name == "func.func")
    flops, _ = region_cost(func_op.body.block.ops)
    gelu = Expr.parse("8*B*S*F/(dp*tp)")
    expected = Expr.parse("2*B*S*H*F/(dp*tp)") + Expr.parse("2*B*S*S*D*N/(dp*tp)") + gelu * Expr.sym("L")
    assert flops == expected


def test_region_cost_counts_a_vjp_once_not_its_body_again():
    from xdsl.parser import Parser

    from stagec.dialects import make_context
    from stagec.dialects.stg.cost import region_cost

    text = """
    func.func @f(%x: !stg.tensor<[B, H], f32>, %w: !stg.tensor<[H, F], f32>, %dy: !stg.tensor<[B, F], f32>) {
      %dx, %dw = stg.vjp(%x, %w) wrt [0, 1] cotangents(%dy : !stg.tensor<[B, F], f32>) {
      ^bb0(%a: !stg.tensor<[B, H], f32>, %b: !stg.tensor<[H, F], f32>):
        %y = stg.einsum "bh,hf->bf" %a, %b : !stg.tensor<[B, H], f32>, !stg.tensor<[H, F], f32> -> !stg.tensor<[B, F], f32>
        stg.yield %y : !stg.tensor<[B, F], f32>
      } : (!stg.tensor<[B, H], f32>, !stg.tensor<[H, F], f32>) -> (!stg.tensor<[B, H], f32>, !stg.tensor<[H, F], f32>)
      func.return
    }
    """
    module = Parser(make_context(), text).parse_module()
    flops, _ = region_cost(module.ops)
    # the two gradient products of a 2*B*H*F einsum, nothing for the body's forward
    assert flops.evaluate({"B": 3, "H": 5, "F": 7}) == 2 * (2 * 3 * 5 * 7)
