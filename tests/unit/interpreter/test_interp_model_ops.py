"""Model ops against independent torch references: SDPA, F.embedding, F.cross_entropy,
a Python loop for the SSM scan, and a token-by-token loop for MoE routing."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tests.unit.interpreter.interp_testing import close, interpreter, rand, randint, run, t

# -- attention ---------------------------------------------------------------------------


def _attention_ir(heads: str, kv_heads: str, causal: bool, v_dim: str = "D", mesh: str = "",
                  q: str = "B, S, N, D", kv: str = "B, S, KV, D") -> str:
    v, out = kv.replace(", D", f", {v_dim}"), q.replace(", D", f", {v_dim}")
    return f"""
    {mesh}
    func.func @f(%q: {t(q)}, %k: {t(kv)}, %v: {t(v)}) -> {t(out)} {{
      %o = stg.attention %q, %k, %v heads {heads} kv_heads {kv_heads} {"causal" if causal else ""} : {t(q)}, {t(kv)}, {t(v)} -> {t(out)}
      func.return %o : {t(out)}
    }}"""


def _sdpa(q, k, v, causal):
    """torch's SDPA on [B, S, N, D] tensors, GQA through enable_gqa."""
    out = F.scaled_dot_product_attention(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=causal, enable_gqa=True
    )
    return out.transpose(1, 2)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize(
    "name, heads, kv_heads, d, e",
    [("mha", 4, 4, 8, 8), ("gqa", 4, 2, 8, 8), ("mqa", 4, 1, 8, 8), ("mla", 4, 4, 8, 6)],
)
def test_attention_matches_sdpa(name, heads, kv_heads, d, e, causal):
    b, s = 2, 5
    q, k, v = rand(b, s, heads, d, seed=1), rand(b, s, kv_heads, d, seed=2), rand(b, s, kv_heads, e, seed=3)
    ir = _attention_ir("N", "KV", causal, v_dim="E")
    (o,) = run(ir, q, k, v, B=b, S=s, N=heads, KV=kv_heads, D=d, E=e)
    close(o, _sdpa(q, k, v, causal))


