"""Accounting of a hand-written mixed-precision training step, checked against numbers
derived here by hand (hand_train_step.mlir: embedding, 2 layers of x + attention(x W),
lm head, cross-entropy; reverse backward repeat; AdamW on fp32 master weights).

Bindings: B=2, S=4 (bound here), H=8, N=2, V=16, L=2 (the module's stg.config), so
D = H/N = 4, tokens B*S = 8, and one [B, S, H] bf16 activation is 64 elements, 128 bytes.
"""

from pathlib import Path

import pytest
from xdsl.parser import Parser

from stagec.dialects import make_context
from stagec.passes.analysis.accounting import FlopCounts, account

HERE = Path(__file__).parent
B, S, H, N, V, L = 2, 4, 8, 2, 16, 2
D = H // N
T = B * S  # tokens


def parse(text: str):
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


@pytest.fixture(scope="module")
def result():
    return account(parse((HERE / "hand_train_step.mlir").read_text()), {"B": B, "S": S})


@pytest.fixture(scope="module")
def rank(result):
    return result.rank_classes[0]


def test_parameters(result, rank):
    # embed [V, H] + lm_head [V, H] + layers.w [H, H] read inside `repeat L`: L tensors
    params = V * H + V * H + L * H * H
    assert params == 384
    assert result.params == rank.params == params
    assert rank.ranks == (0,)  # no mesh: one rank
    assert result.tokens == T


def test_forward_flops(rank):
    # per layer: x W is an einsum over b,s,h,k: 2*B*S*H*H; causal attention
    # b*n*s*t*(d+e) = B*N*S*S*2D (QK^T and PV, halved); the residual add B*S*H.
    # Then the lm head einsum 2*B*S*H*V and cross-entropy 4 per logit + 2 per token.
    gemm = L * 2 * B * S * H * H + 2 * B * S * H * V
    attention = L * B * N * S * S * 2 * D
    elementwise = L * B * S * H + (4 * B * S * V + 2 * B * S)
    assert (gemm, attention, elementwise) == (4096, 1024, 656)
    assert rank.flops_by_phase["forward"] == FlopCounts(gemm, attention, elementwise, 0)


def test_backward_flops(rank):
    # loss vjp: twice the cross-entropy's 528; two lm-head gradient einsums (dW, dX);
    # per layer: attention vjp 5/2 x forward (flash attention recomputes QK^T),
    # dq+dk+dv (2 adds of B*S*N*D), dW and dX einsums, the fp32 grad accumulation
    # (H*H) and the residual add; the lm-head and embedding grads accumulate V*H each;
    # the embedding's vjp scatter-adds one row per token (B*S*H, category other).
    gemm = 2 * (2 * B * S * V * H) + L * 2 * (2 * B * S * H * H)
    attention = L * (B * N * S * S * 2 * D) * 5 // 2
    elementwise = 2 * 528 + V * H + L * (2 * B * S * H + H * H + B * S * H) + V * H
    other = B * S * H
    assert (gemm, attention, elementwise, other) == (8192, 2560, 1824, 64)
    assert rank.flops_by_phase["backward"] == FlopCounts(gemm, attention, elementwise, other)


def test_optimizer_and_total_flops(rank):
    # AdamW: 14 FLOPs per element of each parameter (casts and fills cost none)
    adam = 14 * (V * H + L * H * H + V * H)
    assert rank.flops_by_phase["optimizer"] == FlopCounts(0, 0, adam, 0)
    assert rank.flops == FlopCounts(4096 + 8192, 1024 + 2560, 656 + 1824 + adam, 64)
    assert rank.flops.total == 12288 + 3584 + 7856 + 64
    # the dense-model rule of thumb holds for the GeMMs: 6 x matmul params x tokens
    assert rank.flops.gemm == 6 * (L * H * H + V * H) * T


def test_persistent_states(rank):
    mem = rank.memory
    bf16, f32 = 2, 4
    weights = bf16 * (V * H + V * H + L * H * H)
    grads = f32 * (V * H + V * H + L * H * H)
    # master, exp_avg, exp_avg_sq (fp32, parameter-sized) and a scalar fp32 step, per
    # parameter tensor: 2 tables, L layer weights
    optimizer = 3 * f32 * (V * H + V * H + L * H * H) + f32 * (2 + L)
    assert (weights, grads, optimizer) == (768, 1536, 4624)
    assert mem.persistent == {
        "weights": weights, "gradients": grads, "optimizer_states": optimizer, "activations": 0, "communication": 0
    }
    states = {(st.state, st.param): st for st in mem.states}
    assert len(states) == 3 + 3 * 5  # 3 parameters, each with 5 states
    assert states[("step", "model.layers.w")].multiplicity == L
    assert states[("step", "model.layers.w")].bytes == L * f32


