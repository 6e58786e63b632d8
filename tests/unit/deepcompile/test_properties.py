"""Properties of stg-fully-shard + stg-schedule + stg-prefetch over random small
fsdp programs (hypothesis): every gathered buffer is released once, after its last
use, and never used after; every use of a gathered buffer follows its wait (the IR
verifies, SSA dominance); each parameter is gathered once per graph; and for any
limit M at or above the unprefetched peak, the memory analysis's peak after prefetch
stays under M."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.parser import Parser

from stagec.dialects import make_context
from stagec.dialects.stg.comm import AllGatherOp
from stagec.dialects.stg.memory import ReleaseOp, WaitOp
from stagec.dialects.stg.schedule import GroupOp
from stagec.passes.stg_fully_shard import fully_shard
from stagec.passes.stg_prefetch import StgPrefetch, prefetch
from stagec.passes.stg_schedule import schedule_streams
from stagec.runtime.cost.profiling import ProfiledProgram

T = "!stg.tensor<[8, 64], bf16>"


def _gather(name: str, rows: int, cols: int, out: list[str], n: list[int]) -> str:
    n[0] += 1
    shard = f"!stg.tensor<[{rows}/fsdp, {cols}], bf16>"
    full = f"!stg.tensor<[{rows}, {cols}], bf16>"
    out.append(f'  %p{n[0]} = stg.param "{name}" : {shard}')
    out.append(f"  %g{n[0]} = stg.all_gather %p{n[0]} on @m [fsdp] : {shard} -> {full}")
    return f"%g{n[0]}"


layer = st.tuples(st.booleans(), st.booleans(), st.integers(0, 3))  # (wide mlp, reuse, extra ops)


def program(layers) -> str:
    lines, n, value = [], [0], "%x"
    for k, (wide, reuse, extra) in enumerate(layers):
        if wide:
            up = _gather(f"up{k}", 64, 128, lines, n)
            n[0] += 1
            lines.append(f'  %a{n[0]} = stg.einsum "bh,hf->bf" {value}, {up} : {T}, !stg.tensor<[64, 128], bf16> '
                         f"-> !stg.tensor<[8, 128], bf16>")
            hidden = f"%a{n[0]}"
            down = _gather(f"down{k}", 128, 64, lines, n)
            n[0] += 1
            lines.append(f'  %a{n[0]} = stg.einsum "bf,fh->bh" {hidden}, {down} : !stg.tensor<[8, 128], bf16>, '
                         f"!stg.tensor<[128, 64], bf16> -> {T}")
            value = f"%a{n[0]}"
        else:
            w = _gather(f"w{k}", 64, 64, lines, n)
            n[0] += 1
            lines.append(f'  %a{n[0]} = stg.einsum "bh,hf->bf" {value}, {w} : {T}, !stg.tensor<[64, 64], bf16> -> {T}')
            value = f"%a{n[0]}"
            if reuse:  # the same weight again, gathered again by stg-shard's rule
                again = _gather(f"w{k}", 64, 64, lines, n)
                n[0] += 1
                lines.append(f'  %a{n[0]} = stg.einsum "bh,hf->bf" {value}, {again} : {T}, '
                             f"!stg.tensor<[64, 64], bf16> -> {T}")
                value = f"%a{n[0]}"
        for _ in range(extra):
            n[0] += 1
            lines.append(f"  %a{n[0]} = stg.elementwise silu {value} : {T} -> {T}")
            value = f"%a{n[0]}"
    body = "\n".join(lines)
    return f"stg.mesh @m [fsdp = 2]\nfunc.func @step(%x: {T}) -> {T} {{\n{body}\n  func.return {value} : {T}\n}}\n"


def _check_releases(module) -> None:
    block = next(op for op in module.walk() if op.name == "func.func").body.block
    ops = list(block.ops)
    index = {id(op): i for i, op in enumerate(ops)}
    buffers = [op.result for op in ops if isinstance(op, WaitOp)]
    for buffer in buffers:
        releases = [u.operation for u in buffer.uses if isinstance(u.operation, ReleaseOp)]
        assert len(releases) == 1, "every gathered buffer is released once"
        users = [u.operation for u in buffer.uses if not isinstance(u.operation, ReleaseOp)]
        assert users and max(index[id(u)] for u in users) == index[id(releases[0])] - 1, \
            "released right after its last use, never used after"


@settings(max_examples=40, deadline=None)
@given(st.lists(layer, min_size=1, max_size=5), st.floats(0.0, 1.0), st.sampled_from([0, 8192, 16384, 65536]),
       st.sampled_from([1.0, 1.5, 3.0]))
def test_prefetch_properties(layers, headroom, group_limit, alpha):
    module = Parser(make_context(), program(layers)).parse_module()
    fully_shard(module)
    names = [op.input.owner.tensor_name.data for op in module.walk() if isinstance(op, AllGatherOp)]
    assert len(names) == len(set(names)), "each parameter gathered once in the graph"
    schedule_streams(module)
    peak = ProfiledProgram(module, {}).memory.peak_bytes
    gathered = sum(16384 if wide else 8192 for wide, _, _ in layers) + 16384 * sum(w for w, _, _ in layers)
    limit = int(peak + 1 + headroom * gathered)  # from no headroom to room for every buffer
    prefetch(module, StgPrefetch(memory_limit=limit, prefetch_limit=group_limit, alpha=alpha))
    module.verify()  # every use of a gathered buffer is dominated by its wait
    _check_releases(module)
    assert ProfiledProgram(module, {}).memory.peak_bytes < limit
    # every member of a fused group still has its own wait
    for group in (op for op in module.walk() if isinstance(op, GroupOp)):
        assert all(len(list(r.uses)) == 1 and isinstance(next(iter(r.uses)).operation, WaitOp) for r in group.outputs)