def test_gqa_against_repeat_interleave():
    b, s, n, kv, d = 1, 4, 6, 2, 4
    q, k, v = rand(b, s, n, d, seed=4), rand(b, s, kv, d, seed=5), rand(b, s, kv, d, seed=6)
    ir = _attention_ir("6", "2", True, q="B, S, 6, D", kv="B, S, 2, D")
    (o,) = run(ir, q, k, v, B=b, S=s, D=d)
    kr, vr = k.repeat_interleave(n // kv, dim=2), v.repeat_interleave(n // kv, dim=2)
    close(o, _sdpa(q, kr, vr, True))


def test_attention_with_split_heads_and_split_query_sequence():
    """Heads over tp, queries over sp: causal masking must offset each sp block."""
    b, s, n, kv, d = 2, 4, 4, 2, 4
    q, k, v = rand(b, s, n, d, seed=1), rand(b, s, kv, d, seed=2), rand(b, s, kv, d, seed=3)
    ir = _attention_ir("N", "KV", True, mesh="stg.mesh @m [sp = 2, tp = 2]",
                       q="B, S/sp, N/tp, D", kv="B, S, KV/tp, D")
    (o,) = run(ir, q, k, v, B=b, S=s, N=n, KV=kv, D=d)
    close(o, _sdpa(q, k, v, True))


@pytest.mark.parametrize(
    "name, n, kv, mesh, q_layout, kv_layout",
    [
        # tp = 4 over 2 kv heads: stg-shard's tp_kv x tp_q, one whole kv head per rank
        ("tp_kv x tp_q", 4, 2, "[tp_kv = 2, tp_q = 2]", "N/tp_kv/tp_q", "KV/tp_kv"),
        # MQA: the single kv head on every rank
        ("mqa", 4, 1, "[tp_q = 4]", "N/tp_q", "KV"),
        # MHA with the kv heads whole: rank r's query heads 2r, 2r+1 read kv heads 2r, 2r+1
        ("mha, kv whole", 4, 4, "[tp = 2]", "N/tp", "KV"),
        # rank (a, b) holds kv heads 2a, 2a+1 and query heads 4a+2b, 4a+2b+1, which both
        # read kv head 2a+b: the second local kv head when b = 1
        ("gqa, 2 local kv", 8, 4, "[a = 2, b = 2]", "N/a/b", "KV/a"),
    ],
)
def test_attention_with_kv_heads_held_whole_by_several_ranks(name, n, kv, mesh, q_layout, kv_layout):
    """A rank holding a kv head whole but only some of the query heads that read it:
    each local query head reads the kv head its global number says."""
    b, s, d = 2, 4, 4
    q, k, v = rand(b, s, n, d, seed=1), rand(b, s, kv, d, seed=2), rand(b, s, kv, d, seed=3)
    ir = _attention_ir("N", "KV", True, mesh=f"stg.mesh @m {mesh}",
                       q=f"B, S, {q_layout}, D", kv=f"B, S, {kv_layout}, D")
    (o,) = run(ir, q, k, v, B=b, S=s, N=n, KV=kv, D=d)
    close(o, _sdpa(q, k, v, True))


# -- embedding and loss ------------------------------------------------------------------


def test_embedding():
    table, ids = rand(10, 4, seed=1), randint(10, 2, 3, seed=2)
    ir = f"""
    func.func @f(%t: {t("V, H")}, %i: {t("B, S", "i64")}) -> {t("B, S, H")} {{
      %e = stg.embedding %t, %i : {t("V, H")}, {t("B, S", "i64")} -> {t("B, S, H")}
      func.return %e : {t("B, S, H")}
    }}"""
    (e,) = run(ir, table, ids, V=10, H=4, B=2, S=3)
    close(e, F.embedding(ids, table))


def test_embedding_with_a_vocab_split_is_a_partial_sum():
    """Megatron's vocab-parallel embedding: each rank fills its own rows, zeros elsewhere,
    and the all_reduce over tp gives every rank the full lookup."""
    table, ids = rand(8, 3, seed=1), randint(8, 2, 5, seed=2)
    ir = f"""
    stg.mesh @m [tp = 2]
    func.func @f(%t: {t("V/tp, H")}, %i: {t("B, S", "i32")}) -> ({t("B, S, H", partial="tp")}, {t("B, S, H")}) {{
      %e = stg.embedding %t, %i : {t("V/tp, H")}, {t("B, S", "i32")} -> {t("B, S, H", partial="tp")}
      %r = stg.all_reduce %e on @m [tp] : {t("B, S, H", partial="tp")} -> {t("B, S, H")}
      func.return %e, %r : {t("B, S, H", partial="tp")}, {t("B, S, H")}
    }}"""
    interp = interpreter(ir, V=8, H=3, B=2, S=5)
    e, r = interp.run("f", None, [table, ids.int()])
    close(e, F.embedding(ids, table))
    close(r, F.embedding(ids, table))
    partial, _ = interp.run_per_rank("f", None, [table, ids.int()])
    mine = (ids < 4).unsqueeze(-1)
    close(partial[0], torch.where(mine, F.embedding(ids, table), torch.zeros(())))
    close(partial[1], torch.where(~mine, F.embedding(ids, table), torch.zeros(())))


def test_cross_entropy_is_the_mean_token_loss():
    logits, labels = rand(2, 3, 7, seed=1), randint(7, 2, 3, seed=2)
    ir = f"""
    func.func @f(%l: {t("B, S, V")}, %y: {t("B, S", "i64")}) -> {t("")} {{
      %loss = stg.cross_entropy %l, %y : {t("B, S, V")}, {t("B, S", "i64")} -> {t("")}
      func.return %loss : {t("")}
    }}"""
    (loss,) = run(ir, logits, labels, B=2, S=3, V=7)
    close(loss, F.cross_entropy(logits.reshape(-1, 7), labels.reshape(-1)))


def test_cross_entropy_over_split_tokens_sums_to_the_global_mean():
    logits, labels = rand(4, 6, 5, seed=1), randint(5, 4, 6, seed=2)
    ir = f"""
    stg.mesh @m [dp = 2, sp = 3]
    func.func @f(%l: {t("B/dp, S/sp, V")}, %y: {t("B/dp, S/sp", "i64")}) -> {t("", partial="dp*sp")} {{
      %loss = stg.cross_entropy %l, %y : {t("B/dp, S/sp, V")}, {t("B/dp, S/sp", "i64")} -> {t("", partial="dp*sp")}
      func.return %loss : {t("", partial="dp*sp")}
    }}"""
    (loss,) = run(ir, logits, labels, B=4, S=6, V=5)
    close(loss, F.cross_entropy(logits.reshape(-1, 5), labels.reshape(-1)))


# -- SSM scan ----------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1])
def test_ssm_scan_matches_a_python_loop(dim):
    decay, x = rand(3, 5, 2, seed=1).sigmoid(), rand(3, 5, 2, seed=2)
    ir = f"""
    func.func @f(%a: {t("3, 5, 2")}, %x: {t("3, 5, 2")}) -> {t("3, 5, 2")} {{
      %h = stg.ssm_scan %a, %x dim {dim} : {t("3, 5, 2")}, {t("3, 5, 2")} -> {t("3, 5, 2")}
      func.return %h : {t("3, 5, 2")}
    }}"""
    (h,) = run(ir, decay, x)
    expected = torch.zeros_like(x)
    for index in torch.cartesian_prod(*[torch.arange(n) for n in x.shape]):
        index = tuple(index.tolist())
        previous = list(index)
        previous[dim] -= 1
        before = expected[tuple(previous)] if index[dim] > 0 else 0.0
        expected[index] = decay[index] * before + x[index]
    close(h, expected)


# -- MoE ---------------------------------------------------------------------------------


def _reference_routing(scores, top_k, capacity):
    """Token by token: the k best experts (ties to the lower index), the next free slot."""
    routes, used = [], [0] * scores.shape[1]
    for token in range(scores.shape[0]):
        ranked = sorted(range(scores.shape[1]), key=lambda e: (-scores[token, e].item(), e))[:top_k]
        for expert in ranked:
            routes.append((token, expert, used[expert], ranked))
            used[expert] += 1
    return [(tok, e, slot, ranked) for tok, e, slot, ranked in routes if slot < capacity]


def _moe_ir(top_k: int, normalize: bool) -> str:
    return f"""
    func.func @f(%x: {t("T, H")}, %s: {t("T, E")}) -> ({t("E, C, H")}, {t("T, H")}) {{
      %d = stg.moe_dispatch %x, %s top_k {top_k} : {t("T, H")}, {t("T, E")} -> {t("E, C, H")}
      %y = stg.elementwise tanh %d : {t("E, C, H")} -> {t("E, C, H")}
      %c = stg.moe_combine %y, %s top_k {top_k} {"normalize" if normalize else ""} : {t("E, C, H")}, {t("T, E")} -> {t("T, H")}
      func.return %d, %c : {t("E, C, H")}, {t("T, H")}
    }}"""


@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("capacity", [2, 8])  # 2 drops tokens, 8 keeps every one
def test_moe_dispatch_and_combine_match_a_loop(capacity, normalize):
    tokens, experts, hidden, top_k = 8, 4, 3, 2
    x, scores = rand(tokens, hidden, seed=1), rand(tokens, experts, seed=2).softmax(-1)
    d, c = run(_moe_ir(top_k, normalize), x, scores, T=tokens, E=experts, C=capacity, H=hidden)
    routes = _reference_routing(scores, top_k, capacity)
    if capacity == 2:
        assert len(routes) < tokens * top_k  # some tokens were dropped
    buffers = torch.zeros(experts, capacity, hidden, dtype=torch.float64)
    for token, expert, slot, _ in routes:
        buffers[expert, slot] = x[token]
    close(d, buffers)
    combined = torch.zeros(tokens, hidden, dtype=torch.float64)
    for token, expert, slot, ranked in routes:
        weight = scores[token, expert]
        if normalize:
            weight = weight / sum(scores[token, e] for e in ranked)
        combined[token] += weight * torch.tanh(buffers[expert, slot])
    close(c, combined)


def test_moe_routing_breaks_ties_to_the_lower_expert():
    x = rand(3, 2, seed=1)
    scores = torch.tensor([[0.5, 0.5, 0.5], [0.2, 0.4, 0.4], [0.1, 0.1, 0.8]], dtype=torch.float64)
    d, _ = run(_moe_ir(1, False), x, scores, T=3, E=3, C=3, H=2)
    expected = torch.zeros(3, 3, 2, dtype=torch.float64)
    expected[0, 0], expected[1, 0], expected[2, 0] = x[0], x[1], x[2]
    close(d, expected)
