"""Collective time: the ring alpha-beta formulas of runtime/cost/collectives.py against
hand values, and the communication ops of a program costed on their group's link."""

import pytest
from xdsl.parser import Parser

from stagec.dialects import make_context
from stagec.dialects.stg.cost import CostInterface
from stagec.runtime.cost import CollectiveError, CostModel, Link, comm_micros

# 100 GB/s at full efficiency, 1 us per step: 1 MB takes 10 us of bandwidth time.
LINK = Link("test", bandwidth=100e9, latency_us=1.0, efficiency=1.0)
MB = 1_000_000


@pytest.mark.parametrize(
    ("kind", "n", "micros"),
    [
        # 2(n-1)/n * bytes/bw + 2(n-1) alpha = 2*3/4*10 + 6
        ("all_reduce", 4, 21.0),
        # (n-1)/n * bytes/bw + (n-1) alpha = 3/4*10 + 3
        ("reduce_scatter", 4, 10.5),
        # (n-1) * shard/bw + (n-1) alpha = 3*10 + 3 (1 MB is the shard)
        ("all_gather", 4, 33.0),
        # pairwise exchange: (n-1)/n * bytes/bw + (n-1) alpha
        ("all_to_all", 4, 10.5),
        # pipelined ring: bytes/bw + (n-1) alpha
        ("broadcast", 4, 13.0),
        ("send", 2, 11.0),
        ("recv", 2, 11.0),
        # 8 ranks: 2*7/8*10 + 14
        ("all_reduce", 8, 31.5),
        # one rank moves nothing
        ("all_reduce", 1, 0.0),
        ("all_gather", 1, 0.0),
    ],
)
def test_ring_formulas(kind, n, micros):
    assert comm_micros(kind, MB, n, LINK) == pytest.approx(micros)
    assert comm_micros(f"stg.{kind}", MB, n, LINK) == pytest.approx(micros)


def test_efficiency_scales_the_bandwidth_term_only():
    half = Link("half", bandwidth=100e9, latency_us=1.0, efficiency=0.5)
    assert comm_micros("all_reduce", MB, 4, half) == pytest.approx(2 * 3 / 4 * 20 + 6)


def test_bad_collectives_are_refused():
    with pytest.raises(CollectiveError, match="unknown collective 'gather'.*all_reduce"):
        comm_micros("gather", MB, 4, LINK)
    with pytest.raises(CollectiveError, match="at least 1 rank"):
        comm_micros("all_reduce", MB, 0, LINK)


# -- communication ops in a program -------------------------------------------------------

P = "!stg.tensor<[M, N] @tp, bf16>"
R = "!stg.tensor<[M, N], bf16>"
G = "!stg.tensor<[M/dp, N], bf16>"
MODULE = f"""
builtin.module {{
  stg.mesh @m [dp, tp]
  func.func @f(%p : {P}, %g : {G}, %x : {R}) {{
    %r = stg.all_reduce %p on @m [tp] : {P} -> {R}
    %a = stg.all_gather %g on @m [dp] : {G} -> {R}
    %s = stg.local_slice %x on @m [dp] : {R} -> {G}
    %h = stg.offload %x : {R} -> !stg.host<[M, N], bf16>
    func.return
  }}
}}
"""
N = 4096
BINDINGS = {"M": N, "N": N, "dp": 4, "tp": 8}


@pytest.fixture(scope="module")
def comm_ops():
    module = Parser(make_context(), MODULE).parse_module()
    module.verify()
    return [op for op in module.walk() if isinstance(op, CostInterface)]


def test_tp_all_reduce_runs_on_nvlink(comm_ops):
    model = CostModel("h100-sxm")
    cost = model.op_cost(comm_ops[0], BINDINGS)
    size = N * N * 2  # the local [M, N] bf16 buffer, Chakra's comm_size
    # tp is the innermost axis: 8 ranks, one node. NVLink 450 GB/s x 0.8, 2.5 us a step.
    micros = 2 * 7 / 8 * size / 360e9 * 1e6 + 2 * 7 * 2.5
    assert micros == pytest.approx(198.11, abs=0.01)
    assert (cost.num_ops, cost.tensor_size, cost.source) == (0, size, "alpha_beta")
    assert cost.micros == pytest.approx(micros)


def test_dp_all_gather_crosses_nodes(comm_ops):
    model = CostModel("h100-sxm")
    cost = model.op_cost(comm_ops[1], BINDINGS)
    shard = N // 4 * N * 2
    # a dp group strides over tp = 8 ranks: 4 nodes. NDR 50 GB/s x 0.9, 6.6 us a step.
    assert cost.tensor_size == shard
    assert cost.micros == pytest.approx(3 * shard / 45e9 * 1e6 + 3 * 6.6)
    # with tp = 1 the four dp ranks share a node
    inside = model.op_cost(comm_ops[1], {**BINDINGS, "tp": 1})
    assert inside.micros == pytest.approx(3 * shard / 360e9 * 1e6 + 3 * 2.5)


def test_local_slice_is_free_and_offload_uses_the_host_link(comm_ops):
    model = CostModel("h100-sxm")
    assert model.op_cost(comm_ops[2], BINDINGS).micros == 0.0
    offload = model.op_cost(comm_ops[3], BINDINGS)
    # PCIe Gen5 x16: 64 GB/s x 0.8, 10 us
    assert offload.micros == pytest.approx(10 + N * N * 2 / 51.2e9 * 1e6)
    assert offload.source == "alpha_beta"


def test_link_for_group():
    hw = CostModel("a100-80gb").hardware
    assert hw.link_for_group(8) is hw.intra_node
    assert hw.link_for_group(16) is hw.inter_node
    assert hw.link_for_group(4, within_node=False) is hw.inter_node
