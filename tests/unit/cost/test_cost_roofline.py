"""Per-op time on the roofline of a shipped hardware description, checked against
numbers derived here from the datasheet figures in runtime/cost/hardware/h100-sxm.json:
bf16 matmul peak 989.4 TFLOP/s at efficiency 0.75, bf16 vector peak 133.8 TFLOP/s at
0.7, HBM 3.35 TB/s at 0.85.
"""

import pytest
from xdsl.parser import Parser

from stagec.dialects import make_context
from stagec.dialects.stg.cost import CostInterface
from stagec.dialects.stg.training import VjpOp
from stagec.runtime.cost import CostError, CostModel, OpCost, load_hardware, op_dtype

MATMUL_BF16 = 989.4e12 * 0.75
VECTOR_BF16 = 133.8e12 * 0.7
HBM = 3.35e12 * 0.85

N = 4096
T = "!stg.tensor<[M, K], bf16>"
TB = "!stg.tensor<[K, N], bf16>"
TC = "!stg.tensor<[M, N], bf16>"
TH = "!stg.tensor<[M, H], bf16>"

MODULE = f"""
builtin.module {{
  func.func @step(%a : {T}, %b : {TB}, %h : {TH}, %x : {TC}, %f : !stg.tensor<[M, N], f32>, %ct : {TC}) {{
    %c = stg.einsum "mk,kn->mn" %a, %b : {T}, {TB} -> {TC}
    %c2 = stg.einsum "mh,kn->mn" %h, %b : {TH}, {TB} -> {TC}
    %g = stg.elementwise gelu %x : {TC} -> {TC}
    %s = stg.elementwise add %f, %f : !stg.tensor<[M, N], f32>, !stg.tensor<[M, N], f32> -> !stg.tensor<[M, N], f32>
    %da, %db = stg.vjp(%a, %b) wrt [0, 1] cotangents(%ct : {TC}) {{
    ^bb0(%u : {T}, %v : {TB}):
      %e = stg.einsum "mk,kn->mn" %u, %v : {T}, {TB} -> {TC}
      stg.yield %e : {TC}
    }} : ({T}, {TB}) -> ({T}, {TB})
    %r = stg.reshape %x : {TC} -> !stg.tensor<[(M*N)], bf16>
    %t = stg.transpose %x perm [1 : i64, 0 : i64] : {TC} -> !stg.tensor<[N, M], bf16>
    func.return
  }}
}}
"""
BINDINGS = {"M": N, "K": N, "N": N, "H": N // 2}


@pytest.fixture(scope="module")
def ops():
    module = Parser(make_context(), MODULE).parse_module()
    module.verify()
    body = [op for op in module.walk() if isinstance(op, CostInterface) and not isinstance(op.parent_op(), VjpOp)]
    return dict(zip(["einsum", "einsum_half", "gelu", "add_f32", "vjp", "reshape", "transpose"], body, strict=True))


@pytest.fixture(scope="module")
def h100():
    return CostModel(load_hardware("h100-sxm"))


def test_einsum_is_compute_bound_on_the_matmul_peak(ops, h100):
    cost = h100.op_cost(ops["einsum"], BINDINGS)
    flops = 2 * N**3  # a multiply-add per (m, k, n)
    moved = 3 * N * N * 2  # read A and B, write C, bf16
    assert (flops, moved) == (137_438_953_472, 100_663_296)
    # compute 137.4e9 / 742.05e12 = 185.2 us; memory 100.7e6 / 2.8475e12 = 35.4 us
    micros = flops / MATMUL_BF16 * 1e6
    assert micros == pytest.approx(185.215, abs=1e-3)
    assert cost == OpCost(flops, moved, pytest.approx(micros), "roofline")


def test_elementwise_bf16_is_memory_bound(ops, h100):
    cost = h100.op_cost(ops["gelu"], BINDINGS)
    flops = 8 * N * N  # gelu: 8 FLOPs per element (compute.py ELEMENTWISE_FLOPS)
    moved = 2 * N * N * 2  # read x, write y, bf16
    compute = flops / VECTOR_BF16 * 1e6  # 1.43 us on the vector units
    memory = moved / HBM * 1e6  # 23.57 us
    assert compute == pytest.approx(1.433, abs=1e-3) and memory == pytest.approx(23.568, abs=1e-3)
    assert cost == OpCost(flops, moved, pytest.approx(memory), "roofline")


def test_f32_elementwise_uses_f32_bytes_and_vector_rate(ops, h100):
    cost = h100.op_cost(ops["add_f32"], BINDINGS)
    assert op_dtype(ops["add_f32"]) == "f32"
    assert cost.num_ops == N * N and cost.tensor_size == 3 * N * N * 4
    assert cost.micros == pytest.approx(3 * N * N * 4 / HBM * 1e6)


def test_data_movement_costs_its_bytes(ops, h100):
    # a transpose reads and writes every element; a reshape is a view (0 bytes, 0 us)
    cost = h100.op_cost(ops["transpose"], BINDINGS)
    assert cost.num_ops == 0 and cost.tensor_size == 2 * N * N * 2
    assert cost.micros == pytest.approx(cost.tensor_size / HBM * 1e6)
    assert h100.op_cost(ops["reshape"], BINDINGS) == OpCost(0, 0, 0.0, "roofline")


def test_vjp_of_an_einsum_costs_twice_the_forward(ops, h100):
    forward = h100.op_cost(ops["einsum"], BINDINGS)
    vjp = h100.op_cost(ops["vjp"], BINDINGS)
    assert vjp.num_ops == 2 * forward.num_ops  # dA and dB, one product each
    # primals A, B + cotangent + gradients dA, dB: five bf16 [4096, 4096] tensors
    assert vjp.tensor_size == 5 * N * N * 2
    assert vjp.micros == pytest.approx(2 * forward.micros)
    assert vjp.source == "roofline"


def test_shape_changes_the_cost(ops, h100):
    half = h100.op_cost(ops["einsum_half"], BINDINGS)
    assert half.num_ops == 2 * N * (N // 2) * N * N  # "mh,kn->mn": h and k both summed
    assert h100.op_cost(ops["einsum"], {**BINDINGS, "M": 2048}).num_ops == N**3


def test_hardware_changes_the_time(ops):
    a100 = CostModel("a100-80gb").op_cost(ops["einsum"], BINDINGS)
    h200 = CostModel("h200").op_cost(ops["gelu"], BINDINGS)
    # A100: 312 TFLOP/s bf16 at 0.8; H200: 4.8 TB/s at 0.85
    assert a100.micros == pytest.approx(2 * N**3 / (312e12 * 0.8) * 1e6)
    assert h200.micros == pytest.approx(2 * N * N * 2 / (4.8e12 * 0.85) * 1e6)


def test_calls_are_cached_per_op_and_per_bindings(ops, h100):
    first = h100.op_cost(ops["einsum"], BINDINGS)
    assert h100.op_cost(ops["einsum"], dict(BINDINGS)) is first
    assert h100.op_cost(ops["einsum"], {**BINDINGS, "K": 1024}).num_ops == 2 * N * 1024 * N


def test_unbound_size_is_a_clear_error(ops, h100):
    with pytest.raises(CostError, match=r"cannot evaluate the FLOPs of stg.einsum .*unbound symbol"):
        h100.op_cost(ops["einsum"], {"M": N, "N": N})


def test_an_op_without_a_cost_is_refused(ops, h100):
    func_op = ops["einsum"].parent_op()
    with pytest.raises(CostError, match="func.func has no cost"):
        h100.op_cost(func_op, BINDINGS)


def test_tf32_option_moves_f32_matmuls_to_tensor_cores():
    text = """
    builtin.module {
      func.func @f(%a : !stg.tensor<[K, K], f32>) {
        %c = stg.einsum "ij,jk->ik" %a, %a : !stg.tensor<[K, K], f32>, !stg.tensor<[K, K], f32> -> !stg.tensor<[K, K], f32>
        func.return
      }
    }"""
    einsum = next(op for op in Parser(make_context(), text).parse_module().walk() if isinstance(op, CostInterface))
    flops = 2 * N**3
    plain = CostModel("h100-sxm").op_cost(einsum, {"K": N})
    tf32 = CostModel("h100-sxm", tf32=True).op_cost(einsum, {"K": N})
    assert plain.micros == pytest.approx(flops / (66.9e12 * 0.75) * 1e6)  # FP32 CUDA cores
    assert tf32.micros == pytest.approx(flops / (494.7e12 * 0.75) * 1e6)  # TF32 tensor cores


def test_clear_cache_forgets_costs(ops):
    model = CostModel("h100-sxm")
    first = model.op_cost(ops["einsum"], BINDINGS)
    model.clear_cache()
    again = model.op_cost(ops["einsum"], BINDINGS)
    assert again == first and again is not first