# The schedule, position by position (layer bodies unrolled; `stg.param` reads are
# positions too). Forward: 0 input_ids, 1 labels, 2 param, 3 embedding x0, layer i at
# 4+6i: param, einsum h, reshape q, attention o, reshape, add y; 16 param, 17 logits,
# 18 loss. Backward: 19 fill, 20 vjp(loss), 21 cast, 22 dW head, 23 grad read,
# 24 add, 25 assign, 26 param, 27 dX; reverse layer j at 28+12j: param, reshape,
# vjp(attention) -> dq dk dv, add, add, reshape, dW, grad read, add, assign, dX, add;
# 52 param, 53 vjp(embedding), 54 cast, 55 grad read, 56 add, 57 assign; optimizer
# 58..113 (14 ops per parameter tensor, no transient: every result is assigned).
#
# Transient lifetimes in bytes [first, last]:
#   input_ids 64 [0, 53] (the embedding's vjp)   labels 64 [1, 20] (the loss vjp)
#   x0 128 [3, 46]: layer 0's input, saved, scanned by backward iteration 1 (layer 0)
#   h0 128 [5, 42]: saved as q (reshape is a view), used by the attention vjp of layer 0
#   o0 128 [7, 9]   y0 128 [9, 34] (layer 1's input, saved)   h1 128 [11, 30]
#   o1 128 [13, 15]   y1 128 [15, 22] (the final hidden, used by dW head)
#   logits 512 (f32) [17, 20]   loss 4 [18, 113] (returned)   one 4 [19, 20]
#   dlogits 512 [20, 21]   dl16 256 [21, 27]   dW head 512 [22, 24]   dX 128 [27, 39]
#   reverse iteration 0: dq, dk 128 [30, 31], dv 128 [30, 32], s1 [31, 32],
#     dqkv 128 [32, 38], dW 256 [34, 36], dXa 128 [38, 39], dXn 128 [39, 51]
#   reverse iteration 1: the same shifted by 12, dXn 128 [51, 53]
#   demb 256 [53, 56]: the cast at 54 feeds only the add assigned to the grad state,
#   an accumulation the runtime does in one mixed-dtype kernel (liveness
#   is_accumulating_cast): no fp32 buffer, and demb lives until the add
ACTIVATIONS_AT = {
    0: 64,
    4: 64 + 64 + 128,  # the stack of saved inputs starts with x0
    9: 64 + 64 + 128 * 4,  # x0, h0, o0, y0
    10: 64 + 64 + 128 * 3,  # next layer: o0 freed, x0 and h0 kept as saved slices
    17: 64 + 64 + 128 * 5 + 512,  # x0 h0 y0 h1 y1 and the logits
    20: 64 + 64 + 128 * 5 + 512 + 4 + 4 + 512,  # the loss vjp: logits and dlogits
    21: 64 + 128 * 5 + 4 + 512 + 256,
    30: 64 + 128 * 4 + 4 + 128 + 3 * 128,  # layer 1's backward: dq dk dv
    40: 64 + 128 * 2 + 4 + 128,  # layer 1's saved slices freed: x0, h0, loss, dXn
    54: 4 + 256,
    56: 4 + 256,
    113: 4,
}


def test_timeline_positions(rank):
    timeline = rank.memory.timeline
    assert len(timeline) == 58 + 3 * 14 + (L - 1) * 14
    for position, activations in ACTIVATIONS_AT.items():
        assert timeline[position].bytes["activations"] == activations, position
    assert timeline[20].op == "stg.vjp" and timeline[20].phase == "backward"
    assert timeline[17].op == "stg.einsum" and timeline[17].phase == "forward"
    assert timeline[113].phase == "optimizer"
    # persistent states are live everywhere
    assert all(e.bytes["optimizer_states"] == 4624 for e in timeline.entries())


def test_peak(rank):
    mem = rank.memory
    # the loss vjp holds the fp32 logits and their gradient at once: 1800 bytes of
    # activations over 6928 of persistent states
    assert mem.peak_bytes == 768 + 1536 + 4624 + 1800 == 8728
    assert mem.breakdown == {
        "weights": 768, "gradients": 1536, "optimizer_states": 4624, "activations": 1800, "communication": 0
    }
    assert (mem.peak_position, mem.peak_op, mem.peak_phase) == (20, "stg.vjp", "backward")
    assert mem.peak_loops == ()
    assert mem.peak_location == "stg.vjp (position 20, backward phase)"
    assert int(mem.timeline.totals().max()) == mem.peak_bytes


def test_json(result):
    doc = result.to_json()
    (rc,) = doc["rank_classes"]
    assert doc["model"] == "hand-step"
    assert rc["params"] == 384
    assert rc["flops"] == {"gemm": 12288, "attention": 3584, "elementwise": 7856, "other": 64, "total": 23792}
    assert rc["flops_per_token"] == 23792 / T
    assert rc["peak_memory_bytes"] == 8728
    assert rc["memory_breakdown_bytes"]["activations"] == 1800
    assert doc["bindings"]["B"] == B and doc["bindings"]["H"] == H


def test_timeline_plot(rank, tmp_path):
    from stagec.passes.analysis.memory import plot_timeline

    for points in (1000, 20):  # whole, and binned to 20 points (each bin's peak)
        path = tmp_path / f"timeline{points}.png"
        plot_timeline(rank.memory.timeline, str(path), "hand step", max_points=points)
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert rank.memory.timeline.phase_spans() == [("forward", 0, 18), ("backward", 19, 57), ("optimizer", 58, 113)]
